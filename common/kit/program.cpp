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
    : Progress(std::move(label), std::cerr, isatty(STDERR_FILENO) == 1, std::chrono::seconds(1)) {}

Progress::Progress(std::string label, std::ostream& out, bool terminal,
                   std::chrono::milliseconds quiet, std::chrono::milliseconds every)
    : label_(std::move(label)),
      out_(out),
      enabled_(terminal),
      quiet_(quiet),
      every_(every),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
    if (shown_) out_ << "\r" << std::string(width_, ' ') << "\r" << std::flush;
}

bool Progress::due() const {
    if (!enabled_) return false;
    const auto now = std::chrono::steady_clock::now();
    if (now - start_ < quiet_) return false;
    return !shown_ || now - last_shown_ >= every_;
}

void Progress::show() {
    std::string text = label_;
    if (total_ >= 0)
        text.append(" ").append(std::to_string(done_)).append("/").append(std::to_string(total_));
    if (!note_.empty()) text.append(" ").append(note_);
    if (!detail_.empty()) text.append(", ").append(detail_);
    shown_ = true;
    last_shown_ = std::chrono::steady_clock::now();
    width_ = std::max(width_, text.size());
    out_ << "\r" << text << std::string(width_ - text.size(), ' ') << std::flush;
}

void Progress::update(long done, long total, const std::string& note) {
    if (!enabled_) return;
    const bool new_count = done != done_ || total != total_;
    done_ = done;
    total_ = total;
    note_ = note;
    detail_.clear();
    if (new_count ? std::chrono::steady_clock::now() - start_ >= quiet_ : due()) show();
}

void Progress::detail(const std::string& text) {
    if (!enabled_) return;
    detail_ = text;
    if (due()) show();
}

}  // namespace kv
