// Reading back what the chapters saved with --save-json.
//
// The closing table must show the numbers the chapters measured in this
// run, not numbers typed again by hand, so it reads each chapter's JSON
// file. Only top-level numbers are needed; nested objects and arrays are
// skipped whole, strings with their escapes.
#pragma once

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

namespace kv {

class SavedResults {
  public:
    // Reads `path`; throws std::runtime_error naming the file if it is
    // missing or is not one JSON object.
    static SavedResults load(const std::string& path) {
        std::ifstream in(path);
        if (!in) throw std::runtime_error("cannot read " + path + " (run `make run` first)");
        std::ostringstream text;
        text << in.rdbuf();
        SavedResults r;
        r.path_ = path;
        r.parse(text.str());
        return r;
    }

    // The top-level number under `key`; throws if it is absent or not a number.
    double number(const std::string& key) const {
        auto it = fields_.find(key);
        if (it == fields_.end()) throw std::runtime_error(path_ + " has no \"" + key + "\"");
        char* end = nullptr;
        const double v = std::strtod(it->second.c_str(), &end);
        if (end == it->second.c_str() || *end != '\0')
            throw std::runtime_error(path_ + ": \"" + key + "\" is not a number");
        return v;
    }

  private:
    void parse(const std::string& s) {
        pos_ = 0;
        text_ = &s;
        skip_space();
        expect('{');
        skip_space();
        if (peek() == '}') return;
        while (true) {
            skip_space();
            const std::string key = read_string();
            skip_space();
            expect(':');
            skip_space();
            const std::size_t start = pos_;
            skip_value();
            fields_[key] = s.substr(start, pos_ - start);
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            expect('}');
            return;
        }
    }

    char peek() const {
        if (pos_ >= text_->size()) fail("unexpected end");
        return (*text_)[pos_];
    }
    void expect(char c) {
        if (peek() != c) fail(std::string("expected '") + c + "'");
        ++pos_;
    }
    void skip_space() {
        while (pos_ < text_->size() && std::isspace(static_cast<unsigned char>((*text_)[pos_])))
            ++pos_;
    }
    std::string read_string() {
        expect('"');
        std::string out;
        while (peek() != '"') {
            if (peek() == '\\') ++pos_;  // keep the escaped character as it is
            out += peek();
            ++pos_;
        }
        ++pos_;
        return out;
    }
    // A value of any kind: strings and nested brackets are skipped whole.
    void skip_value() {
        const char c = peek();
        if (c == '"') {
            read_string();
        } else if (c == '{' || c == '[') {
            int depth = 0;
            do {
                const char d = peek();
                if (d == '"') {
                    read_string();
                    continue;
                }
                if (d == '{' || d == '[') ++depth;
                if (d == '}' || d == ']') --depth;
                ++pos_;
            } while (depth > 0);
        } else {
            while (pos_ < text_->size() && !std::strchr(",}] \n\t\r", (*text_)[pos_])) ++pos_;
        }
    }
    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error(path_ + " is not a JSON object: " + what + " at byte " +
                                 std::to_string(pos_));
    }

    std::string path_;
    const std::string* text_ = nullptr;
    std::size_t pos_ = 0;
    std::map<std::string, std::string> fields_;  // key -> the value's JSON text
};

}  // namespace kv
