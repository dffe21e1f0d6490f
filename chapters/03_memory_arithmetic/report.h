// What chapter 03 prints: the price factor by factor, every layout against the
// budget, the demo cache against the formula and the resident memory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../../common/core/memory_arithmetic.h"
#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/kit/svg_plot.h"
#include "cache_layout.h"
#include "experiment.h"

namespace kv::ch03 {

// "512 MiB (536,870,912)", or with `unit` "512 MiB (536,870,912 bytes)"; JSON the count.
inline Cell size_cell(std::uint64_t bytes, const char* unit = "") {
    return Cell(format_bytes(bytes) + " (" + with_commas(bytes) + unit + ")", double(bytes));
}

inline std::string bits_name(std::uint64_t bytes_per_number) {
    return std::to_string(8 * bytes_per_number) + "-bit";
}

// The price factor by factor (price_factors), then times the context.
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
inline std::string layout_words(const CacheLayout& layout, std::uint64_t token) {
    std::string starts;
    for (std::uint64_t l = 0; l < layout.shape.layers; ++l)
        starts += (l ? ", " : "") + with_commas(layout.offset(l, token));
    return "keys_ and values_, each (layer, position, KV head, number)\n  a layer's block: " +
           std::to_string(layout.capacity) + " positions x " +
           with_commas(layout.position_bytes()) + " bytes = " + with_commas(layout.layer_bytes()) +
           " bytes; a position: " + std::to_string(layout.shape.kv_heads) + " KV heads x " +
           std::to_string(layout.head_bytes()) + " bytes\n  position " + std::to_string(token) +
           ": " + std::to_string(2 * layout.shape.layers) + " pieces of " +
           with_commas(layout.position_bytes()) + " bytes = " + with_commas(layout.token_bytes()) +
           " bytes, at keys_ + " + starts + " and values_ + the same";
}

// The resident-memory measurement: what grew, and by how much more (or
// less) than the allocation, in pages.
inline Findings resident_findings(const ResidentGrowth& g) {
    Findings f("Resident memory when a " + with_commas(g.tokens) +
               "-token cache is allocated and filled:");
    f.line("formula", "formula (cache_bytes)", size_cell(g.formula, " bytes"))
        .line("allocated", "KVCache::bytes_allocated()", size_cell(g.allocated, " bytes"));
    if (!g.growth)
        return f.line("growth", "resident memory",
                      Cell::with_json("not readable here (no /proc/self/statm)", "null"));
    const std::int64_t extra = *g.growth - std::int64_t(g.allocated);
    const std::uint64_t grew = std::uint64_t(std::abs(*g.growth)),
                        bytes = std::uint64_t(std::abs(extra));
    const std::string pages = bytes % g.page_size == 0
                                  ? std::to_string(bytes / g.page_size)
                                  : fixed(double(bytes) / double(g.page_size), 1);
    return f
        .line("growth", "resident memory grew by",
              Cell((*g.growth < 0 ? "minus " : "") + size_cell(grew, " bytes").text,
                   double(*g.growth)))
        .line("difference", "difference",
              Cell((extra < 0 ? "-" : "+") + with_commas(bytes) + " bytes = " + pages +
                       (pages == "1" ? " page of " : " pages of ") + with_commas(g.page_size) +
                       " bytes (" + fixed(100.0 * double(bytes) / double(g.allocated), 3) +
                       "% of the cache)",
                   double(extra)));
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

// Writes the plot, then the findings. Returns 1 if the demo cache
// disagrees with the formula.
inline int report(const Results& r, const OutputOptions& out) {
    const PriceOptions& o = r.price;
    const CacheShape& s = o.shape;
    const Config& demo = r.demo;
    const std::uint64_t budget = gib_to_bytes(o.budget_gib);
    const BudgetFit fit = fit_budget(s, budget, o.context, o.mean_tokens);
    const std::uint64_t per_token = bytes_per_token(s),
                        per_conversation = cache_bytes(s, o.context);
    const std::string plot_path = write_price_plot(o, budget, out.plot_dir + "/03_cache_bytes.svg");
    const std::string context = with_commas(o.context), mean = with_commas(o.mean_tokens);

    Findings f("Chapter 03: what the KV cache costs in memory");
    f.table("derivation", "Bytes of cache per token, one factor at a time, then per conversation:",
            derivation_table(s, o.context))
        .text("")
        .table("layouts",
               "Every attention layout and number width, and the conversations a budget of " +
                   size_cell(budget, " bytes").text + " holds,\neach reserving its context of " +
                   context + " tokens or holding only the " + mean + " it has on average:",
               layout_table(o, budget))
        .line("unused_share",
              "unused in a reservation of " + context + " positions holding " + mean,
              Cell(fixed(fit.waste_percent, 1) + "%", fit.waste_percent / 100))
        .text("")
        .line("demo_model", "the demo model (common/core/config.h)", demo.describe())
        .line("demo_bytes_per_token",
              "float32 cache per token (2 x " + std::to_string(demo.n_layers) + " x " +
                  std::to_string(demo.n_kv_heads) + " x " + std::to_string(demo.head_size()) +
                  " x 4)",
              Cell(with_commas(demo.kv_bytes_per_token()) + " bytes",
                   double(demo.kv_bytes_per_token())))
        .table("demo_cache", "", reading_table(r.readings))
        .text("")
        .line("layout", "where KVCache keeps them (cache_layout.h)",
              layout_words(cache_layout(demo, r.demo_capacity),
                           std::min<std::uint64_t>(2, std::uint64_t(r.demo_capacity) - 1)))
        .text("")
        .group("resident", resident_findings(r.resident))
        .line("plot", "plot", outside_text(plot_path))
        .data("bytes_per_token", per_token)
        .data("bytes_per_conversation", per_conversation)
        .headline(format_bytes(per_token) + " per token\n" + format_bytes(per_conversation) +
                  " per " + context + "-token conversation");
    emit(out, f);
    return r.all_agree() ? 0 : 1;
}

}  // namespace kv::ch03
