#include "report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <stdexcept>

namespace kv {

namespace {

// The length of the valid UTF-8 sequence that starts at s[i] (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF), or 0 if the
// byte there starts none.
std::size_t utf8_sequence(const std::string& s, std::size_t i) {
    auto in = [&](std::size_t k, unsigned low, unsigned high) {
        const unsigned b = k < s.size() ? static_cast<unsigned char>(s[k]) : 0u;
        return b >= low && b <= high;
    };
    const unsigned b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) return 1;
    const std::size_t n = in(i, 0xC2, 0xDF) ? 2 : in(i, 0xE0, 0xEF) ? 3 : in(i, 0xF0, 0xF4) ? 4 : 0;
    // The second byte's range rules out overlong forms, surrogates and U+110000 on.
    const unsigned low = b0 == 0xE0 ? 0xA0 : b0 == 0xF0 ? 0x90 : 0x80;
    const unsigned high = b0 == 0xED ? 0x9F : b0 == 0xF4 ? 0x8F : 0xBF;
    if (n == 0 || !in(i + 1, low, high)) return 0;
    for (std::size_t k = 2; k < n; ++k)
        if (!in(i + k, 0x80, 0xBF)) return 0;
    return n;
}

// "[a, b, c]": each item's text.
template <class Items, class Text>
std::string json_array(const Items& items, Text text) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) out.append(i ? ", " : "").append(text(items[i]));
    return out + "]";
}

std::string ints(const std::vector<int>& values) {
    return json_array(values, [](int v) { return std::to_string(v); });
}

std::string hex_byte(const char* prefix, unsigned char byte) {
    static const char* hex = "0123456789abcdef";
    return prefix + std::string{hex[byte >> 4], hex[byte & 15]};
}

// `s` with each ASCII character written by `ascii`, a byte that is not
// valid UTF-8 by `invalid` (as \xNN if none), the C1 controls as \u00NN if
// `c1`, and the rest of valid UTF-8 as it is.
template <class Ascii>
std::string escaped(const std::string& s, Ascii ascii, const char* invalid, bool c1) {
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
        const auto u = static_cast<unsigned char>(s[i]);
        const std::size_t n = utf8_sequence(s, i);
        if (n == 0)
            out += invalid ? std::string(invalid) : hex_byte("\\x", u);
        else if (n == 2 && c1 && u == 0xC2 && static_cast<unsigned char>(s[i + 1]) <= 0x9F)
            out += hex_byte("\\u00", static_cast<unsigned char>(s[i + 1]));
        else if (n > 1)
            out.append(s, i, n);
        else
            out += ascii(s[i]);
        i += n == 0 ? 1 : n;
    }
    return out;
}

}  // namespace

std::string json_quote(const std::string& s) {
    auto ascii = [](char c) -> std::string {
        if (c == '"' || c == '\\') return std::string{'\\', c};
        if (c == '\n') return "\\n";
        if (c == '\t') return "\\t";
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 ? hex_byte("\\u00", u) : std::string(1, c);
    };
    std::string out = "\"";
    out += escaped(s, ascii, "\\ufffd", false);
    return out += '"';
}

std::string json_number(double value) {
    if (!std::isfinite(value)) return "null";
    char buf[32];
    const auto result = std::to_chars(buf, buf + sizeof buf, value);
    return std::string(buf, result.ptr);
}

std::string visible(const std::string& s) {
    auto ascii = [](char c) -> std::string {
        if (c == '\n') return "\\n";
        if (c == '\r') return "\\r";
        if (c == '\t') return "\\t";
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7F ? hex_byte("\\x", u) : std::string(1, c);
    };
    return escaped(s, ascii, nullptr, true);
}

std::string excerpt(const std::string& s, std::size_t most) {
    const std::string shown = visible(s);
    if (shown.size() <= most) return shown;
    // Cut between characters: never inside a UTF-8 sequence.
    auto start_of_character = [&](std::size_t k) {
        while (k > 0 && k < shown.size() && (static_cast<unsigned char>(shown[k]) & 0xC0) == 0x80)
            --k;
        return k;
    };
    const std::size_t head = start_of_character(most * 2 / 3);
    const std::size_t tail = start_of_character(shown.size() - most / 3);
    return shown.substr(0, head) + "..." + shown.substr(tail) + " (" + with_commas(s.size()) +
           " bytes)";
}

std::string fixed(double value, int decimals) {
    // Every digit: the largest double has 309 before the point, so the text
    // is measured first rather than cut at a buffer's end.
    const int length = std::snprintf(nullptr, 0, "%.*f", decimals, value);
    if (length < 0) return "?";
    std::string text(std::size_t(length) + 1, '\0');
    std::snprintf(text.data(), text.size(), "%.*f", decimals, value);
    text.pop_back();  // the terminating zero snprintf wrote
    return text;
}

// ------------------------------------------------------------------- tables

void Table::add_row(std::vector<Cell> cells) {
    cells.resize(columns_.size(), Cell(""));
    rows_.push_back(std::move(cells));
}

void Table::print(std::ostream& out) const {
    std::vector<std::size_t> width(columns_.size());
    for (std::size_t c = 0; c < columns_.size(); ++c) {
        width[c] = columns_[c].size();
        for (const auto& row : rows_) width[c] = std::max(width[c], row[c].text.size());
    }
    // One line of cells, each padded (numbers on the right), without trailing spaces.
    auto print_line = [&](auto cell_text, auto is_number) {
        std::string line;
        for (std::size_t c = 0; c < columns_.size(); ++c) {
            const std::string s = cell_text(c), space(width[c] - s.size(), ' ');
            line += "  " + (is_number(c) ? space + s : s + space);
        }
        out << line.erase(line.find_last_not_of(' ') + 1) << "\n";
    };
    print_line([&](std::size_t c) { return columns_[c]; }, [](std::size_t c) { return c > 0; });
    print_line([&](std::size_t c) { return std::string(width[c], '-'); },
               [](std::size_t) { return false; });
    for (const auto& row : rows_)
        print_line([&](std::size_t c) { return row[c].text; },
                   [&](std::size_t c) {  // numbers on the right; words, yes/no on the left
                       const char first = row[c].json.empty() ? '"' : row[c].json[0];
                       return first == '-' || (first >= '0' && first <= '9');
                   });
}

std::string Table::to_json() const {
    return json_array(rows_, [&](const std::vector<Cell>& row) {
        std::string out = "{";
        for (std::size_t c = 0; c < columns_.size(); ++c)
            out += (c ? ", " : "") + json_quote(columns_[c]) + ": " + row[c].json;
        return out + "}";
    });
}

// -------------------------------------------------------------------- json

Json& Json::add(const std::string& key, const std::vector<int>& values) {
    return add_raw(key, ints(values));
}

Json& Json::add(const std::string& key, const std::vector<double>& values) {
    return add_raw(key, json_array(values, json_number));
}

std::string Json::str() const {
    std::string out = "{";
    for (const auto& [key, value] : fields)
        out += (out.size() > 1 ? ", " : "") + json_quote(key) + ": " + value;
    return out + "}";
}

Json with_origin(const Json& results, const std::string& chapter) {
    Json json = Json().add(kResultsFormatKey, kResultsFormat).add(kResultsChapterKey, chapter);
    for (const auto& field : results.fields)
        if (field.first != kResultsChapterKey) json.fields.push_back(field);
    return json;
}

// -------------------------------------------------------------- formatting

std::string format_duration(double seconds) {
    if (seconds < 1e-3) return fixed(seconds * 1e6, 1) + " us";
    if (seconds < 1.0) return fixed(seconds * 1e3, seconds < 0.01 ? 2 : 1) + " ms";
    return fixed(seconds, seconds < 10 ? 2 : 1) + " s";
}

std::string with_commas(std::uint64_t n) {
    std::string digits = std::to_string(n), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string format_bytes(std::uint64_t bytes) {
    const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (u < 6 && bytes >> (10 * (u + 1)) > 0) ++u;
    if (u == 0) return std::to_string(bytes) + " bytes";
    // Exact multiples print as whole numbers: "128 KiB", not "128.00 KiB".
    const std::uint64_t unit = std::uint64_t(1) << (10 * u);
    if (bytes % unit == 0) return std::to_string(bytes / unit) + " " + units[u];
    return fixed(double(bytes) / double(unit), 2) + " " + units[u];
}

Cell bytes_cell(std::uint64_t bytes) {
    return Cell::with_json(format_bytes(bytes), std::to_string(bytes));
}
Cell duration_cell(double seconds) {
    return Cell(format_duration(seconds), seconds);
}
Cell times_cell(double ratio, int decimals) {
    return Cell(fixed(ratio, decimals) + " x", ratio);
}
Cell percent_cell(double share, int decimals) {
    return Cell(fixed(100 * share, decimals) + "%", share);
}
Cell rate_cell(double bytes_per_second) {
    const double gb = bytes_per_second / 1e9;
    return Cell(fixed(gb, gb < 1 ? 3 : 1) + " GB/s", bytes_per_second);
}
Cell yes_no(bool yes) {
    return Cell::with_json(yes ? "yes" : "no", yes ? "true" : "false");
}
Cell difference_cell(double difference) {
    return Cell(difference == 0 ? "0 (identical to the last bit)" : json_number(difference),
                difference);
}
Cell outside_text(const std::string& s) {
    Cell cell(s);
    cell.text = visible(s);
    return cell;
}

// ---------------------------------------------------------------- findings

Findings& Findings::add(const std::string& key, const std::string& text, const std::string& json,
                        bool printed) {
    if (!key.empty() &&
        std::any_of(items_.begin(), items_.end(), [&](const Item& i) { return i.key == key; }))
        throw std::logic_error("findings: the key \"" + key + "\" is written twice");
    items_.push_back({key, text, json, printed});
    return *this;
}

Findings& Findings::line(const std::string& key, const std::string& label, const Cell& value) {
    return add(key, label + ": " + value.text, value.json);
}

Findings& Findings::table(const std::string& key, const std::string& caption, const Table& t) {
    std::ostringstream text;
    if (!caption.empty()) text << caption << "\n";
    t.print(text);
    std::string shown = text.str();
    shown.pop_back();
    return add(key, shown, t.to_json());
}

Findings& Findings::data(const std::string& key, const std::vector<int>& values) {
    return data_raw(key, ints(values));
}

Findings& Findings::data_raw(const std::string& key, const std::string& json) {
    return add(key, "", json, false);
}

void Findings::print(std::ostream& out) const {
    out << title_ << "\n\n";
    for (const Item& item : items_)
        if (item.printed) out << item.text << "\n";
}

Json Findings::json() const {
    Json json;
    for (const Item& item : items_)
        if (!item.key.empty()) json.add_raw(item.key, item.json);
    return json;
}

}  // namespace kv
