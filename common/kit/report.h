// What the programs print: aligned tables for people, JSON for notebooks
// and for the book's closing table.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace kv {

// One table cell: the text a person reads and the value JSON carries.
struct Cell {
    std::string text;
    std::string json;  // already JSON: a number or a quoted string

    Cell(const char* s);
    Cell(const std::string& s);
    Cell(double value, int decimals);  // printed with `decimals`, full precision in JSON
    Cell(std::int64_t value);
    Cell(std::uint64_t value);
    Cell(int value) : Cell(static_cast<std::int64_t>(value)) {}
};

class Table {
  public:
    explicit Table(std::vector<std::string> columns) : columns_(std::move(columns)) {}
    void add_row(std::vector<Cell> cells);

    void print(std::ostream& out) const;  // columns padded; numbers right-aligned
    std::string to_json() const;          // [{"column": value, ...}, ...]

  private:
    std::vector<std::string> columns_;
    std::vector<std::vector<Cell>> rows_;
};

// A JSON object built key by key, in order.
class Json {
  public:
    Json& add(const std::string& key, double value);
    Json& add(const std::string& key, std::int64_t value);
    Json& add(const std::string& key, std::uint64_t value);
    Json& add(const std::string& key, int value) { return add(key, std::int64_t(value)); }
    Json& add(const std::string& key, bool value);
    Json& add(const std::string& key, const std::string& value);
    Json& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
    Json& add(const std::string& key, const std::vector<int>& values);
    Json& add(const std::string& key, const std::vector<double>& values);
    Json& add(const std::string& key, const Json& object);
    Json& add(const std::string& key, const std::vector<Json>& objects);  // an array
    Json& add(const std::string& key, const Table& table);
    Json& add_raw(const std::string& key, const std::string& json);
    std::string str() const;

  private:
    std::vector<std::pair<std::string, std::string>> fields_;
};

std::string json_quote(const std::string& s);
std::string json_number(double value);  // shortest text that reads back exactly; null if not finite

// The book's number formatting, one set for every program:
// "3.14": a number with `decimals` digits after the point (printf's %.*f).
// Control characters written as escapes (\n, \r, \t, \x1b), so that a
// message stays one line and "a\r" does not look like "a".
std::string visible(const std::string& s);

std::string fixed(double value, int decimals);
// "12.3 ms", "1.20 s": a duration in seconds, in the unit a person reads best.
std::string format_duration(double seconds);
// "131,072": thousands separated.
std::string with_commas(std::uint64_t n);
// "128 KiB", "1.5 GiB": bytes in exact binary units.
std::string format_bytes(std::uint64_t bytes);

}  // namespace kv
