// What chapter 03 prints: the price derived factor by factor, every
// layout and width, the budget's count, the demo cache against the formula,
// the resident memory and the plot; or all of it as one JSON object. The
// arithmetic is in memory_arithmetic.h; this file only lays it out.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/kit/svg_plot.h"
#include "experiment.h"
#include "measured_cache.h"
#include "memory_arithmetic.h"

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
                      .add("plot", plot_path)))
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
              << "plot: " << plot_path << "\n\n"
              << format_bytes(r.per_token) << " per token\n"
              << format_bytes(r.per_conversation) << " per " << with_commas(price.context)
              << "-token conversation\n";
    return status;
}

}  // namespace kv::ch03
