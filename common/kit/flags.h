// One small command-line parser for every program in the book. Each flag is
// declared once, with its type, range, default and a line of help, bound to
// the variable it sets:
//
//     Flags flags("02_kv_cache", "Prefill once, then decode against the cache.");
//     flags.add("answer-len", answer_len, 1, 4096, "tokens to generate");
//     if (!flags.parse(argc, argv)) return 0;  // --help was printed
//
// "--name value" and "--name=value" both work. A number is decimal: an
// optional minus sign and digits, then for a decimal flag a point and an
// exponent ("2e-3"); hexadecimal, a plus sign, a bare point (".5", "5."),
// "inf", "nan" and spaces are refused, so 0x10 never means 16 to one flag
// and an error to another. Anything wrong (an unknown flag, a missing value,
// not a number, out of range, an empty string, a value that is itself a
// flag: "--save-json --json", where "--save-json=--json" means it) throws
// UsageError, one line naming the flag and the value.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kv {

struct UsageError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

class Flags {
  public:
    Flags(std::string program, std::string summary);

    void add(const std::string& name, int& value, std::int64_t min, std::int64_t max,
             const std::string& help);
    void add(const std::string& name, std::uint64_t& value, std::uint64_t min, std::uint64_t max,
             const std::string& help);
    void add(const std::string& name, double& value, double min, double max,
             const std::string& help);
    void add(const std::string& name, std::string& value, const std::string& help);
    void add(const std::string& name, bool& value, const std::string& help);  // present: true
    void add_choice(const std::string& name, std::string& value,
                    const std::vector<std::string>& choices, const std::string& help);

    // A string flag naming a file the program reads, or writes: parse()
    // refuses an output no run may write, or that is the same file as an
    // input or another output (RunFiles, files.h).
    void reads_file(const std::string& name);
    void writes_file(const std::string& name);
    void unlist(const std::string& name);  // taken, not offered by --help (a plotless --plot-dir)

    // false: --help was asked for, and printed on stdout.
    bool parse(int argc, const char* const* argv);

  private:
    enum class File { none, read, written };
    struct Flag {
        std::string name, help, default_text, range_text;  // range: "1..1024", "a | b" or ""
        std::function<void(const std::string&)> set;       // parses and stores, or throws
        bool is_switch = false, listed = true;
        std::string* text = nullptr;  // a string flag's variable
        File file = File::none;
    };
    void declare(Flag flag);
    Flag* find(const std::string& name);
    Flag& string_flag(const std::string& name);  // or throws std::logic_error
    void print_help() const;
    void check_files() const;

    std::string program_, summary_;
    std::vector<Flag> flags_;
};

}  // namespace kv
