#include "report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ostream>

namespace kv {

std::string json_quote(const std::string& s) {
    std::string out = "\"";
    for (char ch : s) {
        switch (ch) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(ch) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", ch);
                    out += buf;
                } else {
                    out += ch;
                }
        }
    }
    return out + "\"";
}

std::string json_number(double value) {
    if (!std::isfinite(value)) return "null";
    char buf[32];
    const auto result = std::to_chars(buf, buf + sizeof buf, value);
    return std::string(buf, result.ptr);
}

std::string visible(const std::string& s) {
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\n')
            out += "\\n";
        else if (c == '\r')
            out += "\\r";
        else if (c == '\t')
            out += "\\t";
        else if (u < 0x20 || u == 0x7F)
            out += std::string("\\x") + hex[u >> 4] + hex[u & 15];
        else
            out += c;
    }
    return out;
}

std::string fixed(double value, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
    return buf;
}

// ------------------------------------------------------------------- cells

Cell::Cell(const char* s) : text(s), json(json_quote(s)) {}
Cell::Cell(const std::string& s) : text(s), json(json_quote(s)) {}
Cell::Cell(double value, int decimals) : text(fixed(value, decimals)), json(json_number(value)) {}
Cell::Cell(std::int64_t value) : text(std::to_string(value)), json(std::to_string(value)) {}
Cell::Cell(std::uint64_t value) : text(with_commas(value)), json(std::to_string(value)) {}

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
    std::string out = "[";
    for (std::size_t r = 0; r < rows_.size(); ++r) {
        out += r ? ", {" : "{";
        for (std::size_t c = 0; c < columns_.size(); ++c)
            out += (c ? ", " : "") + json_quote(columns_[c]) + ": " + rows_[r][c].json;
        out += "}";
    }
    return out + "]";
}

// -------------------------------------------------------------------- json

Json& Json::add_raw(const std::string& key, const std::string& json) {
    fields_.emplace_back(key, json);
    return *this;
}
Json& Json::add(const std::string& key, double v) {
    return add_raw(key, json_number(v));
}
Json& Json::add(const std::string& key, std::int64_t v) {
    return add_raw(key, std::to_string(v));
}
Json& Json::add(const std::string& key, std::uint64_t v) {
    return add_raw(key, std::to_string(v));
}
Json& Json::add(const std::string& key, bool v) {
    return add_raw(key, v ? "true" : "false");
}
Json& Json::add(const std::string& key, const std::string& v) {
    return add_raw(key, json_quote(v));
}
Json& Json::add(const std::string& key, const Json& object) {
    return add_raw(key, object.str());
}
Json& Json::add(const std::string& key, const std::vector<Json>& objects) {
    std::string list = "[";
    for (std::size_t i = 0; i < objects.size(); ++i) {
        if (i) list += ",";
        list += objects[i].str();
    }
    list += "]";
    return add_raw(key, list);
}
Json& Json::add(const std::string& key, const Table& table) {
    return add_raw(key, table.to_json());
}

Json& Json::add(const std::string& key, const std::vector<int>& values) {
    std::string out = "[";
    for (std::size_t i = 0; i < values.size(); ++i)
        out += (i ? ", " : "") + std::to_string(values[i]);
    return add_raw(key, out + "]");
}

Json& Json::add(const std::string& key, const std::vector<double>& values) {
    std::string out = "[";
    for (std::size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + json_number(values[i]);
    return add_raw(key, out + "]");
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

}  // namespace kv
