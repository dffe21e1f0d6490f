// What chapter 03 prints: the price factor by factor, every layout against
// the budget, the demo cache against the formula, where its bytes sit, the
// resident memory and the plot.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "../../common/kit/output.h"
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

// Where KVCache keeps one token's bytes (cache_layout.h): a piece in each
// layer's block of keys_, and the same in values_.
inline std::string layout_words(const CacheLayout& layout, std::uint64_t token) {
    std::string starts;
    for (std::uint64_t l = 0; l < layout.shape.layers; ++l)
        starts += (l ? ", " : "") + with_commas(layout.offset(l, token));
    auto n = [](std::uint64_t v) { return with_commas(v); };
    return "keys_ and values_, each (layer, position, KV head, number)\n  a layer's block: " +
           n(layout.capacity) + " positions x " + n(layout.position_bytes()) +
           " bytes = " + n(layout.layer_bytes()) +
           " bytes; a position: " + n(layout.shape.kv_heads) + " KV heads x " +
           n(layout.head_bytes()) + " bytes\n  position " + n(token) + ": " +
           n(2 * layout.shape.layers) + " pieces of " + n(layout.position_bytes()) +
           " bytes = " + n(layout.token_bytes()) + " bytes, at keys_ + " + starts +
           " and values_ + the same";
}

// The resident-memory measurement: what grew, and by how much more (or
// less) than the allocation, in pages.
inline void add_resident(Findings& f, const ResidentGrowth& g) {
    f.text("Resident memory when a " + with_commas(g.tokens) +
           "-token cache is allocated and filled:")
        .line("formula", "  formula (cache_bytes)", size_cell(g.formula, " bytes"))
        .line("allocated", "  KVCache::bytes_allocated()", size_cell(g.allocated, " bytes"));
    if (!g.growth) {
        f.line("growth", "  resident memory",
               Cell::with_json("not readable here (no /proc/self/statm)", "null"));
        return;
    }
    const std::int64_t extra = *g.growth - std::int64_t(g.allocated);
    const std::uint64_t bytes = std::uint64_t(std::abs(extra));
    const std::string pages = bytes % g.page_size == 0
                                  ? std::to_string(bytes / g.page_size)
                                  : fixed(double(bytes) / double(g.page_size), 1);
    f.line("growth", "  resident memory grew by",
           Cell((*g.growth < 0 ? "minus " : "") +
                    size_cell(std::uint64_t(std::abs(*g.growth)), " bytes").text,
                double(*g.growth)))
        .line("difference", "  difference",
              Cell((extra < 0 ? "-" : "+") + with_commas(bytes) + " bytes = " + pages +
                       (pages == "1" ? " page of " : " pages of ") + with_commas(g.page_size) +
                       " bytes (" + fixed(100.0 * double(bytes) / double(g.allocated), 3) +
                       "% of the cache)",
                   double(extra)));
}

// Cache bytes against context length, one line per layout at the chosen
// width, the budget dashed; the axes run a quarter past where the chosen
// layout fills the budget, so the budget stays readable.
inline SvgPlot price_plot(const PriceOptions& o, std::uint64_t budget) {
    const double gib = 1073741824.0;
    const double x_max = std::max(1.0, 1.25 * double(tokens_that_fit(budget, o.shape)));
    SvgPlot plot("KV cache of one conversation against its context (" +
                     bits_name(o.shape.bytes_per_number) + ")",
                 "context length (thousands of tokens)", "KV cache (GiB)");
    for (const AttentionLayout& layout : attention_layouts(o.heads, o.shape.kv_heads)) {
        const CacheShape s = with_layout(o.shape, layout.kv_heads, o.shape.bytes_per_number);
        const double per_token = double(bytes_per_token(s)) / gib;
        const double tokens = std::min(x_max, 1.25 * double(budget) / gib / per_token);
        plot.add_series(layout.name + " (" + std::to_string(layout.kv_heads) + " KV)",
                        {0, tokens / 1000}, {0, tokens * per_token});
    }
    plot.add_hline("budget " + format_bytes(budget), double(budget) / gib);
    return plot;
}

// Returns 1 if the demo cache disagrees with the formula.
inline int report(const Results& r, const OutputOptions& out) {
    const PriceOptions& o = r.price;
    const Config& demo = r.demo;
    const std::uint64_t budget = gib_to_bytes(o.budget_gib);
    const std::uint64_t per_token = bytes_per_token(o.shape),
                        per_conversation = cache_bytes(o.shape, o.context);
    const std::string context = with_commas(o.context), mean = with_commas(o.mean_tokens);
    Table derivation({"meaning", "factor", "product", "unit"});
    for (const PriceFactor& f : price_factors(o.shape))
        derivation.add_row({f.meaning, f.factor, f.product, f.unit});
    derivation.add_row({"tokens of context", o.context, per_conversation, "bytes"});
    Table layouts({"layout", "KV heads", "numbers", "per token", "per conversation", "fit reserved",
                   "fit held"});
    for (const AttentionLayout& layout : attention_layouts(o.heads, o.shape.kv_heads))
        for (std::uint64_t bytes : number_widths(o.shape.bytes_per_number)) {
            const CacheShape s = with_layout(o.shape, layout.kv_heads, bytes);
            const BudgetFit fit = fit_budget(s, budget, o.context, o.mean_tokens);
            layouts.add_row({layout.name, layout.kv_heads, bits_name(bytes),
                             size_cell(bytes_per_token(s)), size_cell(fit.reserved_bytes),
                             fit.fit_reserving, fit.fit_holding});
        }
    Table readings({"moment", "tokens", "formula (this chapter)", "Config::kv_bytes",
                    "KVCache reports", "agree"});
    for (const CacheReading& c : r.readings)
        readings.add_row({c.moment, c.tokens, size_cell(c.formula), c.config_kv, c.cache_says,
                          c.agree() ? "yes" : "NO"});

    Findings f("Chapter 03: what the KV cache costs in memory");
    f.table("derivation",
            "Bytes of cache per token, one factor at a time, then per conversation:", derivation)
        .text("")
        .table("layouts",
               "Every attention layout and number width, and the conversations a budget of " +
                   size_cell(budget, " bytes").text + " holds,\neach reserving its context of " +
                   context + " tokens or holding only the " + mean + " it has on average:",
               layouts)
        .line(
            "unused_share", "unused in a reservation of " + context + " positions holding " + mean,
            percent_cell(fit_budget(o.shape, budget, o.context, o.mean_tokens).waste_percent / 100))
        .text("")
        .line("demo_model", "the demo model (common/core/config.h)", demo.describe())
        .line("demo_bytes_per_token",
              "float32 cache per token (2 x " + std::to_string(demo.n_layers) + " x " +
                  std::to_string(demo.n_kv_heads) + " x " + std::to_string(demo.head_size()) +
                  " x 4)",
              Cell(with_commas(demo.kv_bytes_per_token()) + " bytes",
                   double(demo.kv_bytes_per_token())))
        .table("demo_cache", "", readings)
        .text("")
        .line("layout", "where KVCache keeps them (cache_layout.h)",
              layout_words(cache_layout(demo, r.demo_capacity),
                           std::min<std::uint64_t>(2, std::uint64_t(r.demo_capacity) - 1)))
        .text("");
    add_resident(f, r.resident);
    f.line("plot", "plot",
           outside_text(price_plot(o, budget).write(out.plot_dir + "/03_cache_bytes.svg")))
        .data("bytes_per_token", per_token)
        .data("bytes_per_conversation", per_conversation)
        .headline(format_bytes(per_token) + " per token\n" + format_bytes(per_conversation) +
                  " per " + context + "-token conversation");
    emit(out, f);
    return r.all_agree() ? 0 : 1;
}

}  // namespace kv::ch03
