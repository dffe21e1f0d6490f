// What chapter 04 prints: for each width a row per batch size, its roofs
// and ridges; the check against decoding alone; the throughput and
// roofline plots and the headline.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../../common/fast/machine_probes.h"
#include "../../common/fast/memory_level.h"
#include "../../common/kit/output.h"
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

inline std::string gflops(double flops_per_second) {  // "116.1 GFLOP/s"
    return fixed(flops_per_second / 1e9, 1) + " GFLOP/s";
}

// One row per batch size; "roof GFLOP/s" is what the roofline allows at the
// row's intensity with the batch's own memory roof.
inline Table batch_table(const WidthResult& w, const Roofline& roofs) {
    Table table({"batch", "step (ms)", "tokens/s", "speed-up per token", "GFLOP per step",
                 "FLOPs/byte", "GFLOP/s", "% of peak", "roof GFLOP/s", "MiB read", "GB/s read",
                 "roof GB/s", "% of roof"});
    for (std::size_t k = 0; k < w.timings.size(); ++k) {
        const BatchTiming& t = w.timings[k];
        const StepArithmetic& a = t.arithmetic;
        const BatchRoof& r = w.roofs.at(k);
        table.add_row({t.batch, Cell(t.step_seconds * 1e3, 3), Cell(t.tokens_per_second(), 0),
                       Cell(w.timings.front().seconds_per_token() / t.seconds_per_token(), 2),
                       Cell(a.flops() / 1e9, 3), Cell(a.flops_per_byte(), 1),
                       Cell(a.flops() / t.step_seconds / 1e9, 1), share_cell(r.arithmetic),
                       Cell(roofs.attainable(a.flops_per_byte(), r.roof) / 1e9, 1),
                       Cell(a.bytes() / double(1 << 20), 1),
                       Cell(a.bytes() / t.step_seconds / 1e9, 1), Cell(r.roof / 1e9, 1),
                       share_cell(r.memory)});
    }
    return table;
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
        plot.add_series(name + ": " + rate_cell(bytes_per_second).text,
                        {lowest, roofs.ridge(bytes_per_second)},
                        {lowest * bytes_per_second / 1e9, roofs.peak_flops / 1e9});
    };
    for (const WidthResult& w : widths)
        roof(concat("dim ", w.config.dim, " roof (", w.roofs.front().level, ")"), w.memory_roof());
    roof("DRAM", roofs.dram_bytes_per_second);
    for (const WidthResult& w : widths) {
        std::vector<double> xs, ys;
        for (std::size_t k = 0; k < w.timings.size(); ++k) {
            const BatchTiming& t = w.timings[k];
            if (w.roofs[k].memory.probe_failed() || w.roofs[k].arithmetic.probe_failed()) continue;
            xs.push_back(t.arithmetic.flops_per_byte());
            ys.push_back(t.arithmetic.flops() / t.step_seconds / 1e9);
        }
        plot.add_series(concat("dim ", w.config.dim, ", attained"), xs, ys);
    }
    plot.add_hline("peak: " + gflops(roofs.peak_flops), roofs.peak_flops / 1e9);
    return plot;
}

// One width's findings, each key opened by `prefix`: its weights, the
// table (batch 1's row is make bench's 'decode, batch 1'; a share its probe
// failed to bound says so in its cell), its memory roof, the machine's
// ridge and the kernels'.
inline void add_width(Findings& f, const std::string& prefix, const WidthResult& w,
                      const Roofline& roofs) {
    const Config& c = w.config;
    const BatchRoof& one = w.roofs.front();
    const BatchTiming &first = w.timings.front(), &best = best_throughput(w.timings);
    const Ridge k = ridge_point(w.timings);
    const double machine_ridge = roofs.ridge(w.memory_roof());
    f.text("")
        .line(prefix + "multiplied_weights", concat("dim ", c.dim, ", ffn ", c.ffn_dim),
              Cell(with_commas(c.multiplied_parameters()) + " multiplied weights, " +
                       format_bytes(weight_bytes_per_step(c)) +
                       " read per step, and each sequence's keys and values",
                   double(c.multiplied_parameters())))
        .table(prefix + "batches", "", batch_table(w, roofs))
        .line(prefix + "memory_roof_bytes_per_second",
              "  memory roof (the fastest read of " + format_bytes(one.bytes) + " or more, " +
                  one.level + ")",
              rate_cell(w.memory_roof()))
        .line(prefix + "machine_ridge_flops_per_byte",
              "  the machine's ridge: " + gflops(roofs.peak_flops) + " / " +
                  rate_cell(w.memory_roof()).text,
              Cell(fixed(machine_ridge, 1) + " FLOPs per byte, about batch " +
                       fixed(batch_at_intensity(machine_ridge, 4), 0),
                   machine_ridge))
        .line(prefix + "kernels_best_flops_per_second", "  these kernels attain at most",
              Cell(gflops(k.flops_per_second) + " (batch " + std::to_string(k.at_batch) + ", " +
                       fixed(100 * k.flops_per_second / roofs.peak_flops, 0) + "% of the peak)",
                   k.flops_per_second))
        .line(prefix + "ridge_flops_per_byte", "  their line meets batch 1's rate at",
              Cell(fixed(k.flops_per_byte(), 1) + " FLOPs per byte, about batch " +
                       fixed(k.batch(), 0),
                   k.flops_per_byte()))
        .text("  below it a step waits for weights, above it for arithmetic.")
        .data(prefix + "tokens_per_second_batch1", Cell(first.tokens_per_second(), 0))
        .data(prefix + "tokens_per_second_best", Cell(best.tokens_per_second(), 0))
        .data(prefix + "best_batch", best.batch);
}

// Returns 1 if a batched step chose another token than the sequence alone.
inline int report(const Results& r, const OutputOptions& out) {
    const LoadedModel& loaded = r.loaded;
    SvgPlot throughput("Decode throughput against batch size", "batch size (sequences)",
                       "tokens per second");
    throughput.set_log2_x(true);
    std::string headline = "tokens per second, batch 1 -> best batch:";
    for (const WidthResult& w : r.widths) {
        std::vector<double> xs, ys;
        for (const BatchTiming& t : w.timings) {
            xs.push_back(t.batch);
            ys.push_back(t.tokens_per_second());
        }
        throughput.add_series(concat("dim ", w.config.dim), xs, ys);
        const double one = w.timings.front().tokens_per_second(),
                     best = best_throughput(w.timings).tokens_per_second();
        headline += concat(&w == &r.widths[0] ? "" : ";", " dim ", w.config.dim, ": ",
                           with_commas(std::llround(one)), " -> ", with_commas(std::llround(best)),
                           " at batch ", best_throughput(w.timings).batch, " (",
                           fixed(best / one, 1), " x)");
    }

    Findings f("Chapter 04: batched decoding");
    f.line("model", "model", loaded.model.config().describe())
        .line("weights", "weights", outside_text(loaded.weights))
        .line("max_batch", "batches of 1, 2, 4, ... up to", r.max_batch)
        .line("longest_prompt", "longest prompt (each drawn from 1..it)", r.prompt_len)
        .line("mean_prompt", concat("  mean prompt over all ", r.max_batch), Cell(r.mean_prompt, 1))
        .line("repeats",
              concat("timed steps per batch in each of ", batch_sampling(r.repeats).rounds,
                     " rounds (the fastest kept, as make bench)"),
              r.repeats)
        .line("peak_flops", "peak, multiply then add",
              Cell(gflops(r.roofs.peak_flops), r.roofs.peak_flops))
        .line("dram_bytes_per_second",
              "read from DRAM (over " + format_bytes(r.dram_probe_bytes) + ")",
              rate_cell(r.roofs.dram_bytes_per_second))
        .line("cache_sizes", "caches (cpu0; they only name levels)", describe(r.caches));
    add_width(f, "", r.widths[0], r.roofs);  // the demo model
    if (r.widths.size() > 1) add_width(f, "wide_", r.widths[1], r.roofs);
    f.text("")
        .line("sequence_steps_compared",
              "batched vs alone (chapter 02's decode_step), sequence-steps compared",
              Cell(std::uint64_t(r.alone.rows_compared())))
        .line("same_tokens", "same tokens", yes_no(r.alone.same_tokens()))
        .line("max_logit_difference", "largest logit difference",
              difference_cell(r.alone.largest_difference()))
        .line("plot", "plot",
              outside_text(throughput.write(out.plot_dir + "/04_tokens_per_second.svg")))
        .line("roofline_plot", "roofline plot",
              outside_text(
                  roofline_plot(r.widths, r.roofs).write(out.plot_dir + "/04_roofline.svg")));
    if (loaded.tokenizer)
        f.line("prompt_text", "sequence 0, prompt", loaded.prompt_text())
            .line("answer_text", "sequence 0, answer (the same alone and in every batch)",
                  loaded.answer_text(r.alone.answer(0)));
    emit(out, f.headline(headline));
    return r.alone.same_tokens() ? 0 : 1;
}

}  // namespace kv::ch04
