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
// UsageError with one line naming the flag and the value. A value given as
// the next argument that is itself a flag ("--save-json --json") is refused
// naming both, rather than taken as a file name; "--save-json=--json" is how
// a value that looks like a flag is given on purpose.
//
// Numbers are decimal, for whole-number and floating-point flags alike:
// whole numbers are digits with an optional minus sign ("12", "-3"); other
// numbers may add a decimal point and an exponent ("0.5", "2e-3", "1E6").
// Hexadecimal ("0x10"), a plus sign ("+5"), a bare point (".5", "5."),
// "inf", "nan" and spaces are refused, so 0x10 never means 16 to one flag
// and an error to another. Any decimal value inside a flag's range is
// accepted, however small ("1e-310").
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kv {

// The decimal numbers the flags accept (above); also used for numbers in
// the book's own text files (chapter 05's cost model).
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

    // Marks a declared string flag as naming a file the program reads, or
    // one it writes. parse() then refuses, naming both flags, an output that
    // names the same file (same_file, files.h) as an input ("an output may
    // not replace an input") or as another output ("each output needs a file
    // of its own"); a standard stream or a device may be named by several.
    void reads_file(const std::string& name);
    void writes_file(const std::string& name);

    // Keeps a declared flag out of --help: it is still accepted (a program
    // that draws no plot takes the --plot-dir every program is given, as
    // tests/check_programs.sh does, but does not offer it).
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
    bool names_a_flag(const std::string& arg);  // "--json", "--json=x", "--help": declared

    std::string program_;
    std::string summary_;
    std::vector<Flag> flags_;
};

}  // namespace kv
