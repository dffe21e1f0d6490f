// What every chapter's main() shares: turning errors into one line and exit
// status 2, and progress lines that appear only on a terminal.
#pragma once

#include <chrono>
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include "files.h"  // write_file, check_standard_output, handle_signals_while_writing

namespace kv {

// Names a large allocation while it is being made, so that run_program can
// say what a std::bad_alloc was allocating:
//     const Allocating note("the KV cache of " + std::to_string(n) + " positions");
class Allocating {
  public:
    explicit Allocating(std::string what);
    ~Allocating();
    Allocating(const Allocating&) = delete;
    Allocating& operator=(const Allocating&) = delete;

    // The innermost note an exception last left, forgotten once read; "" if none.
    static std::string failed();

  private:
    std::string what_;
    int exceptions_;  // std::uncaught_exceptions() when the note was made
};

// Runs body(); any exception becomes "program: message" on stderr and exit
// status 2, and so does standard output lost (`ch03 > /dev/full`).
template <class Body>
int run_program(const char* program, Body&& body) {
    Allocating::failed();            // nothing from before this program
    handle_signals_while_writing();  // files.h: cleanup on signals, ulimit -f as an error
    try {
        const int status = body();
        check_standard_output();
        return status;
    } catch (const std::bad_alloc&) {
        const std::string what = Allocating::failed();
        std::cerr << program << ": out of memory"
                  << (what.empty() ? std::string(" (std::bad_alloc)") : " allocating " + what)
                  << "; this machine or this process's limits (ulimit -v, cgroup memory.max) "
                     "cannot hold it: choose a smaller shape or workload\n";
        return 2;
    } catch (const std::exception& e) {
        Allocating::failed();
        std::cerr << program << ": " << e.what() << "\n";
        return 2;
    }
}

// Progress for long runs: rewritten in place on stderr, only when stderr is
// a terminal, and nothing for the first second. A new count shows at once; a
// new note or detail at most every tenth of a second, so a loop may update
// as often as it likes.
class Progress {
  public:
    explicit Progress(std::string label);
    // For tests: lines go to `out`, as if stderr were a terminal or not,
    // after `quiet` instead of a second, a new note `every` so often.
    Progress(std::string label, std::ostream& out, bool terminal, std::chrono::milliseconds quiet,
             std::chrono::milliseconds every = std::chrono::milliseconds(100));
    ~Progress();  // clears the line
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    void update(long done, long total, const std::string& note = "");  // "label done/total note"
    // Work inside the current item, after the note (PassesShown); the next
    // update() clears it.
    void detail(const std::string& text);

    bool on_terminal() const { return enabled_; }
    // Whether a new note or detail would show now: a hot loop asks first.
    bool due() const;

  private:
    void show();
    std::string label_;
    std::ostream& out_;
    bool enabled_;
    std::chrono::milliseconds quiet_;  // nothing shows before
    std::chrono::milliseconds every_;  // a new note or detail at most this often
    bool shown_ = false;
    std::chrono::steady_clock::time_point start_, last_shown_;
    long done_ = -1, total_ = -1;
    std::string note_, detail_;
    std::size_t width_ = 0;  // of the longest line shown
};

}  // namespace kv
