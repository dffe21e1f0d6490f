#include "flags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string_view>
#include <type_traits>

#include "files.h"   // RunFiles, program_folder
#include "report.h"  // excerpt

namespace kv {

namespace {

std::string quote(const std::string& s) {
    return "'" + excerpt(s) + "'";
}

template <class T>
std::string number_text(T v) {
    std::ostringstream out;
    out << v;
    return out.str();
}

// The numbers flags take (flags.h); `decimal`: a point and an exponent too.
bool is_number(std::string_view text, bool decimal) {
    std::size_t i = 0;
    auto take = [&](std::string_view chars) {  // one of `chars`, if it is next
        return i < text.size() && chars.find(text[i]) != std::string_view::npos && ++i;
    };
    auto digits = [&] {  // one digit or more
        const std::size_t start = i;
        while (take("0123456789")) continue;
        return i > start;
    };
    take("-");
    if (!digits() || (decimal && take(".") && !digits())) return false;
    if (decimal && take("eE")) {
        take("+-");
        if (!digits()) return false;
    }
    return i == text.size();
}

// `text` as a T in min..max, or a UsageError naming --name. A decimal too
// small to be normal is a number (1e-400 is 0); one too large is out of range.
template <class T>
T parse_number(const std::string& name, const std::string& text, T min, T max) {
    constexpr bool whole = std::is_integral_v<T>;
    if (!is_number(text, !whole))
        throw UsageError("--" + name + ": expected a " + (whole ? "whole" : "decimal") +
                         " number, got " + quote(text));
    errno = 0;
    T v{};
    bool in_range = true;
    if constexpr (!whole) {
        v = std::strtod(text.c_str(), nullptr);
        in_range = std::isfinite(v);
    } else if constexpr (std::is_signed_v<T>) {
        v = std::strtoll(text.c_str(), nullptr, 10);
        in_range = errno != ERANGE;
    } else {
        v = std::strtoull(text.c_str(), nullptr, 10);
        in_range = errno != ERANGE && text[0] != '-';
    }
    if (!in_range || v < min || v > max)
        throw UsageError("--" + name + ": must be in " + number_text(min) + ".." +
                         number_text(max) + ", got " + excerpt(text));
    return v;
}

}  // namespace

Flags::Flags(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void Flags::declare(Flag flag) {
    if (find(flag.name) != nullptr) throw std::logic_error("flag declared twice: --" + flag.name);
    flags_.push_back(std::move(flag));
}

Flags::Flag* Flags::find(const std::string& name) {
    for (Flag& f : flags_)
        if (f.name == name) return &f;
    return nullptr;
}

void Flags::add(const std::string& name, int& value, std::int64_t min, std::int64_t max,
                const std::string& help) {
    declare({name, help, std::to_string(value), number_text(min) + ".." + number_text(max),
             [&value, name, min, max](const std::string& text) {
                 value = int(parse_number(name, text, min, max));
             }});
}

void Flags::add(const std::string& name, std::uint64_t& value, std::uint64_t min, std::uint64_t max,
                const std::string& help) {
    declare({name, help, std::to_string(value), number_text(min) + ".." + number_text(max),
             [&value, name, min, max](const std::string& text) {
                 value = parse_number(name, text, min, max);
             }});
}

void Flags::add(const std::string& name, double& value, double min, double max,
                const std::string& help) {
    declare({name, help, number_text(value), number_text(min) + ".." + number_text(max),
             [&value, name, min, max](const std::string& text) {
                 value = parse_number(name, text, min, max);
             }});
}

void Flags::add(const std::string& name, std::string& value, const std::string& help) {
    declare(
        {name, help, value.empty() ? "(none)" : value, "", [&value, name](const std::string& text) {
             // An empty one would silently mean "none" or "/".
             if (text.empty()) throw UsageError("--" + name + ": needs a value, got an empty one");
             value = text;
         }});
    flags_.back().text = &value;
}

void Flags::add(const std::string& name, bool& value, const std::string& help) {
    declare({name, help, value ? "on" : "off", "", [&value](const std::string&) { value = true; },
             true});
}

void Flags::add_choice(const std::string& name, std::string& value,
                       const std::vector<std::string>& choices, const std::string& help) {
    std::string range;
    for (const std::string& c : choices) range += (range.empty() ? "" : " | ") + c;
    declare({name, help, value, range, [&value, name, choices, range](const std::string& text) {
                 if (std::find(choices.begin(), choices.end(), text) == choices.end())
                     throw UsageError("--" + name + ": expected one of " + range + ", got " +
                                      quote(text));
                 value = text;
             }});
}

Flags::Flag& Flags::string_flag(const std::string& name) {
    Flag* flag = find(name);
    if (flag == nullptr || flag->text == nullptr)
        throw std::logic_error("no string flag --" + name);
    return *flag;
}

void Flags::reads_file(const std::string& name) {
    string_flag(name).file = File::read;
}

void Flags::writes_file(const std::string& name) {
    string_flag(name).file = File::written;
}

void Flags::unlist(const std::string& name) {
    string_flag(name).listed = false;
}

bool Flags::parse(int argc, const char* const* argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            print_help();
            return false;
        }
        if (!arg.starts_with("--") || arg.size() == 2)
            throw UsageError("unexpected argument " + quote(arg) +
                             " (flags start with --; see --help)");
        const std::size_t eq = arg.find('=');
        const std::string name = arg.substr(2, eq - 2);  // to the end if there is no '='
        Flag* flag = find(name);
        if (flag == nullptr) throw UsageError("unknown flag --" + excerpt(name) + " (see --help)");
        if (flag->is_switch && eq != std::string::npos)
            throw UsageError("--" + name + " takes no value");
        std::string value;
        if (eq != std::string::npos) {
            value = arg.substr(eq + 1);
        } else if (!flag->is_switch) {
            if (i + 1 >= argc) throw UsageError("--" + name + ": missing value");
            value = argv[++i];
            // "--save-json --json": a forgotten value would swallow the next flag.
            const std::string next =
                value.starts_with("--") ? value.substr(2, value.find('=') - 2) : "";
            if (next == "help" || (!next.empty() && find(next) != nullptr))
                throw UsageError("--" + name + ": expected a value, got the flag " +
                                 excerpt(value) + " (to mean that text, write --" + name + "=" +
                                 excerpt(value) + ")");
        }
        flag->set(value);
    }
    check_files();
    return true;
}

// The rule a run applies to the files it opens (RunFiles, files.h), applied
// to the flags before the run.
void Flags::check_files() const {
    RunFiles run;
    for (const Flag& f : flags_)
        if (f.file == File::read && !f.text->empty())
            run.inputs_.push_back({*f.text, file_label("--" + f.name, *f.text)});
    for (const Flag& f : flags_) {
        if (f.file != File::written || f.text->empty()) continue;
        try {
            RunFiles::check_output(*f.text, "--" + f.name, &run);
        } catch (const FileError& e) {
            throw UsageError(e.what());
        }
    }
}

void Flags::print_help() const {
    std::cout << "usage: " << program_ << " [flags]\n" << summary_ << "\n\nflags:\n";
    std::size_t width = 4;  // "help"
    for (const Flag& f : flags_)
        if (f.listed) width = std::max(width, f.name.size());
    auto line = [&](const std::string& name, const std::string& text) {
        std::cout << "  --" << std::left << std::setw(int(width) + 2) << name << text << "\n";
    };
    for (const Flag& f : flags_)
        if (f.listed)
            line(f.name, f.help + " (default " + f.default_text +
                             (f.range_text.empty() ? "" : "; " + f.range_text) + ")");
    line("help", "print this help and exit");
    const std::string here = program_folder();
    std::cout << "\nfiles: a path a flag names is taken from the folder you run in; what the "
                 "book measures once and keeps (the kernel plan, step-cost calibrations) lives "
                 "beside this program, in "
              << (here.empty() ? "its folder" : here) << "/\n";
}

}  // namespace kv
