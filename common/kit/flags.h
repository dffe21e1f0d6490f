// One small command-line parser for every program in the book.
//
// Each flag is declared once, with its type, range, default and a line of
// help, bound to the variable it sets:
//
//     Flags flags("02_kv_cache", "Prefill once, then decode against the cache.");
//     flags.add("answer-len", answer_len, 1, 4096, "tokens to generate");
//     if (!flags.parse(argc, argv)) return 0;  // --help was printed
//
// Both "--name value" and "--name=value" work. Anything wrong (unknown flag,
// missing value, not a number, out of range, an empty string) throws
// UsageError with one line naming the flag and the value. A value that is
// itself a flag ("--save-json --json") is refused; "--save-json=--json"
// gives it on purpose.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kv {

// The numbers flags accept: an optional minus sign and digits, then for
// other than whole-number flags a decimal point and an exponent ("2e-3").
// Hexadecimal, a plus sign, a bare point (".5", "5."), "inf", "nan" and
// spaces are refused, so 0x10 never means 16 to one flag and an error to
// another.
bool is_decimal_number(std::string_view text);

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
    // A switch: present means true. It takes no value.
    void add(const std::string& name, bool& value, const std::string& help);
    // A string that must be one of `choices`.
    void add_choice(const std::string& name, std::string& value,
                    const std::vector<std::string>& choices, const std::string& help);

    // Marks a string flag as naming a file the program reads, or writes:
    // parse() refuses an output that is the same file as an input or
    // another output (RunFiles, files.h).
    void reads_file(const std::string& name);
    void writes_file(const std::string& name);

    // Keeps a flag out of --help, still accepted (a plotless --plot-dir).
    void unlist(const std::string& name);

    // Returns false when --help was asked for (the help is then on stdout).
    bool parse(int argc, const char* const* argv);
    void print_help(std::ostream& out) const;

  private:
    struct Flag {
        std::string name;
        std::string help;
        std::string default_text;  // printed by --help
        std::string range_text;    // "1..1024", "a | b", or empty
        bool is_switch = false;
        std::function<void(const std::string&)> set;  // parses and stores, or throws
        bool listed = true;                           // shown by --help
        const std::string* text = nullptr;            // a string flag's variable
        enum class File { none, read, written } file = File::none;
    };
    void check_files() const;  // the rule of reads_file and writes_file
    void declare(Flag flag);
    Flag* find(const std::string& name);
    Flag& string_flag(const std::string& name, const char* asker);

    std::string program_;
    std::string summary_;
    std::vector<Flag> flags_;
};

}  // namespace kv
