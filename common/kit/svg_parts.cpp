#include "svg_parts.h"

#include <cmath>
#include <cstdio>
#include <utility>

namespace kv {

std::string svg_escape(std::string_view text) {
    static constexpr std::pair<char, const char*> kEntities[] = {
        {'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}, {'\'', "&#39;"}};
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        const char* entity = nullptr;
        for (const auto& [plain, written] : kEntities)
            if (c == plain) entity = written;
        if (entity != nullptr)
            out += entity;
        else
            out += (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') ? '?' : c;
    }
    return out;
}

std::string svg_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

std::string svg_open(double width, double height) {
    return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(width) +
           "\" height=\"" + svg_number(height) +
           "\" font-family=\"sans-serif\" font-size=\"12\">\n"
           "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

std::string svg_text(double x, double y, std::string_view text, std::string_view attributes) {
    return "<text x=\"" + svg_number(x) + "\" y=\"" + svg_number(y) + "\"" +
           std::string(attributes) + ">" + svg_escape(text) + "</text>\n";
}

std::string svg_line(double x1, double x2, double y1, double y2, std::string_view attributes) {
    return "<line x1=\"" + svg_number(x1) + "\" x2=\"" + svg_number(x2) + "\" y1=\"" +
           svg_number(y1) + "\" y2=\"" + svg_number(y2) + "\"" + std::string(attributes) + "/>\n";
}

double svg_tick_step(double span) {
    const double raw = span / 5.0;
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0})
        if (m * power >= raw) return m * power;
    return 10.0 * power;
}

std::string svg_tick_label(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf,
                  v != 0 && (std::fabs(v) >= 1e5 || std::fabs(v) < 1e-2) ? "%.0e" : "%g", v);
    return buf;
}

}  // namespace kv
