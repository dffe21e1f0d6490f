#include "program.h"

#include <unistd.h>

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

Progress::Progress(std::string label) : label_(std::move(label)), enabled_(isatty(STDERR_FILENO)) {}

Progress::~Progress() {
    if (enabled_) std::cerr << "\r" << std::string(label_.size() + 30, ' ') << "\r" << std::flush;
}

void Progress::update(long done, long total) {
    if (enabled_) std::cerr << "\r" << label_ << " " << done << "/" << total << std::flush;
}

}  // namespace kv
