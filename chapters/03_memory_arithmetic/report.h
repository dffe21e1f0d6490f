// What chapter 03 prints: the price factor by factor, every layout and
// width against the budget, the demo cache against the formula, where it
// keeps its bytes and the resident memory; or all of it as one JSON object.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "../../common/core/memory_arithmetic.h"
#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/kit/svg_plot.h"
#include "cache_layout.h"
#include "experiment.h"

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

// The price factor by factor (price_factors), then times the context: the
// last two products are bytes per token and bytes per conversation.
inline Table derivation_table(const CacheShape& s, std::uint64_t context) {
    Table table({"meaning", "factor", "product", "unit"});
    for (const PriceFactor& f : price_factors(s))
        table.add_row({f.meaning, f.factor, f.product, f.unit});
    table.add_row({"tokens of context", context, cache_bytes(s, context), "bytes"});
    return table;
}

// Every attention layout at every number width: per token, per
// conversation, and the conversations the budget holds, each reserving its
// whole context or holding only its mean tokens.
inline Table layout_table(const PriceOptions& o, std::uint64_t budget) {
    Table table({"layout", "KV heads", "numbers", "per token", "per conversation", "fit reserved",
                 "fit held"});
    for (const AttentionLayout& layout : attention_layouts(o.heads, o.shape.kv_heads))
        for (std::uint64_t bytes : number_widths(o.shape.bytes_per_number)) {
            const CacheShape s = with_layout(o.shape, layout.kv_heads, bytes);
            const BudgetFit fit = fit_budget(s, budget, o.context, o.mean_tokens);
            table.add_row({layout.name, layout.kv_heads, bits_name(bytes),
                           size_cell(bytes_per_token(s)), size_cell(fit.reserved_bytes),
                           fit.fit_reserving, fit.fit_holding});
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

// Where KVCache keeps one token's bytes (cache_layout.h): a piece in each
// layer's block of keys_, and the same in values_.
inline void print_layout(std::ostream& out, const CacheLayout& layout, std::uint64_t token) {
    const CacheShape& s = layout.shape;
    std::string starts;
    for (std::uint64_t l = 0; l < s.layers; ++l)
        starts += (l ? ", " : "") + with_commas(layout.offset(l, token));
    out << "Where KVCache keeps them (cache_layout.h): keys_ and values_, each "
           "(layer, position, KV head, number)\n"
        << "  a layer's block: " << layout.capacity << " positions x "
        << with_commas(layout.position_bytes()) << " bytes = " << with_commas(layout.layer_bytes())
        << " bytes; a position: " << s.kv_heads << " KV heads x " << layout.head_bytes()
        << " bytes\n  position " << token << ": " << 2 * s.layers << " pieces of "
        << with_commas(layout.position_bytes()) << " bytes = " << with_commas(layout.token_bytes())
        << " bytes, at keys_ + " << starts << " and values_ + the same\n";
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
    auto magnitude = [](std::int64_t v) { return std::uint64_t(v < 0 ? -v : v); };
    const std::int64_t extra = *g.growth - std::int64_t(g.allocated);
    const std::uint64_t bytes = magnitude(extra), page = g.page_size;
    const std::string pages =
        bytes % page == 0 ? std::to_string(bytes / page) : fixed(double(bytes) / double(page), 1);
    out << "  resident memory grew by:     " << (*g.growth < 0 ? "minus " : "")
        << size_words(magnitude(*g.growth)) << "\n"
        << "  difference:                  " << (extra < 0 ? "-" : "+") << with_commas(bytes)
        << " bytes = " << pages << (pages == "1" ? " page of " : " pages of ") << with_commas(page)
        << " bytes (" << fixed(100.0 * double(bytes) / double(g.allocated), 3)
        << "% of the cache)\n";
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

// Cache bytes against context length, one line per layout at the chosen
// width, the budget dashed; the axes run a quarter past where the chosen
// layout fills the budget, so the budget stays readable.
inline std::string write_price_plot(const PriceOptions& o, std::uint64_t budget_bytes,
                                    const std::string& path) {
    const double gib = 1073741824.0;
    const double x_max = std::max(1.0, 1.25 * double(tokens_that_fit(budget_bytes, o.shape)));
    const double y_cap = 1.25 * double(budget_bytes) / gib;
    SvgPlot plot("KV cache of one conversation against its context (" +
                     bits_name(o.shape.bytes_per_number) + ")",
                 "context length (thousands of tokens)", "KV cache (GiB)");
    for (const AttentionLayout& layout : attention_layouts(o.heads, o.shape.kv_heads)) {
        const CacheShape s = with_layout(o.shape, layout.kv_heads, o.shape.bytes_per_number);
        const double gib_per_token = double(bytes_per_token(s)) / gib;
        const double tokens = std::min(x_max, y_cap / gib_per_token);
        plot.add_series(layout.name + " (" + std::to_string(layout.kv_heads) + " KV)",
                        {0, tokens / 1000}, {0, tokens * gib_per_token});
    }
    plot.add_hline("budget " + format_bytes(budget_bytes), double(budget_bytes) / gib);
    return plot.write(path);
}

// Writes the plot, then the JSON or the text. Returns 1 if the demo cache
// disagrees with the formula.
inline int report(const Results& r, const OutputOptions& out) {
    const PriceOptions& price = r.price;
    const Config& demo = r.demo;
    const int status = r.all_agree() ? 0 : 1;
    const std::uint64_t budget = gib_to_bytes(price.budget_gib);
    const Table derivation = derivation_table(price.shape, price.context);
    const BudgetFit fit = fit_budget(price.shape, budget, price.context, price.mean_tokens);
    const Table layouts = layout_table(price, budget);
    const Table demo_readings = reading_table(r.readings);
    const std::string plot_path =
        write_price_plot(price, budget, out.plot_dir + "/03_cache_bytes.svg");
    const std::uint64_t per_token = bytes_per_token(price.shape);
    const std::uint64_t per_conversation = cache_bytes(price.shape, price.context);

    if (emit(out, Json()
                      .add("layers", price.shape.layers)
                      .add("heads", price.heads)
                      .add("kv_heads", price.shape.kv_heads)
                      .add("head_size", price.shape.head_size)
                      .add("bytes_per_number", price.shape.bytes_per_number)
                      .add("context", price.context)
                      .add("bytes_per_token", per_token)
                      .add("bytes_per_conversation", per_conversation)
                      .add("derivation", derivation)
                      .add("layouts", layouts)
                      .add("budget_bytes", budget)
                      .add("mean_len", price.mean_tokens)
                      .add("demo_model", demo.describe())
                      .add("demo_bytes_per_token", demo.kv_bytes_per_token())
                      .add("demo_cache", demo_readings)
                      .add("demo_cache_agrees", status == 0)
                      .add("resident", resident_json(r.resident))
                      .add("plot", plot_path)))
        return status;

    std::cout << "Chapter 03: what the KV cache costs in memory\n\n"
              << "Priced shape: " << price.shape.layers << " layers, " << price.shape.kv_heads
              << " KV heads (" << price.heads << " query heads), head size "
              << price.shape.head_size << ", " << bits_name(price.shape.bytes_per_number)
              << " numbers, context " << with_commas(price.context) << " tokens\n\n"
              << "Bytes of cache per token, one factor at a time, then per conversation:\n";
    derivation.print(std::cout);
    std::cout << "\nEvery attention layout and number width, and the conversations a budget of "
              << size_words(budget) << " holds,\neach reserving its context of "
              << with_commas(price.context) << " tokens or holding only the "
              << with_commas(price.mean_tokens) << " it has on average:\n";
    layouts.print(std::cout);
    std::cout << "A reservation of " << with_commas(price.context) << " positions holds "
              << with_commas(price.mean_tokens)
              << " tokens on average: " << fixed(fit.waste_percent, 1) << "% of it unused.\n\n"
              << "The demo model (common/core/config.h): " << demo.describe() << "\n"
              << "float32 cache: 2 x " << demo.n_layers << " x " << demo.n_kv_heads << " x "
              << demo.head_size() << " x 4 = " << with_commas(demo.kv_bytes_per_token())
              << " bytes per token\n";
    demo_readings.print(std::cout);
    std::cout << "\n";
    print_layout(std::cout, cache_layout(demo, r.demo_capacity),
                 std::min<std::uint64_t>(2, std::uint64_t(r.demo_capacity) - 1));
    std::cout << "\nResident memory when a " << with_commas(r.resident.tokens)
              << "-token cache is allocated and filled:\n";
    print_resident_growth(std::cout, r.resident);
    std::cout << "plot: " << visible(plot_path) << "\n\n"
              << format_bytes(per_token) << " per token\n"
              << format_bytes(per_conversation) << " per " << with_commas(price.context)
              << "-token conversation\n";
    return status;
}

}  // namespace kv::ch03
