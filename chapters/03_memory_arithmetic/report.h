// What chapter 03 prints: the price derived factor by factor, every
// layout and width, the budget's count, the demo cache against the formula,
// the resident memory and the plots (the price against the context, and
// the cache's layout in memory); or all of it as one JSON object. The
// arithmetic is in memory_arithmetic.h and cache_layout.h; this file only
// lays it out.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "../../common/core/memory_arithmetic.h"
#include "../../common/kit/files.h"
#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/kit/svg_parts.h"
#include "../../common/kit/svg_plot.h"
#include "cache_layout.h"
#include "experiment.h"
#include "measured_cache.h"

namespace kv::ch03 {

// A size as a person reads it with the exact count beside it:
// "512 MiB (536,870,912)". JSON carries the byte count.
inline Cell size_cell(std::uint64_t bytes) {
    Cell cell(bytes);
    cell.text = format_bytes(bytes) + " (" + with_commas(bytes) + ")";
    return cell;
}

// The same in a sentence: "512 MiB (536,870,912 bytes)".
inline std::string size_words(std::uint64_t bytes) {
    return format_bytes(bytes) + " (" + with_commas(bytes) + " bytes)";
}

inline std::string bits_name(std::uint64_t bytes_per_number) {
    return std::to_string(8 * bytes_per_number) + "-bit";
}

// ------------------------------------------------------------ derivation

// Prints the derivation (Results::derivation), one step a line:
//         x 32  layers    ->     64 vectors
inline void print_derivation(std::ostream& out, const std::vector<PriceFactor>& steps) {
    std::size_t factor_width = 0, meaning_width = 0;
    for (const PriceFactor& f : steps) {
        factor_width = std::max(factor_width, with_commas(f.factor).size() + 2);
        meaning_width = std::max(meaning_width, f.meaning.size());
    }
    const std::size_t product_width = with_commas(steps.back().product).size();
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const std::string factor = (i ? "x " : "") + with_commas(steps[i].factor);
        const std::string product = with_commas(steps[i].product);
        out << "  " << std::string(factor_width - factor.size(), ' ') << factor << "  "
            << steps[i].meaning << std::string(meaning_width - steps[i].meaning.size(), ' ')
            << "  -> " << std::string(product_width - product.size(), ' ') << product << " "
            << steps[i].unit;
        if (i + 2 == steps.size()) out << " = " << format_bytes(steps[i].product) << " per token";
        if (i + 1 == steps.size())
            out << " = " << format_bytes(steps[i].product) << " per conversation";
        out << "\n";
    }
}

// The same steps for --json.
inline Table derivation_table(const std::vector<PriceFactor>& steps) {
    Table table({"factor", "meaning", "product", "unit"});
    for (const PriceFactor& f : steps) table.add_row({f.factor, f.meaning, f.product, f.unit});
    return table;
}

// ------------------------------------------------------------- the tables

// Every attention layout at every number width: per token and per conversation.
inline Table layout_table(const PriceOptions& o) {
    Table table({"layout", "KV heads", "numbers", "per token", "per conversation"});
    for (const AttentionLayout& layout : attention_layouts(o.heads, o.shape.kv_heads))
        for (std::uint64_t bytes : number_widths(o.shape.bytes_per_number)) {
            const CacheShape s = with_layout(o.shape, layout.kv_heads, bytes);
            table.add_row({layout.name, layout.kv_heads, bits_name(bytes),
                           size_cell(bytes_per_token(s)), size_cell(cache_bytes(s, o.context))});
        }
    return table;
}

// Conversations the budget holds (Results::fits), per layout at the chosen
// width, reserving the whole context vs holding only the mean tokens.
inline Table budget_table(const std::vector<LayoutFit>& fits) {
    Table table({"layout", "KV heads", "reserved each", "fit reserved", "held each", "fit held",
                 "unused (%)"});
    for (const auto& [layout, fit] : fits)
        table.add_row({layout.name, layout.kv_heads, size_cell(fit.reserved_bytes),
                       fit.fit_reserving, size_cell(fit.held_bytes), fit.fit_holding,
                       Cell(fit.waste_percent, 1)});
    return table;
}

// The demo model's cache priced three ways at each moment.
inline Table reading_table(const std::vector<CacheReading>& readings) {
    Table table({"moment", "tokens", "formula (this chapter)", "Config::kv_bytes",
                 "KVCache reports", "agree"});
    for (const CacheReading& r : readings)
        table.add_row({r.moment, r.tokens, size_cell(r.formula), r.config_kv, r.cache_says,
                       r.agree() ? "yes" : "NO"});
    return table;
}

// "2 x 6 x 2 x 32 x 4": the factors of bytes_per_token(), for one line.
inline std::string factors_text(const CacheShape& s) {
    std::string text;
    for (const PriceFactor& f : price_factors(s))
        text += (text.empty() ? "" : " x ") + with_commas(f.factor);
    return text;
}

// The resident-memory measurement, in words: what grew, and by how much
// more (or less) than the allocation.
inline void print_resident_growth(std::ostream& out, const ResidentGrowth& g) {
    out << "  formula (cache_bytes):       " << size_words(g.formula) << "\n"
        << "  KVCache::bytes_allocated():  " << size_words(g.allocated) << "\n";
    if (!g.growth) {
        out << "  resident memory: not readable here (no /proc/self/statm)\n";
        return;
    }
    const std::int64_t extra = *g.growth - std::int64_t(g.allocated);
    const std::uint64_t magnitude = std::uint64_t(extra < 0 ? -extra : extra);
    const std::string pages = magnitude % g.page_size == 0
                                  ? std::to_string(magnitude / g.page_size)
                                  : fixed(double(magnitude) / double(g.page_size), 1);
    out << "  resident memory grew by:     "
        << (*g.growth < 0 ? "minus " + size_words(std::uint64_t(-*g.growth))
                          : size_words(std::uint64_t(*g.growth)))
        << "\n"
        << "  difference:                  " << (extra < 0 ? "-" : "+") << with_commas(magnitude)
        << " bytes = " << pages << (pages == "1" ? " page of " : " pages of ")
        << with_commas(g.page_size) << " bytes ("
        << fixed(100.0 * double(magnitude) / double(g.allocated), 3) << "% of the cache)\n";
}

inline Json resident_json(const ResidentGrowth& g) {
    Json json;
    json.add("tokens", g.tokens).add("formula", g.formula).add("allocated", g.allocated);
    if (g.growth)
        json.add("resident_growth", *g.growth);
    else
        json.add_raw("resident_growth", "null");
    return json.add("page_size", g.page_size);
}

// ---------------------------------------------------------------- the plot

// Cache bytes against context length, one line per layout at the chosen
// width, with the budget as a dashed line. The x axis runs a quarter past
// the context at which the grouped-query cache alone fills the budget; a
// steeper line stops a quarter above the budget, so the budget stays
// readable.
inline std::string write_price_plot(const PriceOptions& o, std::uint64_t budget_bytes,
                                    const std::string& path) {
    const double gib = 1073741824.0;
    const CacheShape chosen = o.shape;
    const double x_max = std::max(1.0, 1.25 * double(tokens_that_fit(budget_bytes, chosen)));
    const double y_cap = 1.25 * double(budget_bytes) / gib;
    SvgPlot plot("KV cache of one conversation against its context (" +
                     bits_name(o.shape.bytes_per_number) + ")",
                 "context length (thousands of tokens)", "KV cache (GiB)");
    for (const AttentionLayout& layout : attention_layouts(o.heads, o.shape.kv_heads)) {
        const CacheShape s = with_layout(o.shape, layout.kv_heads, o.shape.bytes_per_number);
        const double gib_per_token = double(bytes_per_token(s)) / gib;
        std::vector<double> xs, ys;
        for (int i = 0; i <= 20; ++i) {
            const double tokens = x_max * i / 20;
            if (tokens * gib_per_token > y_cap) {
                const double leaves = y_cap / gib_per_token / 1000;  // where the line leaves
                if (xs.back() < leaves) xs.push_back(leaves), ys.push_back(y_cap);
                break;
            }
            xs.push_back(tokens / 1000);
            ys.push_back(tokens * gib_per_token);
        }
        plot.add_series(layout.name + " (" + std::to_string(layout.kv_heads) + " KV)", xs, ys);
    }
    plot.add_hline("budget " + format_bytes(budget_bytes), double(budget_bytes) / gib);
    return plot.write(path);
}

// ------------------------------------------------------- the layout plot

// One byte offset the layout plot prints, and the number it points at, so
// that the tests can hold it to the address a real KVCache uses.
struct LayoutLabel {
    bool in_values;  // an offset into values_ (otherwise keys_)
    std::uint64_t layer, position, kv_head, number;
    std::uint64_t offset;  // the bytes printed: from the start of its array
};

struct LayoutPlot {
    std::string svg;
    std::vector<LayoutLabel> labels;  // every offset the picture prints, in drawing order
};

// cache_layout.h drawn to scale, one level of the shape a row: keys_ by
// layer; layer 0 by position; position `token` of it by KV head; KV head 0
// of that by number; then values_, the second allocation. Each row is the
// piece of the row above that a grey funnel points at, widened to the page;
// position `token`'s bytes are red in every row that shows them. Every
// offset printed is layout.offset() of the number it names.
inline LayoutPlot cache_layout_plot(const CacheLayout& layout, std::uint64_t token) {
    const double W = 960, x0 = 80, x1 = 920, row_h = 24;
    const CacheShape& s = layout.shape;
    LayoutPlot plot;
    std::string& out = plot.svg;
    auto text = [&](double x, double y, const std::string& t, const std::string& attributes) {
        out += "<text x=\"" + svg_number(x) + "\" y=\"" + svg_number(y) + "\"" + attributes + ">" +
               svg_escape(t) + "</text>\n";
    };
    auto rect = [&](double x, double y, double w, double h, const std::string& fill,
                    const std::string& stroke) {
        out += "<rect x=\"" + svg_number(x) + "\" y=\"" + svg_number(y) + "\" width=\"" +
               svg_number(std::max(w, 0.5)) + "\" height=\"" + svg_number(h) + "\" fill=\"" + fill +
               "\"" + (stroke.empty() ? "" : " stroke=\"" + stroke + "\"") + "/>\n";
    };
    // One row: `n` equal cells over [x0, x1], and under it the offset of
    // every k-th boundary, k the smallest power of two that leaves room
    // (always the first and the last).
    struct Cell {
        std::string name;
        bool red;
    };
    auto row = [&](double y, const std::string& heading, std::uint64_t n, auto cell, auto boundary,
                   const std::string& fill) {
        text(x0, y - 6, heading, " font-weight=\"bold\"");
        const double w = (x1 - x0) / double(n);
        for (std::uint64_t i = 0; i < n; ++i) {
            const Cell c = cell(i);
            rect(x0 + w * double(i), y, w, row_h, c.red ? "#d62728" : fill, w >= 3 ? "#555" : "");
            const double font = w >= 40 ? 12 : w >= 20 ? 10 : 8;
            if (0.62 * font * double(c.name.size()) <= w - 2)
                text(x0 + w * (double(i) + 0.5), y + row_h / 2 + font / 3, c.name,
                     " text-anchor=\"middle\" font-size=\"" + svg_number(font) + "\"" +
                         (c.red ? " fill=\"white\"" : ""));
        }
        std::uint64_t k = 1;
        while (double(k) * w < 64) k *= 2;
        for (std::uint64_t i = 0; i <= n; ++i) {
            if (i % k != 0 && i != n) continue;
            if (i != n && i != 0 && double(n - i) * w < 64) continue;  // too near the last
            const LayoutLabel label = boundary(i);
            plot.labels.push_back(label);
            text(x0 + w * double(i), y + row_h + 13, with_commas(label.offset),
                 " text-anchor=\"middle\" font-size=\"10\" fill=\"#333\"");
        }
    };
    // The grey funnel from [a, b] under one row to the whole of the next.
    auto funnel = [&](double a, double b, double from_y, double to_y) {
        out += "<polygon points=\"" + svg_number(a) + "," + svg_number(from_y) + " " +
               svg_number(b) + "," + svg_number(from_y) + " " + svg_number(x1) + "," +
               svg_number(to_y) + " " + svg_number(x0) + "," + svg_number(to_y) +
               "\" fill=\"#eeeeee\" stroke=\"#bbbbbb\"/>\n";
    };
    const double cell_x = x1 - x0;  // the width of a row
    const std::uint64_t L = s.layers, P = layout.capacity, H = s.kv_heads, D = s.head_size;
    const std::string key_fill = "#cfe2f3", value_fill = "#d9ead3";
    const std::string p = std::to_string(token);

    text(W / 2, 24,
         "How KVCache keeps the demo model's keys and values: (layer, position, KV head, number)",
         " text-anchor=\"middle\" font-size=\"15\"");
    text(W / 2, 44,
         std::to_string(L) + " layers, " + std::to_string(P) + " positions reserved, " +
             std::to_string(H) + " KV heads of " + std::to_string(D) + " numbers of " +
             std::to_string(s.bytes_per_number) +
             " bytes; each offset in bytes from the start of its array; red: position " + p,
         " text-anchor=\"middle\"");

    // keys_, layer by layer, with position `token`'s piece of each layer.
    double y = 80;
    row(
        y,
        "keys_: one allocation of " + with_commas(layout.array_bytes()) + " bytes, " +
            std::to_string(L) + " layers of " + with_commas(layout.layer_bytes()),
        L,
        [&](std::uint64_t l) {
            return Cell{"layer " + std::to_string(l), false};
        },
        [&](std::uint64_t l) { return LayoutLabel{false, l, 0, 0, 0, layout.offset(l, 0)}; },
        key_fill);
    for (std::uint64_t l = 0; l < L; ++l)
        rect(x0 + cell_x * double(layout.offset(l, token)) / double(layout.array_bytes()), y,
             cell_x * double(layout.position_bytes()) / double(layout.array_bytes()), row_h,
             "#d62728", "");
    const double layer_w = cell_x / double(L);
    funnel(x0, x0 + layer_w, y + row_h + 18, y + row_h + 48);

    // Layer 0, position by position.
    y += row_h + 70;
    row(
        y,
        "layer 0 of keys_: " + std::to_string(P) + " positions of " +
            with_commas(layout.position_bytes()) + " bytes",
        P,
        [&](std::uint64_t i) {
            return Cell{std::to_string(i), i == token};
        },
        [&](std::uint64_t i) { return LayoutLabel{false, 0, i, 0, 0, layout.offset(0, i)}; },
        key_fill);
    const double position_w = cell_x / double(P);
    funnel(x0 + position_w * double(token), x0 + position_w * double(token + 1), y + row_h + 18,
           y + row_h + 48);

    // Position `token` of layer 0, KV head by KV head.
    y += row_h + 70;
    row(
        y,
        "position " + p + " of layer 0: " + std::to_string(H) + " KV heads of " +
            with_commas(layout.head_bytes()) + " bytes (attention reads KV head h at h x " +
            std::to_string(D) + " numbers)",
        H,
        [&](std::uint64_t h) {
            return Cell{"KV head " + std::to_string(h), true};
        },
        [&](std::uint64_t h) {
            return LayoutLabel{false, 0, token, h, 0, layout.offset(0, token, h)};
        },
        key_fill);
    funnel(x0, x0 + cell_x / double(H), y + row_h + 18, y + row_h + 48);

    // KV head 0 of it, number by number.
    y += row_h + 70;
    row(
        y,
        "KV head 0 of position " + p + ", layer 0: " + std::to_string(D) + " numbers of " +
            std::to_string(s.bytes_per_number) + " bytes",
        D,
        [&](std::uint64_t d) {
            return Cell{std::to_string(d), true};
        },
        [&](std::uint64_t d) {
            return LayoutLabel{false, 0, token, 0, d, layout.offset(0, token, 0, d)};
        },
        key_fill);

    // values_: the second allocation, the same shape.
    y += row_h + 62;
    row(
        y,
        "values_: a second allocation of " + with_commas(layout.array_bytes()) +
            " bytes, the same shape",
        L,
        [&](std::uint64_t l) {
            return Cell{"layer " + std::to_string(l), false};
        },
        [&](std::uint64_t l) { return LayoutLabel{true, l, 0, 0, 0, layout.offset(l, 0)}; },
        value_fill);
    for (std::uint64_t l = 0; l < L; ++l)
        rect(x0 + cell_x * double(layout.offset(l, token)) / double(layout.array_bytes()), y,
             cell_x * double(layout.position_bytes()) / double(layout.array_bytes()), row_h,
             "#d62728", "");

    // One token in words: its pieces and where they start.
    y += row_h + 44;
    text(x0, y,
         "Position " + p + "'s keys and values: 2 arrays x " + std::to_string(L) + " layers = " +
             with_commas(2 * L) + " pieces of " + with_commas(layout.position_bytes()) +
             " bytes = " + with_commas(layout.token_bytes()) + " bytes (2 x " + std::to_string(L) +
             " x " + std::to_string(H) + " x " + std::to_string(D) + " x " +
             std::to_string(s.bytes_per_number) + ", the bytes per token), at",
         "");
    std::string starts;
    const std::uint64_t shown = std::min<std::uint64_t>(L, 8);
    for (std::uint64_t l = 0; l < shown; ++l) {
        plot.labels.push_back({false, l, token, 0, 0, layout.offset(l, token)});
        plot.labels.push_back({true, l, token, 0, 0, layout.offset(l, token)});
        starts += (l ? ", " : "") + with_commas(layout.offset(l, token));
    }
    if (shown < L) starts += ", ...";
    y += 18;
    text(x0, y, "keys_ + " + starts + " and values_ + the same: one piece in each layer's block.",
         "");
    y += 18;
    text(x0, y,
         "The whole cache: 2 x " + std::to_string(L) + " layers x " + std::to_string(P) +
             " positions x " + with_commas(layout.position_bytes()) +
             " bytes = " + with_commas(layout.cache_bytes()) +
             " bytes, all reserved up front (KVCache::bytes_allocated()).",
         "");
    y += 18;
    text(x0, y,
         "KVCache::key(l, p) points at keys_ + (l x " + std::to_string(P) + " + p) x " +
             with_commas(layout.position_bytes()) +
             " bytes; the forward pass writes a position's keys there in one copy.",
         "");
    y += 20;
    plot.svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(W) +
               "\" height=\"" + svg_number(y) +
               "\" font-family=\"sans-serif\" font-size=\"12\">\n"
               "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" +
               out + "</svg>\n";
    return plot;
}

// The demo model's cache of `capacity` positions, drawn with position 2
// (or the last, if fewer) in red. Returns the path written.
inline std::string write_layout_plot(const Config& demo, int capacity, const std::string& path) {
    const CacheLayout layout = cache_layout(demo, capacity);
    write_file(path, cache_layout_plot(layout, std::min<std::uint64_t>(2, layout.capacity - 1)).svg,
               "--plot-dir");
    return path;
}

// ------------------------------------------------------------ the report

// Writes the plot, then the JSON or the text. Returns the exit status: 1
// if the demo cache disagrees with the formula.
inline int report(const Results& r, const OutputOptions& out) {
    const PriceOptions& price = r.price;
    const Config& demo = r.demo;
    const bool all_agree = r.all_agree();
    const int status = all_agree ? 0 : 1;
    const Table layouts = layout_table(price);
    const Table budgets = budget_table(r.fits);
    const BudgetFit& fit = r.fit();
    const Table demo_readings = reading_table(r.readings);
    const std::string plot_path =
        write_price_plot(price, r.budget, out.plot_dir + "/03_cache_bytes.svg");
    const std::string layout_path =
        write_layout_plot(demo, r.demo_capacity, out.plot_dir + "/03_cache_layout.svg");

    if (emit(out, Json()
                      .add("chapter", "03_memory_arithmetic")
                      .add("layers", price.shape.layers)
                      .add("heads", price.heads)
                      .add("kv_heads", price.shape.kv_heads)
                      .add("head_size", price.shape.head_size)
                      .add("bytes_per_number", price.shape.bytes_per_number)
                      .add("context", price.context)
                      .add("bytes_per_token", r.per_token)
                      .add("bytes_per_conversation", r.per_conversation)
                      .add("derivation", derivation_table(r.derivation))
                      .add("layouts", layouts)
                      .add("budget_bytes", r.budget)
                      .add("mean_len", price.mean_tokens)
                      .add("budget", budgets)
                      .add("demo_model", demo.describe())
                      .add("demo_bytes_per_token", demo.kv_bytes_per_token())
                      .add("demo_cache", demo_readings)
                      .add("demo_cache_agrees", all_agree)
                      .add("resident", resident_json(r.resident))
                      .add("plot", plot_path)
                      .add("layout_plot", layout_path)))
        return status;

    std::cout << "Chapter 03: what the KV cache costs in memory\n\n"
              << "Priced shape: " << price.shape.layers << " layers, " << price.shape.kv_heads
              << " KV heads (" << price.heads << " query heads), head size "
              << price.shape.head_size << ", " << bits_name(price.shape.bytes_per_number)
              << " numbers, context " << with_commas(price.context) << " tokens\n\n"
              << "Bytes of cache per token, one factor at a time, then per conversation:\n";
    print_derivation(std::cout, r.derivation);
    std::cout << "\nEvery attention layout and number width, context " << with_commas(price.context)
              << " tokens:\n";
    layouts.print(std::cout);
    std::cout << "\nBudget: " << size_words(r.budget) << " for the cache.\n"
              << "A conversation may use " << with_commas(price.context)
              << " tokens; on average it holds " << with_commas(price.mean_tokens) << ".\n";
    budgets.print(std::cout);
    std::cout << "Reserving the whole context, " << with_commas(fit.fit_reserving)
              << " conversations fit; holding only their tokens, " << with_commas(fit.fit_holding)
              << ".\n"
              << "A reservation of " << with_commas(price.context) << " positions holds "
              << with_commas(price.mean_tokens)
              << " tokens on average: " << fixed(fit.waste_percent, 1)
              << "% of it unused.\nEither way the count is capped: "
              << "every conversation in a batch keeps its cache in memory\nwhile it runs, "
              << "and the budget holds only so many.\nThis cap is why a server cannot "
              << "batch without limit.\n\n"
              << "The demo model (common/core/config.h): " << demo.describe() << "\n"
              << "float32 cache: " << factors_text(cache_shape_of(demo)) << " = "
              << with_commas(demo.kv_bytes_per_token()) << " bytes per token\n";
    demo_readings.print(std::cout);
    std::cout << "\nResident memory when a " << with_commas(r.resident.tokens)
              << "-token cache is allocated and filled:\n";
    print_resident_growth(std::cout, r.resident);
    std::cout << "  expected: the allocation rounded up to whole pages, plus a page or two "
              << "per array\n  (keys, values) for the allocator's header and for code run "
              << "the first time\n"
              << "plot: " << visible(plot_path) << "\n"
              << "plot: " << visible(layout_path) << "\n\n"
              << format_bytes(r.per_token) << " per token\n"
              << format_bytes(r.per_conversation) << " per " << with_commas(price.context)
              << "-token conversation\n";
    return status;
}

}  // namespace kv::ch03
