// Reading back what the chapters saved with --save-json.
//
// The closing table must show the numbers the chapters measured in this
// run, not numbers typed again by hand, so it reads each chapter's JSON
// file. Only top-level numbers are needed, but the whole file must be one
// JSON object (RFC 8259): nested objects and arrays, strings and their
// escapes, true, false and null are checked and skipped. A number is JSON's
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

namespace kv {

class SavedResults {
  public:
    // Nesting deeper than this is refused rather than followed.
    static constexpr int kDeepest = 64;

    // The results held by `text`, read from `path` (experiment.h reads
    // the file); throws std::runtime_error naming the file if it is not
    // one JSON object.
    static SavedResults parse(const std::string& path, std::string_view text) {
        SavedResults r;
        r.path_ = path;
        r.text_ = text;
        r.parse_object_at_top();
        r.text_ = {};
        return r;
    }

    // The top-level number under `key`; throws if it is absent, not a
    // number, or too large for a double.
    double number(const std::string& key) const {
        auto it = fields_.find(key);
        if (it == fields_.end()) throw std::runtime_error(path_ + " has no \"" + key + "\"");
        if (!it->second.is_number)
            throw std::runtime_error(path_ + ": \"" + key + "\" is not a number");
        const double v = std::strtod(it->second.text.c_str(), nullptr);
        if (!std::isfinite(v))
            throw std::runtime_error(path_ + ": \"" + key + "\" = " + it->second.text +
                                     " is too large for a double");
        return v;
    }

    // number(key), which must also be above zero (a time, a size).
    double positive_number(const std::string& key) const {
        const double v = number(key);
        if (!(v > 0))
            throw std::runtime_error(path_ + ": \"" + key + "\" must be above zero, got " +
                                     fields_.at(key).text);
        return v;
    }

  private:
    struct Value {
        bool is_number = false;
        std::string text;  // the number as written
    };

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
                v.is_number = true;
                v.text = parse_number();
            } else {
                parse_value(depth);
            }
            if (top) {
                if (fields_.count(key)) fail("the key \"" + key + "\" appears twice");
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
    std::map<std::string, Value> fields_;  // top-level key -> its value
};

}  // namespace kv
