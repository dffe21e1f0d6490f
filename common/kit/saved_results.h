// Reading back what the chapters saved with --save-json.
//
// The closing table must show the numbers the chapters measured in this
// run, not numbers typed again by hand, so it reads each chapter's JSON
// file. It needs the top-level numbers and strings (a headline), and the
// rows of a top-level table (an array of objects, as report.h writes a
// Table), each row read like a file of its own. The whole file must be one
// JSON object (RFC 8259): everything else, nested objects and arrays,
// strings and their escapes, true, false and null, is checked and skipped.
// A number is JSON's
// own grammar only: an optional minus, digits without a leading zero, an
// optional fraction and exponent; NaN, Infinity, 0x10, +5, .5 and 5. are
// not numbers, and nothing may follow the object but spaces.
#pragma once

#include <cctype>
#include <cmath>
#include <cstdint>
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
    // Nesting deeper than this is refused rather than followed.
    static constexpr int kDeepest = 64;

    // The results held by `text`, read from `path` (experiment.h reads
    // the file); throws std::runtime_error naming the file if it is not
    // one JSON object.
    static SavedResults parse(const std::string& path, std::string_view text) {
        return parse(path, text, true);
    }

    // The top-level number under `key`; throws if it is absent, not a
    // number, or too large for a double.
    double number(const std::string& key) const {
        auto it = fields_.find(key);
        if (it == fields_.end()) throw std::runtime_error(path_ + " has no \"" + key + "\"");
        if (it->second.kind != Kind::number)
            throw std::runtime_error(path_ + ": \"" + key + "\" is not a number");
        const double v = std::strtod(it->second.text.c_str(), nullptr);
        if (!std::isfinite(v))
            throw std::runtime_error(path_ + ": \"" + key + "\" = " + excerpt(it->second.text) +
                                     " is too large for a double");
        return v;
    }

    // number(key), which must also be above zero (a time, a size).
    double positive_number(const std::string& key) const {
        const double v = number(key);
        if (!(v > 0))
            throw std::runtime_error(path_ + ": \"" + key + "\" must be above zero, got " +
                                     excerpt(fields_.at(key).text));
        return v;
    }

    // number(key), which must also be zero or more (a count, a size).
    double non_negative_number(const std::string& key) const {
        const double v = number(key);
        if (!(v >= 0))
            throw std::runtime_error(path_ + ": \"" + key + "\" must not be below zero, got " +
                                     excerpt(fields_.at(key).text));
        return v;
    }

    // number(key), which must also lie from `low` to `high` (a share, a
    // percentage, a size that may be zero).
    double number_between(const std::string& key, double low, double high) const {
        const double v = number(key);
        if (!(v >= low && v <= high))
            throw std::runtime_error(path_ + ": \"" + key + "\" must be from " + number_text(low) +
                                     " to " + number_text(high) + ", got " +
                                     excerpt(fields_.at(key).text));
        return v;
    }

    // Checks where the file came from (report.h, with_origin): its
    // "results_format" must be kResultsFormat and its "chapter" `chapter`.
    // Throws std::runtime_error naming the file, what it says and what was
    // expected: a file of another chapter (or the closing table's own
    // output saved under a chapter's name) would be read with that
    // chapter's keys and units, and a file of another format with keys
    // whose meaning may have changed.
    void require_origin(const std::string& chapter) const {
        const std::string expected =
            "chapter \"" + chapter + "\" in results format " + std::to_string(kResultsFormat);
        // What the file says under `key`: "\"chapter\": \"05_queue_simulation\"".
        auto says = [&](const std::string& key) {
            std::string said;
            const auto it = fields_.find(key);
            if (it == fields_.end()) {
                said.append("no \"").append(key).append("\"");
            } else {
                said.append("\"").append(key).append("\": ");
                if (it->second.kind == Kind::string)
                    said.append("\"").append(excerpt(it->second.text)).append("\"");
                else if (it->second.kind == Kind::number)
                    said.append(excerpt(it->second.text));
                else
                    said.append("not a number or a string");
            }
            return said;
        };
        auto it = fields_.find(kResultsFormatKey);
        const bool format_ok = it != fields_.end() && it->second.kind == Kind::number &&
                               it->second.text == std::to_string(kResultsFormat);
        auto ch = fields_.find(kResultsChapterKey);
        const bool chapter_ok =
            ch != fields_.end() && ch->second.kind == Kind::string && ch->second.text == chapter;
        if (format_ok && chapter_ok) return;
        throw std::runtime_error(path_ + ": written as " + says(kResultsFormatKey) + ", " +
                                 says(kResultsChapterKey) + "; expected " + expected);
    }

    bool has(const std::string& key) const { return fields_.count(key) > 0; }
    bool has_number(const std::string& key) const {
        auto it = fields_.find(key);
        return it != fields_.end() && it->second.kind == Kind::number;
    }

    // The top-level string under `key`, escapes decoded (\uXXXX kept as
    // written); throws if it is absent or not a string.
    const std::string& text(const std::string& key) const {
        auto it = fields_.find(key);
        if (it == fields_.end()) throw std::runtime_error(path_ + " has no \"" + key + "\"");
        if (it->second.kind != Kind::string)
            throw std::runtime_error(path_ + ": \"" + key + "\" is not a string");
        return it->second.text;
    }

    // The rows of the top-level table under `key`, an array of objects;
    // each row's errors name the file, the table and the row ("r.json:
    // \"fit\" row 2"). Throws if it is absent or not an array of objects.
    const std::vector<SavedResults>& rows(const std::string& key) const {
        auto it = fields_.find(key);
        if (it == fields_.end()) throw std::runtime_error(path_ + " has no \"" + key + "\"");
        if (it->second.kind != Kind::rows)
            throw std::runtime_error(path_ + ": \"" + key + "\" is not a table of rows");
        return it->second.rows;
    }

  private:
    enum class Kind { number, string, rows, other };
    struct Value {
        Kind kind = Kind::other;
        std::string text;                // a number as written, or a string decoded
        std::vector<SavedResults> rows;  // an array of objects, each read as a file
    };

    // Rows are read from the file's own top-level arrays only, not from a
    // row's arrays: a row's numbers and strings are all the table needs.
    static SavedResults parse(const std::string& path, std::string_view text, bool keep_rows) {
        SavedResults r;
        r.path_ = path;
        r.text_ = text;
        r.keep_rows_ = keep_rows;
        r.parse_object_at_top();
        r.text_ = {};
        return r;
    }

    // "0", "100", "1": the bounds number_between() names.
    static std::string number_text(double v) {
        std::string s = std::to_string(v);
        while (s.find('.') != std::string::npos && (s.back() == '0' || s.back() == '.'))
            s.pop_back();
        return s;
    }

    void parse_object_at_top() {
        skip_space();
        if (peek() != '{') fail("expected '{'");
        parse_object(1, true);
        skip_space();
        if (pos_ != text_.size()) fail("text after the object");
    }

    // At '{'. Top-level fields are kept; nested ones only checked.
    void parse_object(int depth, bool top) {
        if (depth > kDeepest) fail("nested more than " + std::to_string(kDeepest) + " deep");
        expect('{');
        skip_space();
        if (peek() == '}') {
            ++pos_;
            return;
        }
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
                v.kind = read_rows(depth + 1, key, v.rows) ? Kind::rows : Kind::other;
            } else {
                parse_value(depth);
            }
            if (top) {
                if (fields_.count(key)) fail("the key \"" + excerpt(key) + "\" appears twice");
                fields_[key] = v;
            }
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            expect('}');
            return;
        }
    }

    void parse_array(int depth) {
        if (depth > kDeepest) fail("nested more than " + std::to_string(kDeepest) + " deep");
        expect('[');
        skip_space();
        if (peek() == ']') {
            ++pos_;
            return;
        }
        for (;;) {
            skip_space();
            parse_value(depth);
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            expect(']');
            return;
        }
    }

    // At a top-level '['; checks the array like parse_array() and keeps its
    // elements as rows if every one is an object. Returns whether they were.
    bool read_rows(int depth, const std::string& key, std::vector<SavedResults>& rows) {
        if (depth > kDeepest) fail("nested more than " + std::to_string(kDeepest) + " deep");
        expect('[');
        skip_space();
        if (peek() == ']') {
            ++pos_;
            return true;
        }
        bool all_objects = true;
        for (;;) {
            skip_space();
            const std::size_t start = pos_;
            const bool object = peek() == '{';
            parse_value(depth);
            if (object && all_objects) {
                // Read again as a file of its own: its keys are its fields,
                // and a key twice in one row is refused, naming the row.
                std::string row_path = path_;
                row_path += ": \"" + key + "\" row " + std::to_string(rows.size() + 1);
                rows.push_back(parse(row_path, text_.substr(start, pos_ - start), false));
            } else {
                all_objects = false;
                rows.clear();
            }
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            expect(']');
            return all_objects;
        }
    }

    void parse_value(int depth) {
        const char c = peek();
        if (c == '{') return parse_object(depth + 1, false);
        if (c == '[') return parse_array(depth + 1);
        if (c == '"') {
            parse_string();
            return;
        }
        if (c == '-' || is_digit(c)) {
            parse_number();
            return;
        }
        for (std::string_view word : {"true", "false", "null"})
            if (text_.substr(pos_, word.size()) == word) {
                pos_ += word.size();
                return;
            }
        fail("expected a JSON value");
    }

    // JSON's number grammar exactly; returns the number's text.
    std::string parse_number() {
        const std::size_t start = pos_;
        if (peek_or_end() == '-') ++pos_;
        if (peek_or_end() == '0') {
            ++pos_;
        } else if (is_digit(peek_or_end())) {
            while (is_digit(peek_or_end())) ++pos_;
        } else {
            fail("expected a digit");
        }
        if (peek_or_end() == '.') {
            ++pos_;
            if (!is_digit(peek_or_end())) fail("expected a digit after the decimal point");
            while (is_digit(peek_or_end())) ++pos_;
        }
        if (peek_or_end() == 'e' || peek_or_end() == 'E') {
            ++pos_;
            if (peek_or_end() == '+' || peek_or_end() == '-') ++pos_;
            if (!is_digit(peek_or_end())) fail("expected a digit in the exponent");
            while (is_digit(peek_or_end())) ++pos_;
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
            const char e = peek();
            ++pos_;
            switch (e) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u':
                    for (int i = 0; i < 4; ++i, ++pos_)
                        if (!std::isxdigit(static_cast<unsigned char>(peek())))
                            fail("expected four hex digits after \\u");
                    out += "\\u" + std::string(text_.substr(pos_ - 4, 4));
                    break;
                default:
                    --pos_;
                    fail("an unknown escape in a string");
            }
        }
    }

    static bool is_digit(char c) { return c >= '0' && c <= '9'; }
    static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
    char peek_or_end() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
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
