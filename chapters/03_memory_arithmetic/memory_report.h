// Chapter 03: the tables, the derivation and the plot the program prints.
// The arithmetic is in memory_arithmetic.h; this file only lays it out.
#pragma once

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "../../common/kit/report.h"
#include "../../common/kit/svg_plot.h"
#include "measured_cache.h"
#include "memory_arithmetic.h"
#include "price_flags.h"

namespace kv {

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

// The shape a layout and a width give the priced shape.
inline CacheShape with_layout(CacheShape s, std::uint64_t kv_heads, std::uint64_t bytes) {
    s.kv_heads = kv_heads;
    s.bytes_per_number = bytes;
    return s;
}

// ------------------------------------------------------------ derivation

// Prints the price factor by factor, then times the context:
//         x 32  layers    ->     64 vectors
inline void print_derivation(std::ostream& out, const CacheShape& s, std::uint64_t context) {
    std::vector<PriceFactor> steps = price_factors(s);
    steps.push_back({context, "tokens of context", cache_bytes(s, context), "bytes"});
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

inline Table derivation_table(const CacheShape& s) {
    Table table({"factor", "meaning", "product", "unit"});
    for (const PriceFactor& f : price_factors(s))
        table.add_row({f.factor, f.meaning, f.product, f.unit});
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

// Conversations the budget holds, per layout at the chosen width, reserving
// the whole context vs holding only the mean tokens.
inline Table budget_table(const PriceOptions& o, std::uint64_t budget_bytes) {
    Table table({"layout", "KV heads", "reserved each", "fit reserved", "held each", "fit held",
                 "unused (%)"});
    for (const AttentionLayout& layout : attention_layouts(o.heads, o.shape.kv_heads)) {
        const CacheShape s = with_layout(o.shape, layout.kv_heads, o.shape.bytes_per_number);
        const BudgetFit fit = fit_budget(s, budget_bytes, o.context, o.mean_tokens);
        table.add_row({layout.name, layout.kv_heads, size_cell(fit.reserved_bytes),
                       fit.fit_reserving, size_cell(fit.held_bytes), fit.fit_holding,
                       Cell(fit.waste_percent, 1)});
    }
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
                                  : Cell(double(magnitude) / double(g.page_size), 1).text;
    out << "  resident memory grew by:     "
        << (*g.growth < 0 ? "minus " + size_words(std::uint64_t(-*g.growth))
                          : size_words(std::uint64_t(*g.growth)))
        << "\n"
        << "  difference:                  " << (extra < 0 ? "-" : "+") << with_commas(magnitude)
        << " bytes = " << pages << (pages == "1" ? " page of " : " pages of ")
        << with_commas(g.page_size) << " bytes ("
        << Cell(100.0 * double(magnitude) / double(g.allocated), 3).text << "% of the cache)\n";
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

}  // namespace kv
