#include "flags.h"

#include "files.h"  // RunFiles, check_output_path, stream_named_by
#include "report.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string_view>
#include <type_traits>

namespace kv {

namespace {

std::string quote(const std::string& s) {
    return "'" + excerpt(s) + "'";
}

// A whole number in min..max: an optional minus sign, then digits only
// ("12", not "12k" or "1e3").
template <class T>
T parse_whole(const std::string& name, const std::string& text, T min, T max) {
    const bool minus = !text.empty() && text[0] == '-';
    if (text.size() == std::size_t(minus) ||
        text.find_first_not_of("0123456789", std::size_t(minus)) != std::string::npos)
        throw UsageError("--" + name + ": expected a whole number, got " + quote(text));
    errno = 0;
    const T v = std::is_signed_v<T> ? T(std::strtoll(text.c_str(), nullptr, 10))
                                    : T(std::strtoull(text.c_str(), nullptr, 10));
    if (errno == ERANGE || v < min || v > max || (!std::is_signed_v<T> && minus))
        throw UsageError("--" + name + ": must be in " + std::to_string(min) + ".." +
                         std::to_string(max) + ", got " + excerpt(text));
    return v;
}

// "--name=value" -> "name".
std::string flag_name(const std::string& arg) {
    const std::size_t eq = arg.find('=');
    return arg.substr(2, eq == std::string::npos ? eq : eq - 2);
}

std::string format_double(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
}

}  // namespace

bool is_decimal_number(std::string_view text) {
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
    if (!digits() || (take(".") && !digits())) return false;
    if (take("eE")) {
        take("+-");
        if (!digits()) return false;
    }
    return i == text.size();
}

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
    declare({name, help, std::to_string(value), std::to_string(min) + ".." + std::to_string(max),
             false, [&value, name, min, max](const std::string& text) {
                 value = static_cast<int>(parse_whole(name, text, min, max));
             }});
}

void Flags::add(const std::string& name, std::uint64_t& value, std::uint64_t min, std::uint64_t max,
                const std::string& help) {
    declare({name, help, std::to_string(value), std::to_string(min) + ".." + std::to_string(max),
             false, [&value, name, min, max](const std::string& text) {
                 value = parse_whole(name, text, min, max);
             }});
}

void Flags::add(const std::string& name, double& value, double min, double max,
                const std::string& help) {
    declare({name, help, format_double(value), format_double(min) + ".." + format_double(max),
             false, [&value, name, min, max](const std::string& text) {
                 const std::string what = "--" + name + ": ";
                 if (!is_decimal_number(text))
                     throw UsageError(what + "expected a decimal number, got " + quote(text));
                 // Too large is out of range; too small to be normal is a number.
                 const double v = std::strtod(text.c_str(), nullptr);
                 if (!std::isfinite(v) || v < min || v > max)
                     throw UsageError(what + "must be in " + format_double(min) + ".." +
                                      format_double(max) + ", got " + excerpt(text));
                 value = v;
             }});
}

void Flags::add(const std::string& name, std::string& value, const std::string& help) {
    declare({name, help, value.empty() ? "(none)" : value, "", false,
             [&value, name](const std::string& text) {
                 // An empty one would silently mean "none" or "/".
                 if (text.empty())
                     throw UsageError("--" + name + ": needs a value, got an empty one");
                 value = text;
             }});
    flags_.back().text = &value;
}

Flags::Flag& Flags::string_flag(const std::string& name, const char* asker) {
    Flag* flag = find(name);
    if (flag == nullptr || flag->text == nullptr)
        throw std::logic_error(std::string(asker) + ": no string flag --" + name);
    return *flag;
}

void Flags::reads_file(const std::string& name) {
    string_flag(name, "reads_file").file = Flag::File::read;
}

void Flags::writes_file(const std::string& name) {
    string_flag(name, "writes_file").file = Flag::File::written;
}

// The rule a run applies to the files it opens (RunFiles, files.h), applied
// to the flags before the run: a standard stream or a device may be named
// by several outputs.
void Flags::check_files() const {
    RunFiles run;
    auto label = [](const Flag& f) { return file_label("--" + f.name, *f.text); };
    for (const Flag& in : flags_)
        if (in.file == Flag::File::read && !in.text->empty())
            run.inputs_.push_back({*in.text, label(in)});
    for (const Flag& out : flags_) {
        if (out.file != Flag::File::written || out.text->empty()) continue;
        try {
            check_output_path(*out.text, "--" + out.name);
            if (stream_named_by(*out.text) < 0) run.check_output(*out.text, label(out));
        } catch (const FileError& e) {
            throw UsageError(e.what());
        }
    }
}

void Flags::add(const std::string& name, bool& value, const std::string& help) {
    declare({name, help, value ? "on" : "off", "", true,
             [&value](const std::string&) { value = true; }});
}

void Flags::add_choice(const std::string& name, std::string& value,
                       const std::vector<std::string>& choices, const std::string& help) {
    std::string range;
    for (const std::string& c : choices) range += (range.empty() ? "" : " | ") + c;
    declare(
        {name, help, value, range, false, [&value, name, choices, range](const std::string& text) {
             for (const std::string& c : choices)
                 if (c == text) {
                     value = text;
                     return;
                 }
             throw UsageError("--" + name + ": expected one of " + range + ", got " + quote(text));
         }});
}

void Flags::unlist(const std::string& name) {
    Flag* flag = find(name);
    if (flag == nullptr) throw std::logic_error("unlist: no flag --" + name);
    flag->listed = false;
}

bool Flags::parse(int argc, const char* const* argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            print_help(std::cout);
            return false;
        }
        if (arg.rfind("--", 0) != 0 || arg.size() == 2)
            throw UsageError("unexpected argument " + quote(arg) +
                             " (flags start with --; see --help)");
        const std::size_t eq = arg.find('=');
        const std::string name = flag_name(arg);
        Flag* flag = find(name);
        if (flag == nullptr) throw UsageError("unknown flag --" + excerpt(name) + " (see --help)");
        if (flag->is_switch) {
            if (eq != std::string::npos) throw UsageError("--" + name + " takes no value");
            flag->set("");
            continue;
        }
        std::string value;
        if (eq != std::string::npos) {
            value = arg.substr(eq + 1);
        } else {
            if (i + 1 >= argc) throw UsageError("--" + name + ": missing value");
            value = argv[++i];
            // "--save-json --json": a forgotten value would swallow the next flag.
            if (value.rfind("--", 0) == 0 &&
                (flag_name(value) == "help" || find(flag_name(value)) != nullptr))
                throw UsageError("--" + name + ": expected a value, got the flag " +
                                 excerpt(value) + " (to mean that text, write --" + name + "=" +
                                 excerpt(value) + ")");
        }
        flag->set(value);
    }
    check_files();
    return true;
}

void Flags::print_help(std::ostream& out) const {
    out << "usage: " << program_ << " [flags]\n" << summary_ << "\n\nflags:\n";
    std::size_t width = 0;
    for (const Flag& f : flags_)
        if (f.listed) width = std::max(width, f.name.size());
    for (const Flag& f : flags_) {
        if (!f.listed) continue;
        out << "  --" << std::left << std::setw(static_cast<int>(width) + 2) << f.name << f.help
            << " (default " << f.default_text;
        if (!f.range_text.empty()) out << "; " << f.range_text;
        out << ")\n";
    }
    out << "  --" << std::left << std::setw(static_cast<int>(width) + 2) << "help"
        << "print this help and exit\n";
}

}  // namespace kv
