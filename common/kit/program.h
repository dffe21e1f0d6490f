// What every chapter's main() shares: any error as one line on stderr and
// exit status 2, and progress on a terminal.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <iostream>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#include "files.h"  // check_standard_output, handle_signals_while_writing

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
// status 2, and so does standard output closed or lost (`ch03 > /dev/full`).
template <class Body>
int run_program(const char* program, Body&& body) {
    Allocating::failed();  // nothing from before this program
    try {
        handle_signals_while_writing();  // files.h: cleanup on signals, ulimit -f as an error
        check_standard_output();         // closed: refused before any work
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

// Progress of a long run, "label done/total note, 12 s", rewritten in place
// on stderr, only when stderr is a terminal, and nothing for the first
// second. A new count shows at once; a thread of its own redraws the line a
// few times a second, so a call that cannot report (one prefill of many
// thousand tokens) still shows that it runs, from outside.
class Progress {
  public:
    explicit Progress(std::string label);
    // For tests: lines go to `out`, as if stderr were a terminal or not,
    // after `quiet` instead of a second.
    Progress(std::string label, std::ostream& out, bool terminal, std::chrono::milliseconds quiet);
    ~Progress();  // clears the line
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    void update(long done, long total, const std::string& note = "");

  private:
    void show();  // with mutex_ held
    std::string label_, note_, shown_;
    long done_ = -1, total_ = -1;
    std::ostream& out_;
    std::chrono::milliseconds quiet_;
    std::chrono::steady_clock::time_point start_;
    std::size_t width_ = 0;  // of the longest line shown
    std::mutex mutex_;
    std::condition_variable stop_;
    bool stopping_ = false;
    std::thread redraw_;  // only on a terminal
};

}  // namespace kv
