// What the figure tests share: a check that an SVG file is well-formed XML
// of the kind the book writes (every tag closed in order, attribute values
// quoted, no raw < or stray & in text), and the bars a timeline drew.
#pragma once

#include <cctype>
#include <cstddef>
#include <string>
#include <vector>

namespace kv::test {

// "" if `svg` is well-formed, else what is wrong and where.
inline std::string svg_problem(const std::string& svg) {
    std::vector<std::string> open;
    auto entity_ok = [&](std::size_t at) {  // at: the '&'
        const std::size_t end = svg.find(';', at);
        if (end == std::string::npos || end - at > 6) return false;
        const std::string name = svg.substr(at + 1, end - at - 1);
        if (name == "amp" || name == "lt" || name == "gt" || name == "quot" || name == "apos")
            return true;
        if (name.size() < 2 || name[0] != '#') return false;
        for (std::size_t i = 1; i < name.size(); ++i)
            if (name[i] < '0' || name[i] > '9') return false;
        return true;
    };
    if (svg.rfind("<svg ", 0) != 0) return "does not start with <svg";
    std::size_t i = 0;
    while (i < svg.size()) {
        const char c = svg[i];
        if (c == '&') {
            if (!entity_ok(i)) return "a stray & at " + std::to_string(i);
            ++i;
            continue;
        }
        if (c == '>') return "a raw > in text at " + std::to_string(i);
        if (c != '<') {
            ++i;
            continue;
        }
        // A tag: <name attr="v" ...>, <name .../> or </name>.
        const bool closing = i + 1 < svg.size() && svg[i + 1] == '/';
        std::size_t j = i + (closing ? 2 : 1);
        const std::size_t name_start = j;
        while (j < svg.size() &&
               (std::isalnum(static_cast<unsigned char>(svg[j])) || svg[j] == '-'))
            ++j;
        const std::string name = svg.substr(name_start, j - name_start);
        if (name.empty()) return "a < that starts no tag at " + std::to_string(i);
        bool self_closing = false;
        while (true) {  // attributes
            while (j < svg.size() && svg[j] == ' ') ++j;
            if (j >= svg.size()) return "tag <" + name + "> never ends";
            if (svg[j] == '>') break;
            if (svg.compare(j, 2, "/>") == 0) {
                self_closing = true;
                ++j;
                break;
            }
            if (closing) return "attributes in </" + name + ">";
            const std::size_t eq = svg.find('=', j);
            if (eq == std::string::npos || svg[eq + 1] != '"')
                return "an unquoted attribute in <" + name + "> at " + std::to_string(j);
            const std::size_t end = svg.find('"', eq + 2);
            if (end == std::string::npos) return "an attribute never closed in <" + name + ">";
            for (std::size_t k = eq + 2; k < end; ++k) {
                if (svg[k] == '<') return "a raw < in an attribute of <" + name + ">";
                if (svg[k] == '&' && !entity_ok(k)) return "a stray & in <" + name + ">";
            }
            j = end + 1;
        }
        if (closing) {
            if (open.empty() || open.back() != name)
                return "</" + name + "> closes " +
                       (open.empty() ? "nothing" : "<" + open.back() + ">");
            open.pop_back();
        } else if (!self_closing) {
            open.push_back(name);
        }
        i = j + 1;
        if (open.empty() && i < svg.size() && svg.find_first_not_of("\n", i) != std::string::npos)
            return "text after the closing </svg>";
    }
    if (!open.empty()) return "<" + open.back() + "> is never closed";
    return "";
}

// A bar as drawn: <rect class="bar" x=".." y=".." width=".." ...>.
struct DrawnBar {
    double x, y, width;
};

inline double svg_attribute(const std::string& tag, const std::string& name) {
    const std::size_t at = tag.find(" " + name + "=\"");
    return at == std::string::npos ? -1 : std::stod(tag.substr(at + name.size() + 3));
}

inline std::vector<DrawnBar> drawn_bars(const std::string& svg) {
    std::vector<DrawnBar> bars;
    for (std::size_t at = svg.find("<rect class=\"bar\""); at != std::string::npos;
         at = svg.find("<rect class=\"bar\"", at + 1)) {
        const std::string tag = svg.substr(at, svg.find('>', at) - at);
        bars.push_back(
            {svg_attribute(tag, "x"), svg_attribute(tag, "y"), svg_attribute(tag, "width")});
    }
    return bars;
}

}  // namespace kv::test
