// What every chapter's main() shares: turning errors into one line and exit
// status 2, and progress lines that appear only on a terminal.
#pragma once

#include <exception>
#include <iostream>
#include <string>

namespace kv {

// Runs body(); any exception becomes "program: message" on stderr and exit
// status 2. Otherwise returns body's own status.
template <class Body>
int run_program(const char* program, Body&& body) {
    try {
        return body();
    } catch (const std::exception& e) {
        std::cerr << program << ": " << e.what() << "\n";
        return 2;
    }
}

// Progress for long runs: rewritten in place on stderr, and only when stderr
// is a terminal, so logs and pipes stay clean.
class Progress {
  public:
    explicit Progress(std::string label);
    ~Progress();
    void update(long done, long total);

  private:
    std::string label_;
    bool enabled_;
};

// Writes `text` to `path` (creating the folder), or throws.
void write_file(const std::string& path, const std::string& text);

}  // namespace kv
