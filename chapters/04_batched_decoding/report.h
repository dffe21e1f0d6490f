// What chapter 04 prints: a table row per batch size for each width, its
// roofs and ridges, the check against decoding alone, the throughput and
// roofline plots and the headline; or all of it as one JSON object.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "../../common/fast/memory_level.h"
#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/kit/svg_plot.h"
#include "arithmetic_intensity.h"
#include "batch_benchmark.h"
#include "experiment.h"

namespace kv::ch04 {

// One row per batch size; "roof GFLOP/s" is what the roofline allows at the
// row's intensity with the width's memory roof.
inline Table batch_table(const std::vector<BatchTiming>& timings, const Roofline& roofs,
                         double roof_bytes_per_second) {
    Table table({"batch", "step (ms)", "per token (ms)", "tokens/s", "speed-up per token",
                 "GFLOP per step", "FLOPs/byte", "GFLOP/s", "roof GFLOP/s", "GB/s of weights"});
    const double base = timings.front().seconds_per_token();
    for (const BatchTiming& t : timings) {
        const StepArithmetic& a = t.arithmetic;
        table.add_row({t.batch, Cell(t.step_seconds * 1e3, 3), Cell(t.seconds_per_token() * 1e3, 3),
                       Cell(t.tokens_per_second(), 0), Cell(base / t.seconds_per_token(), 2),
                       Cell(a.flops() / 1e9, 3), Cell(a.flops_per_byte(), 1),
                       Cell(a.flops() / t.step_seconds / 1e9, 1),
                       Cell(roofs.attainable(a.flops_per_byte(), roof_bytes_per_second) / 1e9, 1),
                       Cell(a.weight_bytes / t.step_seconds / 1e9, 1)});
    }
    return table;
}

// The batch size with the most tokens per second.
inline const BatchTiming& best_throughput(const std::vector<BatchTiming>& timings) {
    return *std::max_element(timings.begin(), timings.end(), [](const auto& a, const auto& b) {
        return a.tokens_per_second() < b.tokens_per_second();
    });
}

// Where these kernels stop waiting for weights: the roofline's ridge with
// their own measured rates (batch 1's weight stream, the best arithmetic of
// any batch) in place of the machine's. At B/2 FLOPs per byte, the batch
// there is about twice the ratio.
struct Ridge {
    double bytes_per_second = 0;  // weights streamed at batch 1
    double flops_per_second = 0;  // the best arithmetic rate of any batch
    int at_batch = 0;             // the batch that reached it

    double flops_per_byte() const { return flops_per_second / bytes_per_second; }
    double batch() const { return 2 * flops_per_byte(); }
};

inline Ridge ridge_point(const std::vector<BatchTiming>& timings) {
    Ridge ridge;
    ridge.bytes_per_second = timings.front().arithmetic.weight_bytes / timings.front().step_seconds;
    for (const BatchTiming& t : timings) {
        const double rate = t.arithmetic.flops() / t.step_seconds;
        if (rate > ridge.flops_per_second) ridge.flops_per_second = rate, ridge.at_batch = t.batch;
    }
    return ridge;
}

// One width's table, headed by its weights against the CPU's cache and
// followed by the machine's ridge and the kernels'.
inline void print_width(std::ostream& out, const WidthResult& w, const Results& r) {
    const Config& c = w.config;
    const std::uint64_t bytes = weight_bytes_per_step(c);
    const double dram = r.roofs.dram_bytes_per_second;
    out << "\ndim " << c.dim << ", ffn " << c.ffn_dim << ": "
        << with_commas(c.multiplied_parameters()) << " multiplied weights, " << format_bytes(bytes)
        << " read per step";
    if (r.cache_bytes == 0)
        out << " (no last-level cache reported: read from DRAM)";
    else if (!fits_reported_last_level(bytes, r.cache_bytes))
        out << " (do not fit in the " << format_bytes(r.cache_bytes)
            << " largest CPU cache: read from DRAM)";
    else
        out << " (fit in the " << format_bytes(r.cache_bytes)
            << " largest CPU cache as reported; a read of that size ran at "
            << fixed(w.read_at_weights / 1e9, 1) << " GB/s, "
            << fixed(dram > 0 ? w.read_at_weights / dram : 0.0, 2) << " x DRAM's: "
            << (w.from_last_level ? "read from the cache" : "no more than 1.2 x, read from DRAM")
            << ")";
    out << "\n";
    batch_table(w.timings, r.roofs, w.memory_roof).print(out);
    const Ridge k = ridge_point(w.timings);
    const double machine_ridge = r.roofs.ridge(w.memory_roof);
    out << "  memory roof: " << (w.from_last_level ? "the last-level cache" : "DRAM") << ", "
        << fixed(w.memory_roof / 1e9, 1) << " GB/s; batch 1 reads weights at "
        << fixed(k.bytes_per_second / 1e9, 1) << " GB/s ("
        << fixed(100 * k.bytes_per_second / w.memory_roof, 0) << "% of it)\n"
        << "  the machine's ridge: " << fixed(r.roofs.peak_flops / 1e9, 1) << " GFLOP/s / "
        << fixed(w.memory_roof / 1e9, 1) << " GB/s = " << fixed(machine_ridge, 1)
        << " FLOPs per byte, about batch " << fixed(batch_at_intensity(machine_ridge, 4), 0)
        << "\n  these kernels attain at most " << fixed(k.flops_per_second / 1e9, 1)
        << " GFLOP/s (batch " << k.at_batch << ", "
        << fixed(100 * k.flops_per_second / r.roofs.peak_flops, 0)
        << "% of the peak);\n  their line meets batch 1's rate at " << fixed(k.flops_per_byte(), 1)
        << " FLOPs per byte, about batch " << fixed(k.batch(), 0)
        << ":\n  below it a step waits for weights, above it for arithmetic.\n";
}

// Tokens per second against batch size, one line per width.
inline SvgPlot throughput_plot(const std::vector<WidthResult>& widths) {
    SvgPlot plot("Decode throughput against batch size", "batch size (sequences)",
                 "tokens per second");
    plot.set_log2_x(true);
    for (const WidthResult& w : widths) {
        std::vector<double> xs, ys;
        for (const BatchTiming& t : w.timings) {
            xs.push_back(t.batch);
            ys.push_back(t.tokens_per_second());
        }
        plot.add_series("dim " + std::to_string(w.config.dim), xs, ys);
    }
    return plot;
}

// The roofline on log-log axes from this run's numbers: the peak dashed,
// each memory roof a line of slope 1 up to its ridge (a cache's only for a
// width read from it), and each width's steps as points, one per batch.
inline SvgPlot roofline_plot(const std::vector<WidthResult>& widths, const Roofline& roofs) {
    SvgPlot plot("Roofline: one decode step against this machine's roofs",
                 "arithmetic intensity (FLOPs per byte read)", "GFLOP/s");
    plot.set_log2_x(true);
    plot.set_log2_y(true);
    double lowest = 1e300;  // the roofs start at the lowest intensity of any step
    for (const WidthResult& w : widths)
        for (const BatchTiming& t : w.timings)
            lowest = std::min(lowest, t.arithmetic.flops_per_byte());
    auto roof = [&](const std::string& name, double bytes_per_second) {
        plot.add_series(name + ": " + fixed(bytes_per_second / 1e9, 1) + " GB/s",
                        {lowest, roofs.ridge(bytes_per_second)},
                        {lowest * bytes_per_second / 1e9, roofs.peak_flops / 1e9});
    };
    for (const WidthResult& w : widths)
        if (w.from_last_level) roof("cache", w.memory_roof);
    roof("DRAM", roofs.dram_bytes_per_second);
    for (const WidthResult& w : widths) {
        std::vector<double> xs, ys;
        for (const BatchTiming& t : w.timings) {
            xs.push_back(t.arithmetic.flops_per_byte());
            ys.push_back(t.arithmetic.flops() / t.step_seconds / 1e9);
        }
        plot.add_series("dim " + std::to_string(w.config.dim) + ", attained", xs, ys);
    }
    plot.add_hline("peak: " + fixed(roofs.peak_flops / 1e9, 1) + " GFLOP/s",
                   roofs.peak_flops / 1e9);
    return plot;
}

// One width's numbers for --json, each key starting with `prefix`.
inline void add_width_json(Json& json, const std::string& prefix, const WidthResult& w,
                           const Roofline& roofs) {
    const BatchTiming& best = best_throughput(w.timings);
    json.add(prefix + "model", w.config.describe())
        .add(prefix + "weight_bytes_per_step", weight_bytes_per_step(w.config))
        .add(prefix + "batches", batch_table(w.timings, roofs, w.memory_roof))
        .add(prefix + "read_bytes_per_second_at_weights_size", w.read_at_weights)
        .add(prefix + "memory_roof", w.from_last_level ? "last_level_cache" : "dram")
        .add(prefix + "memory_roof_bytes_per_second", w.memory_roof)
        .add(prefix + "tokens_per_second_batch1", w.timings.front().tokens_per_second())
        .add(prefix + "tokens_per_second_best", best.tokens_per_second())
        .add(prefix + "best_batch", best.batch)
        .add(prefix + "ridge_flops_per_byte", ridge_point(w.timings).flops_per_byte())
        .add(prefix + "machine_ridge_flops_per_byte", roofs.ridge(w.memory_roof));
}

// Writes the plots, then the JSON or the text. Returns 1 if a batched step
// chose another token than the sequence alone.
inline int report(const Results& r, const OutputOptions& out) {
    const LoadedModel& loaded = r.loaded;
    const AloneReference& alone = r.alone;
    const int status = alone.same_tokens() ? 0 : 1;
    const std::string plot_path =
        throughput_plot(r.widths).write(out.plot_dir + "/04_tokens_per_second.svg");
    const std::string roofline_path =
        roofline_plot(r.widths, r.roofs).write(out.plot_dir + "/04_roofline.svg");
    const bool has_text = loaded.tokenizer.has_value();
    const std::string answer_text = loaded.answer_text(alone.answer(0));

    Json json;
    json.add("max_batch", r.max_batch)
        .add("longest_prompt", r.prompt_len)
        .add("mean_prompt", r.mean_prompt)
        .add("repeats", r.repeats)
        .add("last_level_cache_bytes", r.cache_bytes)
        .add("peak_flops", r.roofs.peak_flops)
        .add("dram_bytes_per_second", r.roofs.dram_bytes_per_second)
        .add("dram_probe_bytes", r.dram_probe_bytes)
        .add("same_tokens", alone.same_tokens())
        .add("max_logit_difference", alone.largest_difference())
        .add("weights", loaded.weights);
    if (has_text) json.add("answer_text", answer_text);
    add_width_json(json, "", r.widths[0], r.roofs);  // the demo model
    if (r.widths.size() > 1) add_width_json(json, "wide_", r.widths[1], r.roofs);
    if (emit(out, json.add("plot", plot_path).add("roofline_plot", roofline_path))) return status;

    std::cout << "Chapter 04: batched decoding\n\n"
              << "model: " << loaded.model.config().describe() << "\n"
              << "weights: " << visible(loaded.weights) << "\n"
              << "a batch of B sequences, prompts of 1.." << r.prompt_len << " tokens (mean "
              << fixed(r.mean_prompt, 1) << " over all " << r.max_batch
              << "), one new token each per decode step\n"
              << "times: median of " << r.repeats << " steps; the batch sizes take turns in "
              << std::min(kRounds, r.repeats) << " rounds, each with a warm-up step\n"
              << "roofs (this thread, the kit's machine probes): multiply then add "
              << fixed(r.roofs.peak_flops / 1e9, 1) << " GFLOP/s; reads "
              << fixed(r.roofs.dram_bytes_per_second / 1e9, 1) << " GB/s from DRAM (over "
              << format_bytes(r.dram_probe_bytes)
              << "); weights that fit the reported cache are read once more at their own size\n";
    for (const WidthResult& w : r.widths) print_width(std::cout, w, r);
    std::cout << "\nbatched vs alone (chapter 02's decode_step), " << alone.rows_compared()
              << " sequence-steps: same tokens " << (alone.same_tokens() ? "yes" : "NO")
              << ", largest logit difference " << alone.largest_difference()
              << (alone.largest_difference() == 0 ? " (identical to the last bit)" : "")
              << "\nplots: " << visible(plot_path) << ", " << visible(roofline_path) << "\n\n";
    if (has_text)
        std::cout << "sequence 0, prompt: " << loaded.prompt_text() << "\n"
                  << "sequence 0, answer (the same alone and in every batch): " << answer_text
                  << "\n\n";
    std::cout << "tokens per second, batch 1 -> best batch:";
    for (const WidthResult& w : r.widths) {
        const BatchTiming& best = best_throughput(w.timings);
        const double one = w.timings.front().tokens_per_second();
        std::cout << (&w == &r.widths[0] ? "" : ";") << " dim " << w.config.dim << ": "
                  << with_commas(std::llround(one)) << " -> "
                  << with_commas(std::llround(best.tokens_per_second())) << " at batch "
                  << best.batch << " (" << fixed(best.tokens_per_second() / one, 1) << " x)";
    }
    std::cout << "\n";
    return status;
}

}  // namespace kv::ch04
