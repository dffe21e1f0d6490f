// libFuzzer: the shared flag parser (common/kit/flags.h). The bytes, split
// at NUL bytes, are the arguments; every kind of flag is declared. Any
// arguments must parse, print help, or give one UsageError, and a parsed
// value must lie in its flag's range.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "../../common/kit/flags.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> args = {"fuzz"};
    std::string arg;
    for (std::size_t i = 0; i < size; ++i) {
        if (data[i] == 0) {
            args.push_back(arg);
            arg.clear();
        } else {
            arg += char(data[i]);
        }
    }
    args.push_back(arg);
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());

    int layers = 4;
    std::uint64_t seed = 1;
    double rate = 0.5;
    bool json = false;
    std::string dir = "plots", policy = "serial";
    kv::Flags flags("fuzz", "the flag parser under a fuzzer");
    flags.add("layers", layers, -5, 64, "layers");
    flags.add("seed", seed, 0, UINT64_MAX, "seed");
    flags.add("rate", rate, 0.0, 1e9, "rate");
    flags.add("json", json, "json");
    flags.add("plot-dir", dir, "dir");
    flags.add_choice("policy", policy, {"serial", "static", "continuous"}, "policy");
    std::ostringstream help;  // --help goes to std::cout: keep the log clean
    std::streambuf* old = std::cout.rdbuf(help.rdbuf());
    try {
        flags.parse(int(argv.size()), argv.data());
        if (layers < -5 || layers > 64 || !(rate >= 0 && rate <= 1e9) || dir.empty())
            __builtin_trap();
    } catch (const kv::UsageError& e) {
        if (std::string(e.what()).find('\n') != std::string::npos) __builtin_trap();
    }
    std::cout.rdbuf(old);
    return 0;
}
