// Runs a chapter's program in this process, as its main() would
// (run_chapter), with standard output and error captured.
#pragma once

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "../common/kit/chapter.h"

namespace kv::test {

struct Ran {
    int status = -1;
    std::string out, err;  // what went to std::cout and std::cerr
};

template <class Experiment, class Report>
Ran run_captured(const char* program, const std::vector<std::string>& args, Experiment& experiment,
                 Report&& report) {
    std::vector<const char*> argv = {program};
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    struct Restore {  // the streams' own buffers back, however the run ends
        std::streambuf* out;
        std::streambuf* err;
        ~Restore() {
            std::cout.rdbuf(out);
            std::cerr.rdbuf(err);
        }
    } restore{std::cout.rdbuf(out.rdbuf()), std::cerr.rdbuf(err.rdbuf())};
    Ran ran;
    ran.status = run_chapter(static_cast<int>(argv.size()), argv.data(), program, "a test run",
                             experiment, report);
    ran.out = out.str();
    ran.err = err.str();
    return ran;
}

}  // namespace kv::test
