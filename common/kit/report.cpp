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

// "[a, b, c]": each item's text, `separator` between.
template <class Items, class Text>
std::string json_array(const Items& items, const char* separator, Text text) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i)
        out.append(i ? separator : "").append(text(items[i]));
    return out + "]";
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
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
    return buf;
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
    auto pad = [&](const std::string& s, std::size_t c, bool right) {
        const std::string space(width[c] - s.size(), ' ');
        return right ? space + s : s + space;
    };
    auto is_number = [](const Cell& cell) { return !cell.json.empty() && cell.json[0] != '"'; };
    // Each line is built whole, then printed without its trailing spaces.
    auto print_line = [&](std::string line) {
        line.erase(line.find_last_not_of(' ') + 1);
        out << line << "\n";
    };
    std::string line;
    for (std::size_t c = 0; c < columns_.size(); ++c) line += "  " + pad(columns_[c], c, c > 0);
    print_line(line);
    line.clear();
    for (std::size_t c = 0; c < columns_.size(); ++c) line += "  " + std::string(width[c], '-');
    print_line(line);
    for (const auto& row : rows_) {
        line.clear();
        for (std::size_t c = 0; c < columns_.size(); ++c)
            line += "  " + pad(row[c].text, c, is_number(row[c]));
        print_line(line);
    }
}

std::string Table::to_json() const {
    return json_array(rows_, ", ", [&](const std::vector<Cell>& row) {
        std::string out = "{";
        for (std::size_t c = 0; c < columns_.size(); ++c)
            out += (c ? ", " : "") + json_quote(columns_[c]) + ": " + row[c].json;
        return out + "}";
    });
}

// -------------------------------------------------------------------- json

Json& Json::add_raw(const std::string& key, const std::string& json) {
    fields_.emplace_back(key, json);
    return *this;
}

Json& Json::add_first(const std::string& key, const std::string& json) {
    std::erase_if(fields_, [&](const auto& field) { return field.first == key; });
    fields_.emplace(fields_.begin(), key, json);
    return *this;
}

Json with_origin(const Json& results, const std::string& chapter) {
    Json json = results;
    json.add_first(kResultsChapterKey, json_quote(chapter));
    json.add_first(kResultsFormatKey, std::to_string(kResultsFormat));
    return json;
}

Json& Json::add(const std::string& key, const std::vector<Json>& objects) {
    return add_raw(key, json_array(objects, ",", [](const Json& object) { return object.str(); }));
}

Json& Json::add(const std::string& key, const std::vector<int>& values) {
    return add_raw(key, json_array(values, ", ", [](int v) { return std::to_string(v); }));
}

Json& Json::add(const std::string& key, const std::vector<double>& values) {
    return add_raw(key, json_array(values, ", ", json_number));
}

std::string Json::str() const {
    std::string out = "{";
    for (std::size_t i = 0; i < fields_.size(); ++i)
        out += (i ? ", " : "") + json_quote(fields_[i].first) + ": " + fields_[i].second;
    return out + "}";
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
    double value = static_cast<double>(bytes);
    while (value >= 1024.0 && u < 6) {
        value /= 1024.0;
        ++u;
    }
    if (u == 0) return std::to_string(bytes) + " bytes";
    // Exact multiples print as whole numbers: "128 KiB", not "128.00 KiB".
    const std::uint64_t unit = std::uint64_t(1) << (10 * u);
    if (bytes % unit == 0) return std::to_string(bytes / unit) + " " + units[u];
    return fixed(value, 2) + " " + units[u];
}

// ---------------------------------------------------------------- findings

Cell bytes_cell(std::uint64_t bytes) {
    return Cell::with_json(format_bytes(bytes), std::to_string(bytes));
}

Findings& Findings::add(Item item) {
    if (!item.key.empty() &&
        std::any_of(items_.begin(), items_.end(), [&](const Item& i) { return i.key == item.key; }))
        throw std::logic_error("findings: the key \"" + item.key + "\" is written twice");
    items_.push_back(std::move(item));
    return *this;
}

Findings& Findings::line(const std::string& key, const std::string& label, const Cell& value) {
    return add({Kind::line, key, label, value.text, value.json, std::nullopt});
}

Findings& Findings::table(const std::string& key, const std::string& caption, const Table& t) {
    return add({Kind::table, key, caption, "", t.to_json(), t});
}

Findings& Findings::group(const std::string& key, const Findings& lines) {
    std::ostringstream shown;
    lines.print_items(shown, "  ", true);
    return add({Kind::group, key, lines.title_, shown.str(), lines.json().str(), std::nullopt});
}

Findings& Findings::text(const std::string& words) {
    return add({Kind::text, "", words, "", "", std::nullopt});
}

Findings& Findings::data(const std::string& key, const Json& object) {
    return data_raw(key, object.str());
}

Findings& Findings::data(const std::string& key, const std::vector<int>& values) {
    return data_raw(key, json_array(values, ", ", [](int v) { return std::to_string(v); }));
}

Findings& Findings::data_raw(const std::string& key, const std::string& json) {
    return add({Kind::data, key, "", "", json, std::nullopt});
}

Findings& Findings::headline(const std::string& words) {
    headline_ = words;
    return *this;
}

void Findings::print_items(std::ostream& out, const std::string& indent, bool align) const {
    std::size_t width = 0;
    for (const Item& item : items_)
        if (item.kind == Kind::line && align) width = std::max(width, item.words.size());
    std::ostringstream text;
    for (const Item& item : items_) switch (item.kind) {
            case Kind::line:
                text << item.words << ":"
                     << std::string(width + 1 - std::min(width, item.words.size()), ' ')
                     << item.shown << "\n";
                break;
            case Kind::table:
                if (!item.words.empty()) text << item.words << "\n";
                item.table->print(text);
                break;
            case Kind::group:
                if (!item.words.empty()) text << item.words << "\n";
                text << item.shown;
                break;
            case Kind::text:
                text << item.words << "\n";
                break;
            case Kind::data:
                break;
        }
    // Every line indented, a value's own continuation lines too; blank lines stay blank.
    std::istringstream lines(text.str());
    for (std::string line; std::getline(lines, line);)
        out << (line.empty() ? "" : indent) << line << "\n";
}

void Findings::print(std::ostream& out) const {
    out << title_ << "\n\n";
    print_items(out, "", false);
    if (!headline_.empty()) out << "\n" << headline_ << "\n";
}

Json Findings::json() const {
    Json json;
    for (const Item& item : items_)
        if (item.kind != Kind::text) json.add_raw(item.key, item.json);
    if (!headline_.empty()) json.add("headline", headline_);
    return json;
}

}  // namespace kv
