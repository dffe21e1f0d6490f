// Reading back what the chapters saved with --save-json: one JSON object
// (RFC 8259, checked whole; NaN, 0x10, +5, .5 and text after the object
// are refused) read as flat keys. Every number and string is kept under
// its path: "headline", and in a table (an array of objects, as report.h
// writes a Table) "fit.2.unused (%)"; rows() reads a table's rows back.
#pragma once

#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "report.h"  // excerpt, kResultsFormat

namespace kv {

class SavedResults {
  public:
    static constexpr int kDeepest = 64;  // nesting deeper than this is refused

    // The results held by `text`, read from `path`; throws
    // std::runtime_error naming the file if it is not one JSON object.
    static SavedResults parse(const std::string& path, std::string_view text) {
        SavedResults r;
        r.path_ = path;
        Parser p{r, text, 0, {}};
        p.space();
        if (p.peek() != '{') p.fail("expected '{'");
        p.value("", 0);
        p.space();
        if (p.pos != text.size()) p.fail("text after the object");
        return r;
    }

    // The number under `key`; throws if it is absent, not a number, or too
    // large for a double.
    double number(const std::string& key) const {
        const std::string& text = field(key, Kind::number, " is not a number");
        const double v = std::strtod(text.c_str(), nullptr);
        if (!std::isfinite(v))
            throw error(": \"" + key + "\" = " + excerpt(text) + " is too large for a double");
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
                       "must be from " + shown(low) + " to " + shown(high));
    }
    // The string under `key`, escapes decoded (\uXXXX kept as written).
    const std::string& text(const std::string& key) const {
        return field(key, Kind::string, " is not a string");
    }
    bool has(const std::string& key) const { return values_.count(key) > 0; }
    bool has_number(const std::string& key) const {
        return has(key) && values_.at(key).kind == Kind::number;
    }

    // The rows of the table under `key`, each read by its columns; a row's
    // errors name the file, the table and the row ("r.json: \"fit\" row 2").
    std::vector<SavedResults> rows(const std::string& key) const {
        field(key, Kind::rows, " is not a table of rows");
        std::vector<SavedResults> rows;
        for (int i = 0; has(key + "." + std::to_string(i)); ++i) {
            SavedResults row;
            row.path_ = path_ + ": \"" + key + "\" row " + std::to_string(i + 1);
            const std::string prefix = key + "." + std::to_string(i) + ".";
            for (auto it = values_.lower_bound(prefix);
                 it != values_.end() && it->first.starts_with(prefix); ++it)
                row.values_.emplace(it->first.substr(prefix.size()), it->second);
            rows.push_back(std::move(row));
        }
        return rows;
    }

    // Checks where the file came from (report.h, with_origin): its
    // "results_format" must be kResultsFormat and its "chapter" `chapter`,
    // or it would be read with another chapter's keys. The error says what the file says.
    void require_origin(const std::string& chapter) const {
        auto is = [&](const char* key, Kind kind, const std::string& text) {
            return has(key) && values_.at(key).kind == kind && values_.at(key).text == text;
        };
        if (is(kResultsFormatKey, Kind::number, std::to_string(kResultsFormat)) &&
            is(kResultsChapterKey, Kind::string, chapter))
            return;
        auto says = [&](const std::string& key) {
            if (!has(key)) return "no \"" + key + "\"";
            const Value& v = values_.at(key);
            return "\"" + key + "\": " +
                   (v.kind == Kind::string   ? "\"" + excerpt(v.text) + "\""
                    : v.kind == Kind::number ? excerpt(v.text)
                                             : std::string("not a number or a string"));
        };
        throw error(": written as " + says(kResultsFormatKey) + ", " + says(kResultsChapterKey) +
                    "; expected chapter \"" + chapter + "\" in results format " +
                    std::to_string(kResultsFormat));
    }

  private:
    enum class Kind { number, string, rows, other };  // rows: an array of objects only
    struct Value {
        Kind kind;
        std::string text;  // a number as written, or a string decoded
    };
    std::string path_;                     // the file, or a row of one of its tables
    std::map<std::string, Value> values_;  // by path: "key", "table.0.column"

    std::runtime_error error(const std::string& what) const {
        return std::runtime_error(path_ + what);
    }
    const std::string& field(const std::string& key, Kind kind, const char* otherwise) const {
        const auto it = values_.find(key);
        if (it == values_.end()) throw error(" has no \"" + key + "\"");
        if (it->second.kind != kind) throw error(": \"" + key + "\"" + otherwise);
        return it->second.text;
    }
    double checked(const std::string& key, bool ok, const std::string& rule) const {
        if (!ok)
            throw error(": \"" + key + "\" " + rule + ", got " + excerpt(values_.at(key).text));
        return std::strtod(values_.at(key).text.c_str(), nullptr);
    }
    static std::string shown(double v) {  // "0", "100", "0.5"
        std::ostringstream s;
        s << v;
        return s.str();
    }

    // JSON's grammar, each value kept under its path (top-level keys as they are).
    struct Parser {
        SavedResults& r;
        std::string_view text;
        std::size_t pos = 0;

        // Reads the value at pos; returns its kind.
        Kind value(const std::string& path, int depth) {
            const char c = peek();
            if (c == '{' || c == '[') {
                if (depth >= kDeepest)
                    fail("nested more than " + std::to_string(kDeepest) + " deep");
                ++pos;
                space();
                const char close = c == '{' ? '}' : ']';
                bool all_objects = true;
                for (int i = 0; peek() != close; ++i) {
                    std::string key = std::to_string(i);
                    if (c == '{') {
                        key = string();
                        space();
                        expect(':');
                        space();
                    }
                    const std::string inner = path.empty() ? key : path + "." + key;
                    if (r.values_.count(inner))
                        fail("the key \"" + excerpt(key) + "\" appears twice");
                    all_objects = all_objects && peek() == '{';
                    const Kind kind = value(inner, depth + 1);
                    r.values_.emplace(
                        inner,
                        Value{kind, kind == Kind::number || kind == Kind::string ? last : ""});
                    space();
                    if (peek() != ',') break;
                    ++pos;
                    space();
                    if (peek() == close) fail("expected a value");
                }
                expect(close);
                return c == '[' && all_objects ? Kind::rows : Kind::other;
            }
            if (c == '"') return last = string(), Kind::string;
            if (c == '-' || digit(c)) return last = number(), Kind::number;
            for (std::string_view word : {"true", "false", "null"})
                if (text.substr(pos, word.size()) == word) return pos += word.size(), Kind::other;
            fail("expected a JSON value");
        }
        std::string last;  // the last number's or string's text

        std::string number() {
            const std::size_t start = pos;
            auto digits = [&](const char* what) {
                if (!digit(at(pos))) fail(std::string("expected a digit") + what);
                while (digit(at(pos))) ++pos;
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
            if (const char after = at(pos);
                after && std::string_view(",}] \t\n\r").find(after) == std::string_view::npos)
                fail("not a JSON number");
            return std::string(text.substr(start, pos - start));
        }

        std::string string() {
            expect('"');
            std::string out;
            for (char c; (c = peek()) != '"';) {
                ++pos;
                if (static_cast<unsigned char>(c) < 0x20)
                    fail("a control character inside a string");
                if (c != '\\') {
                    out += c;
                    continue;
                }
                const std::string_view escapes = "\"\\/bfnrt", meanings = "\"\\/\b\f\n\r\t";
                const char e = peek();
                if (const std::size_t i = escapes.find(e); i != std::string_view::npos) {
                    out += meanings[i];
                    ++pos;
                } else if (e == 'u') {
                    for (std::size_t i = 1; i <= 4; ++i)
                        if (!std::isxdigit(static_cast<unsigned char>(at(pos + i))))
                            fail("expected four hex digits after \\u");
                    out.append(text.substr(pos - 1, 6));
                    pos += 5;
                } else {
                    fail("an unknown escape in a string");
                }
            }
            ++pos;
            return out;
        }

        static bool digit(char c) { return c >= '0' && c <= '9'; }
        char at(std::size_t i) const { return i < text.size() ? text[i] : '\0'; }
        char peek() const {
            if (pos >= text.size()) fail("unexpected end");
            return text[pos];
        }
        void expect(char c) {
            if (peek() != c) fail(std::string("expected '") + c + "'");
            ++pos;
        }
        void space() {
            while (at(pos) == ' ' || at(pos) == '\t' || at(pos) == '\n' || at(pos) == '\r') ++pos;
        }
        [[noreturn]] void fail(const std::string& what) const {
            throw std::runtime_error(r.path_ + " is not a JSON object: " + what + " at byte " +
                                     std::to_string(pos));
        }
    };
};

}  // namespace kv
