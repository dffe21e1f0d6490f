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

#include "../../common/fast/machine_probes.h"
#include "../../common/fast/memory_level.h"
#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/kit/svg_plot.h"
#include "arithmetic_intensity.h"
#include "batch_benchmark.h"
#include "experiment.h"

namespace kv::ch04 {

// A share of a limit, or the words that say its probe failed (a step
// cannot outrun the machine: memory_level.h). Never a share above 100 %.
inline Cell share_cell(const Share& s) {
    return s.probe_failed() ? Cell("probe failed") : Cell(100 * s.share(), 0);
}

// One row per batch size; "roof GFLOP/s" is what the roofline allows at the
// row's intensity with the batch's own memory roof.
inline Table batch_table(const WidthResult& w, const Roofline& roofs) {
    Table table({"batch", "step (ms)", "per token (ms)", "tokens/s", "speed-up per token",
                 "GFLOP per step", "FLOPs/byte", "GFLOP/s", "% of peak", "roof GFLOP/s", "MiB read",
                 "GB/s read", "roof GB/s", "% of roof"});
    const double base = w.timings.front().seconds_per_token();
    for (std::size_t k = 0; k < w.timings.size(); ++k) {
        const BatchTiming& t = w.timings[k];
        const StepArithmetic& a = t.arithmetic;
        const BatchRoof& r = w.roofs.at(k);
        table.add_row({t.batch, Cell(t.step_seconds * 1e3, 3), Cell(t.seconds_per_token() * 1e3, 3),
                       Cell(t.tokens_per_second(), 0), Cell(base / t.seconds_per_token(), 2),
                       Cell(a.flops() / 1e9, 3), Cell(a.flops_per_byte(), 1),
                       Cell(a.flops() / t.step_seconds / 1e9, 1), share_cell(r.arithmetic),
                       Cell(roofs.attainable(a.flops_per_byte(), r.roof) / 1e9, 1),
                       Cell(a.bytes() / double(1 << 20), 1),
                       Cell(a.bytes() / t.step_seconds / 1e9, 1), Cell(r.roof / 1e9, 1),
                       share_cell(r.memory)});
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

// One width's table, headed by its weights and where its bytes come from,
// and followed by the machine's ridge and the kernels'.
inline void print_width(std::ostream& out, const WidthResult& w, const Results& r) {
    const Config& c = w.config;
    const BatchRoof& one = w.roofs.front();
    const BatchTiming& first = w.timings.front();
    out << "\ndim " << c.dim << ", ffn " << c.ffn_dim << ": "
        << with_commas(c.multiplied_parameters()) << " multiplied weights, "
        << format_bytes(weight_bytes_per_step(c))
        << " read per step, and each sequence's keys and values; batch 1 reads "
        << format_bytes(one.bytes) << " from " << one.level << "\n";
    batch_table(w, r.roofs).print(out);
    const Ridge k = ridge_point(w.timings);
    const double machine_ridge = r.roofs.ridge(w.memory_roof());
    out << "  memory roof: " << fixed(w.memory_roof() / 1e9, 1) << " GB/s, read at batch 1's "
        << format_bytes(one.bytes) << " (" << one.level << "); batch 1 reads "
        << fixed(first.arithmetic.bytes() / first.step_seconds / 1e9, 1) << " GB/s ";
    if (one.memory.probe_failed())
        out << "(above every read of its size, measured " << one.measured_again
            << " more times: the probe failed, no share is shown)\n";
    else
        out << "(" << fixed(100 * one.memory.share(), 0) << "% of it)\n";
    out << "  the machine's ridge: " << fixed(r.roofs.peak_flops / 1e9, 1) << " GFLOP/s / "
        << fixed(w.memory_roof() / 1e9, 1) << " GB/s = " << fixed(machine_ridge, 1)
        << " FLOPs per byte, about batch " << fixed(batch_at_intensity(machine_ridge, 4), 0)
        << "\n  these kernels attain at most " << fixed(k.flops_per_second / 1e9, 1)
        << " GFLOP/s (batch " << k.at_batch << ", "
        << fixed(100 * k.flops_per_second / r.roofs.peak_flops, 0)
        << "% of the peak);\n  their line meets batch 1's rate at " << fixed(k.flops_per_byte(), 1)
        << " FLOPs per byte, about batch " << fixed(k.batch(), 0)
        << ":\n  below it a step waits for weights, above it for arithmetic.\n";
    for (std::size_t b = 0; b < w.roofs.size(); ++b)
        if (w.roofs[b].memory.probe_failed() || w.roofs[b].arithmetic.probe_failed())
            out << "  PROBE FAILURE batch " << w.timings[b].batch
                << ": its step ran above a limit measured " << w.roofs[b].measured_again
                << " more times; the probe, not the step, is wrong\n";
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
// each memory roof a line of slope 1 up to its ridge (each width's batch-1
// roof, and DRAM's), and each width's steps as points, one per batch, but
// for a step above a limit (a probe failure, not a point). Every batch's
// roof is at most its width's batch-1 roof (memory_level.h's measured_roof),
// so every point is at or under the lines drawn.
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
        roof("dim " + std::to_string(w.config.dim) + " roof (" + w.roofs.front().level + ")",
             w.memory_roof());
    roof("DRAM", roofs.dram_bytes_per_second);
    for (const WidthResult& w : widths) {
        std::vector<double> xs, ys;
        for (std::size_t k = 0; k < w.timings.size(); ++k) {
            const BatchTiming& t = w.timings[k];
            if (w.roofs[k].memory.probe_failed() || w.roofs[k].arithmetic.probe_failed()) continue;
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
    const BatchRoof& one = w.roofs.front();
    json.add(prefix + "model", w.config.describe())
        .add(prefix + "weight_bytes_per_step", weight_bytes_per_step(w.config))
        .add(prefix + "batches", batch_table(w, roofs))
        .add(prefix + "working_set_bytes_batch1", one.bytes)
        .add(prefix + "read_bytes_per_second_at_working_set", one.read_at_size)
        .add(prefix + "memory_roof", one.level)
        .add(prefix + "memory_roof_bytes_per_second", w.memory_roof())
        .add(prefix + "memory_roof_share_batch1", one.memory.share())
        .add(prefix + "memory_roof_probe_failed_batch1", one.memory.probe_failed())
        .add(prefix + "step_seconds_batch1", w.timings.front().step_seconds)
        .add(prefix + "tokens_per_second_batch1", w.timings.front().tokens_per_second())
        .add(prefix + "tokens_per_second_best", best.tokens_per_second())
        .add(prefix + "best_batch", best.batch)
        .add(prefix + "ridge_flops_per_byte", ridge_point(w.timings).flops_per_byte())
        .add(prefix + "machine_ridge_flops_per_byte", roofs.ridge(w.memory_roof()));
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
        .add("last_level_cache_bytes", r.caches.last_level)
        .add("cache_sizes_from", r.caches.source)
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
              << "times: the fastest of " << batch_sampling(r.repeats).rounds << " rounds of "
              << r.repeats
              << " steps, each round after a warm-up step, the batch sizes taking turns,\n"
              << "  as make bench times its steps: thread CPU time, the thread kept on its core\n"
              << "roofs (this thread, the machine probes, sampled beside the batches): multiply "
                 "then add "
              << fixed(r.roofs.peak_flops / 1e9, 1) << " GFLOP/s; reads "
              << fixed(r.roofs.dram_bytes_per_second / 1e9, 1) << " GB/s from DRAM (over "
              << format_bytes(r.dram_probe_bytes)
              << "), and each batch's working set read at its own size\n"
              << "caches (cpu0): " << describe(r.caches)
              << ": they only name the level; every roof is a read measured here\n";
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
