// What the programs print: a chapter's findings, one list of named values
// rendered as aligned text for people and as JSON for notebooks and for the
// book's closing table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kv {

// A JSON string, always valid JSON (RFC 8259: UTF-8 text): quotes and
// backslashes escaped, control characters written \n, \t or \u00XX, and
// each byte that is not valid UTF-8 (a path may hold any) written \ufffd.
std::string json_quote(const std::string& s);
std::string json_number(double value);  // shortest text that reads back exactly; null if not finite
std::string fixed(double value, int decimals);
std::string with_commas(std::uint64_t n);       // "131,072"
std::string format_duration(double seconds);    // "12.3 ms", "1.20 s"
std::string format_bytes(std::uint64_t bytes);  // "128 KiB", "1.50 GiB": exact binary units

// The parts as one text, whole numbers in decimal: concat("batch ", 8, " of ", name).
// (A fraction has no one way to print: give it as fixed(x, 2) or format_duration(x).)
template <class... Parts>
std::string concat(const Parts&... parts) {
    std::string out;
    auto append = [&out](const auto& part) {
        using Part = std::decay_t<decltype(part)>;
        static_assert(!std::is_floating_point_v<Part> && !std::is_same_v<Part, bool>);
        if constexpr (std::is_integral_v<Part>)
            out += std::to_string(part);
        else
            out += part;
    };
    (append(parts), ...);
    return out;
}

// Text made safe to print on one line of a terminal, for every path or
// text from outside that a program prints: control characters as escapes
// (\n, \r, \x1b), the C1 controls (which a terminal may take as an escape
// sequence) as \u0080 to \u009f, bytes that are not valid UTF-8 as \xNN;
// valid UTF-8 text as it is.
std::string visible(const std::string& s);

// visible(s), at most about `most` characters: a longer text keeps its
// beginning and end around "..." and says how many bytes it had
// ("123...789 (100,000 bytes)"). Values are quoted with kMostQuoted, paths
// with kMostQuotedPath.
inline constexpr std::size_t kMostQuoted = 60;
inline constexpr std::size_t kMostQuotedPath = 512;
std::string excerpt(const std::string& s, std::size_t most = kMostQuoted);

// One value: the text a person reads and the JSON it is saved as.
struct Cell {
    std::string text;
    std::string json;  // already JSON: a number, a quoted string, true, null, an object

    Cell(const char* s) : Cell(std::string(s)) {}
    Cell(const std::string& s) : text(s), json(json_quote(s)) {}
    Cell(double value, int decimals) : text(fixed(value, decimals)), json(json_number(value)) {}
    Cell(const std::string& shown, double value) : text(shown), json(json_number(value)) {}
    Cell(std::int64_t value) : text(std::to_string(value)), json(std::to_string(value)) {}
    Cell(std::uint64_t value) : text(with_commas(value)), json(std::to_string(value)) {}
    Cell(int value) : Cell(static_cast<std::int64_t>(value)) {}
    // Printed as `shown`, carried as `json` (already JSON: null, an object).
    static Cell with_json(const std::string& shown, std::string json) {
        Cell cell(shown);
        cell.json = std::move(json);
        return cell;
    }
};

// The cells every chapter shows the same way.
Cell bytes_cell(std::uint64_t bytes);               // "48 MiB"; the count in JSON
Cell duration_cell(double seconds);                 // "12.3 ms"; seconds in JSON
Cell times_cell(double ratio, int decimals = 1);    // "5.3 x"
Cell percent_cell(double share, int decimals = 1);  // "75.0%"; the fraction in JSON
Cell rate_cell(double bytes_per_second);            // "1.2 GB/s"; bytes per second in JSON
Cell yes_no(bool yes);                              // "yes" or "no"; true or false in JSON
Cell difference_cell(double difference);            // "0 (identical to the last bit)" or the number
Cell outside_text(const std::string& s);            // a path: visible(s), as given in JSON

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
    Json& add(const std::string& key, double v) { return add_raw(key, json_number(v)); }
    Json& add(const std::string& key, std::int64_t v) { return add_raw(key, std::to_string(v)); }
    Json& add(const std::string& key, std::uint64_t v) { return add_raw(key, std::to_string(v)); }
    Json& add(const std::string& key, int v) { return add(key, std::int64_t(v)); }
    Json& add(const std::string& key, bool v) { return add_raw(key, v ? "true" : "false"); }
    Json& add(const std::string& key, const std::string& v) { return add_raw(key, json_quote(v)); }
    Json& add(const std::string& key, const char* v) { return add(key, std::string(v)); }
    Json& add(const std::string& key, const std::vector<int>& values);
    Json& add(const std::string& key, const std::vector<double>& values);
    Json& add(const std::string& key, const Json& object) { return add_raw(key, object.str()); }
    Json& add(const std::string& key, const Table& table) { return add_raw(key, table.to_json()); }
    Json& add(const std::string& key, const std::vector<Json>& objects) {
        return add_each(key, objects, [](const Json& object) { return object; });
    }
    // An array of one object per item: add_each("queues", rows, row_json).
    template <class Items, class ToJson>
    Json& add_each(const std::string& key, const Items& items, ToJson to_json) {
        std::string array = "[";
        for (const auto& item : items)
            array.append(array.size() > 1 ? "," : "").append(to_json(item).str());
        return add_raw(key, array + "]");
    }
    Json& add_raw(const std::string& key, const std::string& json) {
        fields.emplace_back(key, json);
        return *this;
    }
    std::string str() const;

    std::vector<std::pair<std::string, std::string>> fields;  // (key, JSON value), in order
};

// A chapter's findings: one list of named values, each written once and
// rendered from here as text and as JSON. The text keeps the list's order;
// JSON keys are flat, each key once (a second use throws std::logic_error).
class Findings {
  public:
    explicit Findings(std::string title) : title_(std::move(title)) {}

    // "label: value" on a line of its own; JSON "key": value.
    Findings& line(const std::string& key, const std::string& label, const Cell& value);
    // A table under its caption (none if ""); JSON "key": [{column: value}, ...].
    Findings& table(const std::string& key, const std::string& caption, const Table& table);
    // Words that teach, printed where they stand ("" for a blank line); not in JSON.
    Findings& text(const std::string& words) { return add("", words, ""); }
    // A value only JSON carries: the tokens, a figure chapter 06 reads.
    Findings& data(const std::string& key, const Cell& value) { return data_raw(key, value.json); }
    Findings& data(const std::string& key, const std::vector<int>& values);
    Findings& data_raw(const std::string& key, const std::string& json);
    // The one line a reader remembers: printed last, after a blank line; JSON "headline".
    Findings& headline(const std::string& words) {
        return add("headline", "\n" + words, json_quote(words));
    }

    void print(std::ostream& out) const;
    Json json() const;

  private:
    struct Item {
        std::string key;   // its JSON key ("" for text alone)
        std::string text;  // as printed, lines ending in \n; none for data
        std::string json;  // its JSON value
        bool printed;
    };
    Findings& add(const std::string& key, const std::string& text, const std::string& json,
                  bool printed = true);
    std::string title_;
    std::vector<Item> items_;
};

// Where a results file came from: every results object a chapter writes
// opens with "results_format": 1, "chapter": "02_kv_cache". The format goes
// up whenever a key a reader relies on changes its name, unit or meaning;
// the closing table refuses any other format and chapter than it asked for.
inline constexpr const char* kResultsFormatKey = "results_format";
inline constexpr const char* kResultsChapterKey = "chapter";
inline constexpr int kResultsFormat = 1;
// `results` with the two fields first (any other "chapter" left out).
Json with_origin(const Json& results, const std::string& chapter);

}  // namespace kv
