#include "program.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace kv {

namespace {
thread_local std::string failed_allocation;  // set by ~Allocating during a bad_alloc
}

Allocating::Allocating(std::string what)
    : what_(std::move(what)), exceptions_(std::uncaught_exceptions()) {
    failed_allocation.clear();
}

Allocating::~Allocating() {
    // Leaving by an exception: the innermost note (the first destroyed) wins.
    if (std::uncaught_exceptions() > exceptions_ && failed_allocation.empty())
        failed_allocation = what_;
}

std::string Allocating::failed() {
    return std::exchange(failed_allocation, std::string());
}

Progress::Progress(std::string label)
    : Progress(std::move(label), std::cerr, isatty(STDERR_FILENO) == 1, std::chrono::seconds(1)) {}

Progress::Progress(std::string label, std::ostream& out, bool terminal,
                   std::chrono::milliseconds quiet)
    : label_(std::move(label)), out_(out), quiet_(quiet), start_(std::chrono::steady_clock::now()) {
    if (!terminal) return;
    // Started with every signal blocked, which it keeps: a signal goes to
    // the program's own thread, where RunFiles::commit can hold it back.
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &before);
    redraw_ = std::thread([this] {
        std::unique_lock lock(mutex_);
        while (!stop_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stopping_; }))
            show();
    });
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

Progress::~Progress() {
    if (!redraw_.joinable()) return;
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    stop_.notify_one();
    redraw_.join();
    if (width_ > 0) out_ << "\r" << std::string(width_, ' ') << "\r" << std::flush;
}

void Progress::update(long done, long total, const std::string& note) {
    if (!redraw_.joinable()) return;
    const std::lock_guard lock(mutex_);
    const bool new_count = done != done_ || total != total_;
    done_ = done;
    total_ = total;
    note_ = note;
    if (new_count) show();
}

void Progress::show() {
    const auto since = std::chrono::steady_clock::now() - start_;
    if (since < quiet_) return;
    std::string text = label_;
    if (total_ >= 0)
        text.append(" ").append(std::to_string(done_)).append("/").append(std::to_string(total_));
    if (!note_.empty()) text += " " + note_;
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since).count();
    text.append(", ").append(std::to_string(seconds)).append(" s");
    if (text == shown_) return;
    shown_ = text;
    width_ = std::max(width_, text.size());
    out_ << "\r" << text << std::string(width_ - text.size(), ' ') << std::flush;
}

}  // namespace kv
