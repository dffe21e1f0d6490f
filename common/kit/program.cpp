#include "program.h"

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
    : label_(std::move(label)),
      enabled_(isatty(STDERR_FILENO)),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
    if (shown_) std::cerr << "\r" << std::string(width_, ' ') << "\r" << std::flush;
}

void Progress::show(const std::string& text) {
    if (!enabled_) return;
    if (!shown_ && std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1)) return;
    shown_ = true;
    width_ = std::max(width_, text.size());
    std::cerr << "\r" << text << std::string(width_ - text.size(), ' ') << std::flush;
}

void Progress::update(long done, long total) {
    if (enabled_) show(label_ + " " + std::to_string(done) + "/" + std::to_string(total));
}

void Progress::update(long done, long total, const std::string& note) {
    if (enabled_)
        show(label_ + " " + std::to_string(done) + "/" + std::to_string(total) + " " + note);
}

}  // namespace kv
