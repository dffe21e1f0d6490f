// Reading back what the chapters saved with --save-json.
//
// The closing table must show the numbers the chapters measured in this
// run, not numbers typed again by hand, so it reads each chapter's JSON
// file: its top-level numbers and strings, and the rows of its top-level
// tables (arrays of objects, as report.h writes a Table), each row read
// like a file of its own. The whole file must be one JSON object (RFC
// 8259): everything else in it is checked and skipped. A number is JSON's
// own grammar only: NaN, Infinity, 0x10, +5, .5 and 5. are not numbers,
// and nothing may follow the object but spaces.
#pragma once

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report.h"  // excerpt, kResultsFormat

namespace kv {

class SavedResults {
  public:
    static constexpr int kDeepest = 64;  // nesting deeper than this is refused

    // The results held by `text`, read from `path`; throws
    // std::runtime_error naming the file if it is not one JSON object.
    static SavedResults parse(const std::string& path, std::string_view text) {
        Parser p{path, text};
        p.skip_space();
        SavedResults r = p.object(1, Keep::tables);
        p.skip_space();
        if (p.pos != text.size()) p.fail("text after the object");
        return r;
    }

    // The top-level number under `key`; throws if it is absent, not a
    // number, or too large for a double.
    double number(const std::string& key) const {
        const std::string& text = field(key, Kind::number, " is not a number").text;
        const double v = std::strtod(text.c_str(), nullptr);
        if (!std::isfinite(v))
            throw std::runtime_error(path_ + ": \"" + key + "\" = " + excerpt(text) +
                                     " is too large for a double");
        return v;
    }
    double positive_number(const std::string& key) const {  // a time, a size
        return checked(
            key, [](double v) { return v > 0; }, "must be above zero");
    }
    double non_negative_number(const std::string& key) const {  // a count
        return checked(
            key, [](double v) { return v >= 0; }, "must not be below zero");
    }
    double number_between(const std::string& key, double low, double high) const {
        return checked(
            key, [&](double v) { return v >= low && v <= high; },
            "must be from " + number_text(low) + " to " + number_text(high));
    }

    // Checks where the file came from (report.h, with_origin): its
    // "results_format" must be kResultsFormat and its "chapter" `chapter`,
    // or it would be read with another chapter's keys, or with keys whose
    // meaning may have changed. The error says what the file says.
    void require_origin(const std::string& chapter) const {
        auto says = [&](const std::string& key) {
            const auto it = fields_.find(key);
            if (it == fields_.end()) return "no \"" + key + "\"";
            const Value& v = it->second;
            return "\"" + key + "\": " +
                   (v.kind == Kind::string   ? "\"" + excerpt(v.text) + "\""
                    : v.kind == Kind::number ? excerpt(v.text)
                                             : std::string("not a number or a string"));
        };
        auto is = [&](const std::string& key, Kind kind, const std::string& text) {
            const auto it = fields_.find(key);
            return it != fields_.end() && it->second.kind == kind && it->second.text == text;
        };
        if (is(kResultsFormatKey, Kind::number, std::to_string(kResultsFormat)) &&
            is(kResultsChapterKey, Kind::string, chapter))
            return;
        throw std::runtime_error(path_ + ": written as " + says(kResultsFormatKey) + ", " +
                                 says(kResultsChapterKey) + "; expected chapter \"" + chapter +
                                 "\" in results format " + std::to_string(kResultsFormat));
    }

    bool has(const std::string& key) const { return fields_.count(key) > 0; }
    bool has_number(const std::string& key) const {
        auto it = fields_.find(key);
        return it != fields_.end() && it->second.kind == Kind::number;
    }

    // The top-level string under `key`, escapes decoded (\uXXXX kept as written).
    const std::string& text(const std::string& key) const {
        return field(key, Kind::string, " is not a string").text;
    }

    // The rows of the top-level table under `key`; each row's errors name
    // the file, the table and the row ("r.json: \"fit\" row 2").
    const std::vector<SavedResults>& rows(const std::string& key) const {
        return field(key, Kind::rows, " is not a table of rows").rows;
    }

  private:
    enum class Kind { number, string, rows, other };
    struct Value {
        Kind kind = Kind::other;
        std::string text;                // a number as written, or a string decoded
        std::vector<SavedResults> rows;  // an array of objects, each read as a file
    };
    // What an object keeps: nothing (a nested one, only checked), its
    // numbers and strings (a row), or its tables' rows too (the file).
    enum class Keep { nothing, values, tables };

    const Value& field(const std::string& key, Kind kind, const char* otherwise) const {
        const auto it = fields_.find(key);
        if (it == fields_.end()) throw std::runtime_error(path_ + " has no \"" + key + "\"");
        if (it->second.kind != kind)
            throw std::runtime_error(path_ + ": \"" + key + "\"" + otherwise);
        return it->second;
    }

    template <class Ok>
    double checked(const std::string& key, Ok ok, const std::string& rule) const {
        const double v = number(key);
        if (!ok(v))
            throw std::runtime_error(path_ + ": \"" + key + "\" " + rule + ", got " +
                                     excerpt(fields_.at(key).text));
        return v;
    }

    static std::string number_text(double v) {  // "0", "100", "0.5"
        std::ostringstream s;
        s << v;
        return s.str();
    }

    struct Parser {
        std::string path;  // what its errors name: the file, or a row of one of its tables
        std::string_view text;
        std::size_t pos = 0;

        // At '{'.
        SavedResults object(int depth, Keep keep) {
            SavedResults r;
            r.path_ = path;
            enter(depth, '{');
            if (peek() == '}') {
                ++pos;
                return r;
            }
            for (;;) {
                skip_space();
                const std::string key = string();
                skip_space();
                expect(':');
                skip_space();
                Value v;
                const char c = peek();
                if (keep != Keep::nothing && (c == '-' || is_digit(c)))
                    v = {Kind::number, number(), {}};
                else if (keep != Keep::nothing && c == '"')
                    v = {Kind::string, string(), {}};
                else if (keep == Keep::tables && c == '[')
                    v.kind = array(depth + 1, &v.rows, key) ? Kind::rows : Kind::other;
                else
                    value(depth);
                if (keep != Keep::nothing && !r.fields_.emplace(key, std::move(v)).second)
                    fail("the key \"" + excerpt(key) + "\" appears twice");
                skip_space();
                if (peek() != ',') {
                    expect('}');
                    return r;
                }
                ++pos;
            }
        }

        // At '['. With `rows`, reads the elements as the rows of the table
        // `key` and returns true if every one is an object.
        bool array(int depth, std::vector<SavedResults>* rows = nullptr,
                   const std::string& key = {}) {
            enter(depth, '[');
            if (peek() == ']') return ++pos, true;
            bool all_objects = true;
            for (;;) {
                skip_space();
                all_objects = all_objects && peek() == '{';
                if (rows && all_objects) {
                    const std::string file = std::exchange(
                        path, path + ": \"" + key + "\" row " + std::to_string(rows->size() + 1));
                    rows->push_back(object(depth + 1, Keep::values));
                    path = file;
                } else {
                    value(depth);
                }
                skip_space();
                if (peek() != ',') return expect(']'), all_objects;
                ++pos;
            }
        }

        void value(int depth) {
            const char c = peek();
            if (c == '{') return void(object(depth + 1, Keep::nothing));
            if (c == '[') return void(array(depth + 1));
            if (c == '"') return void(string());
            if (c == '-' || is_digit(c)) return void(number());
            for (std::string_view word : {"true", "false", "null"})
                if (text.substr(pos, word.size()) == word) return void(pos += word.size());
            fail("expected a JSON value");
        }

        // JSON's number grammar exactly; returns the number's text.
        std::string number() {
            const std::size_t start = pos;
            auto digits = [&](const char* what) {
                if (!is_digit(at(pos))) fail(std::string("expected a digit") + what);
                while (is_digit(at(pos))) ++pos;
            };
            if (at(pos) == '-') ++pos;
            if (at(pos) == '0')
                ++pos;
            else
                digits("");
            if (at(pos) == '.') {
                ++pos;
                digits(" after the decimal point");
            }
            if (at(pos) == 'e' || at(pos) == 'E') {
                ++pos;
                if (at(pos) == '+' || at(pos) == '-') ++pos;
                digits(" in the exponent");
            }
            const char after = at(pos);
            if (after != '\0' && after != ',' && after != '}' && after != ']' && !is_space(after))
                fail("not a JSON number");
            return std::string(text.substr(start, pos - start));
        }

        // At '"'; returns the string with its escapes decoded (\uXXXX kept as written).
        std::string string() {
            expect('"');
            std::string out;
            for (;;) {
                const char c = peek();
                ++pos;
                if (c == '"') return out;
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
        }

        void enter(int depth, char open) {
            if (depth > kDeepest) fail("nested more than " + std::to_string(kDeepest) + " deep");
            expect(open);
            skip_space();
        }
        static bool is_digit(char c) { return c >= '0' && c <= '9'; }
        static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
        char at(std::size_t i) const { return i < text.size() ? text[i] : '\0'; }
        char peek() const {
            if (pos >= text.size()) fail("unexpected end");
            return text[pos];
        }
        void expect(char c) {
            if (peek() != c) fail(std::string("expected '") + c + "'");
            ++pos;
        }
        void skip_space() {
            while (is_space(at(pos))) ++pos;
        }
        [[noreturn]] void fail(const std::string& what) const {
            throw std::runtime_error(path + " is not a JSON object: " + what + " at byte " +
                                     std::to_string(pos));
        }
    };

    std::string path_;
    std::map<std::string, Value> fields_;  // top-level key -> its value
};

}  // namespace kv
