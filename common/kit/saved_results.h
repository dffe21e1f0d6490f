// Reading back what a program saved with --save-json: one JSON object
// (RFC 8259, checked whole: NaN, 0x10, +5, .5 and text after the object
// are refused) read as flat keys. Every number and string is kept under its
// path: "headline", or in a table (an array of objects, as a Table is
// written) "probes.2.seconds". Every error names the file (and the key),
// quoting at most a few dozen characters of what it found.
#pragma once

#include <cmath>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "report.h"  // excerpt, json_number, kResultsFormat

namespace kv {

class SavedResults {
  public:
    static constexpr int kDeepest = 64;  // nesting deeper than this is refused

    // The results held by `text`, read from `path`; throws
    // std::runtime_error naming the file if it is not one JSON object.
    static SavedResults parse(const std::string& path, std::string_view text) {
        SavedResults r;
        r.path_ = path;
        Parser p{r, text};
        if (p.skip_space() != '{') p.fail("expected '{'");
        p.value("", 0);
        p.skip_space();
        if (p.pos != text.size()) p.fail("text after the object");
        return r;
    }

    // The number under `key`; throws if it is absent, not a number, too
    // large for a double, or outside what the caller allows.
    double number(const std::string& key) const {
        const double v = std::strtod(field(key, 'n', "a number").c_str(), nullptr);
        if (!std::isfinite(v))
            throw error(": \"" + key + "\" = " + excerpt(values_.at(key).text) +
                        " is too large for a double");
        return v;
    }
    double positive_number(const std::string& key) const {  // a time, a size
        return checked(key, number(key) > 0, "must be above zero");
    }
    double non_negative_number(const std::string& key) const {  // a count
        return checked(key, number(key) >= 0, "must not be below zero");
    }
    double number_between(const std::string& key, double low, double high) const {
        const double v = number(key);
        return checked(key, v >= low && v <= high,
                       "must be from " + json_number(low) + " to " + json_number(high));
    }
    // The string under `key`, escapes decoded (\uXXXX kept as written).
    const std::string& text(const std::string& key) const { return field(key, 's', "a string"); }
    bool has(const std::string& key) const { return values_.count(key) > 0; }

    // Checks where the file came from (report.h, with_origin): its
    // "results_format" must be kResultsFormat and its "chapter" `chapter`,
    // or it would be read with another chapter's keys.
    void require_origin(const std::string& chapter) const {
        auto says = [&](const std::string& key) {
            if (!has(key)) return "no \"" + key + "\"";
            const Value& v = values_.at(key);
            const std::string shown = v.kind == 's'   ? "\"" + excerpt(v.text) + "\""
                                      : v.kind == 'n' ? excerpt(v.text)
                                                      : "not a number or a string";
            return "\"" + key + "\": " + shown;
        };
        auto is = [&](const char* key, char kind, const std::string& text) {
            return has(key) && values_.at(key).kind == kind && values_.at(key).text == text;
        };
        if (is(kResultsFormatKey, 'n', std::to_string(kResultsFormat)) &&
            is(kResultsChapterKey, 's', chapter))
            return;
        throw error(": written as " + says(kResultsFormatKey) + ", " + says(kResultsChapterKey) +
                    "; expected chapter \"" + chapter + "\" in results format " +
                    std::to_string(kResultsFormat));
    }

  private:
    struct Value {
        char kind;         // 'n' number, 's' string, 'o' other
        std::string text;  // a number as written, or a string decoded
    };
    std::string path_;                     // the file
    std::map<std::string, Value> values_;  // by path: "key", "table.0.column"

    std::runtime_error error(const std::string& what) const {
        return std::runtime_error(path_ + what);
    }
    const std::string& field(const std::string& key, char kind, const char* what) const {
        const auto it = values_.find(key);
        if (it == values_.end()) throw error(" has no \"" + key + "\"");
        if (it->second.kind != kind) throw error(": \"" + key + "\" is not " + what);
        return it->second.text;
    }
    double checked(const std::string& key, bool ok, const std::string& rule) const {
        if (!ok)
            throw error(": \"" + key + "\" " + rule + ", got " + excerpt(values_.at(key).text));
        return number(key);
    }

    // JSON's grammar, each value kept under its path.
    struct Parser {
        SavedResults& r;
        std::string_view text;
        std::size_t pos = 0;
        static constexpr std::size_t npos = std::string_view::npos;

        char at(std::size_t i) const { return i < text.size() ? text[i] : '\0'; }
        char skip_space() {
            while (pos < text.size() && std::string_view(" \t\n\r").find(text[pos]) != npos) ++pos;
            return at(pos);
        }
        [[noreturn]] void fail(const std::string& what) const {
            throw std::runtime_error(r.path_ + " is not a JSON object: " + what + " at byte " +
                                     std::to_string(pos));
        }
        void expect(char c) {
            if (skip_space() != c) fail(std::string("expected '") + c + "'");
            ++pos;
        }

        // Reads the value at pos (spaces before it skipped) and keeps it under `path`.
        void value(const std::string& path, int depth) {
            const char c = skip_space();
            Value v{'o', ""};
            if (c == '{' || c == '[') {
                if (depth >= kDeepest)
                    fail("nested more than " + std::to_string(kDeepest) + " deep");
                ++pos;
                const char close = c == '{' ? '}' : ']';
                for (int i = 0; skip_space() != close; ++i) {
                    if (i > 0) expect(',');
                    std::string key = std::to_string(i);
                    if (c == '{') {
                        if (skip_space() != '"') fail("expected a key");
                        key = string();
                        expect(':');
                    }
                    const std::string inner = path.empty() ? key : path + "." + key;
                    if (r.values_.count(inner))
                        fail("the key \"" + excerpt(key) + "\" appears twice");
                    value(inner, depth + 1);
                }
                ++pos;
            } else if (c == '"') {
                v = {'s', string()};
            } else if (c == '-' || (c >= '0' && c <= '9')) {
                v = {'n', number()};
            } else {
                const std::size_t start = pos;
                for (std::string_view word : {"true", "false", "null"})
                    if (text.substr(pos, word.size()) == word) pos += word.size();
                if (pos == start) fail("expected a JSON value");
            }
            if (!path.empty()) r.values_.emplace(path, std::move(v));
        }

        std::string number() {
            const std::size_t start = pos;
            auto digits = [&](const char* where) {
                if (at(pos) < '0' || at(pos) > '9') fail(std::string("expected a digit") + where);
                while (at(pos) >= '0' && at(pos) <= '9') ++pos;
            };
            if (at(pos) == '-') ++pos;
            if (at(pos) == '0')
                ++pos;
            else
                digits("");
            if (at(pos) == '.') ++pos, digits(" after the decimal point");
            if (at(pos) == 'e' || at(pos) == 'E') {
                ++pos;
                if (at(pos) == '+' || at(pos) == '-') ++pos;
                digits(" in the exponent");
            }
            if (pos < text.size() && std::string_view(",}] \t\n\r").find(text[pos]) == npos)
                fail("not a JSON number");
            return std::string(text.substr(start, pos - start));
        }

        std::string string() {
            ++pos;  // the opening quote
            std::string out;
            for (char c; (c = at(pos)) != '"'; ++pos) {
                if (pos >= text.size()) fail("unexpected end");
                if (static_cast<unsigned char>(c) < 0x20)
                    fail("a control character inside a string");
                if (c != '\\') {
                    out += c;
                    continue;
                }
                const std::size_t escape = std::string_view("\"\\/bfnrtu").find(at(++pos));
                if (escape == npos) fail("an unknown escape in a string");
                if (at(pos) != 'u') {
                    out += "\"\\/\b\f\n\r\t"[escape];
                    continue;
                }
                for (std::size_t i = 1; i <= 4; ++i)
                    if (!std::isxdigit(static_cast<unsigned char>(at(pos + i))))
                        fail("expected four hex digits after \\u");
                out.append(text.substr(pos - 1, 6));
                pos += 4;
            }
            ++pos;
            return out;
        }
    };
};

}  // namespace kv
