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
        return parse(path, text, true);
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

    // A row keeps its numbers and strings, not tables of its own.
    static SavedResults parse(const std::string& path, std::string_view text, bool keep_rows) {
        SavedResults r;
        r.path_ = path;
        r.text_ = text;
        r.keep_rows_ = keep_rows;
        r.skip_space();
        if (r.peek() != '{') r.fail("expected '{'");
        r.parse_object(1, true);
        r.skip_space();
        if (r.pos_ != text.size()) r.fail("text after the object");
        r.text_ = {};
        return r;
    }

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
        std::string s = std::to_string(v);
        while (s.find('.') != std::string::npos && (s.back() == '0' || s.back() == '.'))
            s.pop_back();
        return s;
    }

    // At '{'. Top-level fields are kept; nested ones only checked.
    void parse_object(int depth, bool top) {
        enter(depth, '{');
        if (peek() == '}') return void(++pos_);
        for (;;) {
            skip_space();
            const std::string key = parse_string();
            skip_space();
            expect(':');
            skip_space();
            Value v;
            if (peek() == '-' || is_digit(peek())) {
                v.kind = Kind::number;
                v.text = parse_number();
            } else if (top && peek() == '"') {
                v.kind = Kind::string;
                v.text = parse_string();
            } else if (top && keep_rows_ && peek() == '[') {
                v.kind = parse_array(depth + 1, key, &v.rows) ? Kind::rows : Kind::other;
            } else {
                parse_value(depth);
            }
            if (top && !fields_.emplace(key, v).second)
                fail("the key \"" + excerpt(key) + "\" appears twice");
            skip_space();
            if (peek() != ',') return expect('}');
            ++pos_;
        }
    }

    // At '['. With `rows`, keeps the elements as rows if every one is an
    // object (then returns true), each read again as a file of its own.
    bool parse_array(int depth, const std::string& key = {},
                     std::vector<SavedResults>* rows = nullptr) {
        enter(depth, '[');
        if (peek() == ']') return ++pos_, true;
        bool all_objects = true;
        for (;;) {
            skip_space();
            const std::size_t start = pos_;
            const bool object = peek() == '{';
            parse_value(depth);
            if (rows && object && all_objects) {
                const std::string row =
                    path_ + ": \"" + key + "\" row " + std::to_string(rows->size() + 1);
                rows->push_back(parse(row, text_.substr(start, pos_ - start), false));
            } else if (rows) {
                all_objects = false;
                rows->clear();
            }
            skip_space();
            if (peek() != ',') return expect(']'), all_objects;
            ++pos_;
        }
    }

    void parse_value(int depth) {
        const char c = peek();
        if (c == '{') return parse_object(depth + 1, false);
        if (c == '[') return void(parse_array(depth + 1));
        if (c == '"') return void(parse_string());
        if (c == '-' || is_digit(c)) return void(parse_number());
        for (std::string_view word : {"true", "false", "null"})
            if (text_.substr(pos_, word.size()) == word) return void(pos_ += word.size());
        fail("expected a JSON value");
    }

    // JSON's number grammar exactly; returns the number's text.
    std::string parse_number() {
        const std::size_t start = pos_;
        auto digits = [&](const char* what) {
            if (!is_digit(peek_or_end())) fail(std::string("expected a digit") + what);
            while (is_digit(peek_or_end())) ++pos_;
        };
        if (peek_or_end() == '-') ++pos_;
        if (peek_or_end() == '0')
            ++pos_;
        else
            digits("");
        if (peek_or_end() == '.') {
            ++pos_;
            digits(" after the decimal point");
        }
        if (peek_or_end() == 'e' || peek_or_end() == 'E') {
            ++pos_;
            if (peek_or_end() == '+' || peek_or_end() == '-') ++pos_;
            digits(" in the exponent");
        }
        const char after = peek_or_end();
        if (after != '\0' && after != ',' && after != '}' && after != ']' && !is_space(after))
            fail("not a JSON number");
        return std::string(text_.substr(start, pos_ - start));
    }

    // At '"'; returns the string with its escapes decoded (\uXXXX kept as written).
    std::string parse_string() {
        expect('"');
        std::string out;
        for (;;) {
            const char c = peek();
            ++pos_;
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) fail("a control character inside a string");
            if (c != '\\') {
                out += c;
                continue;
            }
            const std::string_view escapes = "\"\\/bfnrt", meanings = "\"\\/\b\f\n\r\t";
            const char e = peek();
            if (const std::size_t i = escapes.find(e); i != std::string_view::npos) {
                out += meanings[i];
                ++pos_;
            } else if (e == 'u') {
                for (int i = 0; i < 4; ++i)
                    if (!std::isxdigit(static_cast<unsigned char>(peek_at(pos_ + 1 + i))))
                        fail("expected four hex digits after \\u");
                out.append(text_.substr(pos_ - 1, 6));
                pos_ += 5;
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
    char peek_at(std::size_t i) const { return i < text_.size() ? text_[i] : '\0'; }
    char peek_or_end() const { return peek_at(pos_); }
    char peek() const {
        if (pos_ >= text_.size()) fail("unexpected end");
        return text_[pos_];
    }
    void expect(char c) {
        if (peek() != c) fail(std::string("expected '") + c + "'");
        ++pos_;
    }
    void skip_space() {
        while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
    }
    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error(path_ + " is not a JSON object: " + what + " at byte " +
                                 std::to_string(pos_));
    }

    std::string path_;
    std::string_view text_;  // while parsing
    std::size_t pos_ = 0;
    bool keep_rows_ = true;
    std::map<std::string, Value> fields_;  // top-level key -> its value
};

}  // namespace kv
