// What the programs print: aligned tables for people, JSON for notebooks
// and for the book's closing table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kv {

// A JSON string, always valid JSON (RFC 8259: UTF-8 text): quotes and
// backslashes escaped, control characters written \n, \t or \u00XX, and
// each byte that is not valid UTF-8 (a path may hold any) written \ufffd.
std::string json_quote(const std::string& s);
std::string json_number(double value);  // shortest text that reads back exactly; null if not finite
std::string fixed(double value, int decimals);
std::string with_commas(std::uint64_t n);  // "131,072": thousands separated

// One table cell: the text a person reads and the value JSON carries.
struct Cell {
    std::string text;
    std::string json;  // already JSON: a number or a quoted string

    Cell(const char* s) : text(s), json(json_quote(s)) {}
    Cell(const std::string& s) : text(s), json(json_quote(s)) {}
    // Printed with `decimals`, full precision in JSON.
    Cell(double value, int decimals) : text(fixed(value, decimals)), json(json_number(value)) {}
    // "+4.2%", "1.25 s": a number in JSON.
    Cell(const std::string& shown, double value) : text(shown), json(json_number(value)) {}
    Cell(std::int64_t value) : text(std::to_string(value)), json(std::to_string(value)) {}
    Cell(std::uint64_t value) : text(with_commas(value)), json(std::to_string(value)) {}
    Cell(int value) : Cell(static_cast<std::int64_t>(value)) {}
    // Printed as `shown`, carried as `json` (already JSON: a list, an object, null).
    static Cell with_json(const std::string& shown, std::string json) {
        Cell cell(shown);
        cell.json = std::move(json);
        return cell;
    }
};

// "48 MiB", "3 KiB": a byte count in exact binary units, the count itself in JSON.
Cell bytes_cell(std::uint64_t bytes);

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
    Json& add(const std::string& key, const std::vector<Json>& objects);  // an array
    Json& add(const std::string& key, const Table& table) { return add_raw(key, table.to_json()); }
    // An array of one object per item: add_each("queues", rows, row_json).
    template <class Items, class ToJson>
    Json& add_each(const std::string& key, const Items& items, ToJson to_json) {
        std::vector<Json> objects;
        for (const auto& item : items) objects.push_back(to_json(item));
        return add(key, objects);
    }
    Json& add_raw(const std::string& key, const std::string& json);
    // Puts `key` first, with `json` as its value, in place of any field of that name.
    Json& add_first(const std::string& key, const std::string& json);
    std::string str() const;

  private:
    std::vector<std::pair<std::string, std::string>> fields_;
};

// A chapter's findings: one list of named values, each written once and
// rendered from here as text (for people) and as JSON (for notebooks and
// chapter 06). The text keeps the list's order; JSON keys are flat, each
// key once (a second use of a key throws std::logic_error).
class Findings {
  public:
    explicit Findings(std::string title) : title_(std::move(title)) {}

    // "label: value" on a line of its own; JSON "key": value.
    Findings& line(const std::string& key, const std::string& label, const Cell& value);
    // A table under its caption; JSON "key": [{column: value}, ...].
    Findings& table(const std::string& key, const std::string& caption, const Table& table);
    // Findings of their own under their title, indented, their lines'
    // values aligned; JSON "key": {their keys}.
    Findings& group(const std::string& key, const Findings& lines);
    // Words that teach, printed where they stand (a blank line: ""); not in JSON.
    Findings& text(const std::string& words);
    // A value only JSON carries: a list of tokens, an object of details.
    Findings& data(const std::string& key, const Cell& value) { return data_raw(key, value.json); }
    Findings& data(const std::string& key, const Json& object);
    Findings& data(const std::string& key, const std::vector<int>& values);
    Findings& data_raw(const std::string& key, const std::string& json);
    // The one line a reader remembers: printed last, after a blank line; JSON "headline".
    Findings& headline(const std::string& words);

    void print(std::ostream& out) const;
    Json json() const;

  private:
    enum class Kind { line, table, group, text, data };
    struct Item {
        Kind kind;
        std::string key;    // its JSON key ("" for text)
        std::string words;  // the label, caption or sentence
        std::string shown;  // a line's value, or a group's lines, as printed
        std::string json;   // its JSON value
        std::optional<Table> table;
    };
    Findings& add(Item item);
    // The items as text, each line opened by `indent`; values aligned if `align`.
    void print_items(std::ostream& out, const std::string& indent, bool align) const;
    std::string title_;
    std::vector<Item> items_;
    std::string headline_;
};

// Where a results file came from: every results object a chapter writes
// opens with "results_format": 1, "chapter": "02_kv_cache". The format goes
// up whenever a key a reader relies on changes its name, unit or meaning;
// saved_results.h refuses any other format and chapter than it asked for.
inline constexpr const char* kResultsFormatKey = "results_format";
inline constexpr const char* kResultsChapterKey = "chapter";
inline constexpr int kResultsFormat = 1;
// `results` with the two fields first ("chapter" replaced if it was there).
Json with_origin(const Json& results, const std::string& chapter);

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

// A text cell whose JSON keeps the text as given and whose printed form is
// made safe for a terminal (visible): a path, a checkpoint's name.
inline Cell outside_text(const std::string& s) {
    Cell cell(s);
    cell.text = visible(s);
    return cell;
}

// "12.3 ms", "1.20 s": a duration in seconds, in the unit a person reads best.
std::string format_duration(double seconds);
// "128 KiB", "1.5 GiB": bytes in exact binary units.
std::string format_bytes(std::uint64_t bytes);

}  // namespace kv
