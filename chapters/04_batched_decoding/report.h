// What chapter 04 prints: one table row per batch size for each width,
// the best batch, the ridge point, the throughput plots, the roofline plot
// and the check against decoding alone; or all of it as one JSON object.
#pragma once

#include <cmath>
#include <cstdint>
#include <iostream>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "../../common/core/config.h"
#include "../../common/kit/files.h"  // write_file
#include "../../common/kit/memory_level.h"
#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/kit/svg_plot.h"
#include "arithmetic_intensity.h"
#include "batch_benchmark.h"
#include "experiment.h"
#include "roofline.h"
#include "roofline_plot.h"

namespace kv::ch04 {

// One row per batch size. `roof_bytes_per_second` is the memory roof the
// width's weights are read from; "roof GFLOP/s" is what the roofline
// allows at the row's intensity (the lower of the two roofs).
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

// Where a width's weights are read from, the book's one rule (common/kit/
// memory_level.h, the one make bench uses too): the last-level cache if they
// fit in its reported size and a read of a buffer their size
// (`read_at_weights`) ran more than 1.2 x DRAM's rate; DRAM otherwise. The
// width's memory roof is then that measured read, or DRAM's.
inline bool weights_from_last_level(const Config& c, std::uint64_t last_level_cache_bytes,
                                    double read_at_weights, double dram_bytes_per_second) {
    return reads_from_last_level(weight_bytes_per_step(c), last_level_cache_bytes, read_at_weights,
                                 dram_bytes_per_second);
}

inline double width_memory_roof(const Config& c, std::uint64_t last_level_cache_bytes,
                                double read_at_weights, double dram_bytes_per_second) {
    return memory_roof(weight_bytes_per_step(c), last_level_cache_bytes, read_at_weights,
                       dram_bytes_per_second);
}

// The batch size with the most tokens per second.
inline const BatchTiming& best_throughput(const std::vector<BatchTiming>& timings) {
    const BatchTiming* best = &timings.front();
    for (const BatchTiming& t : timings)
        if (t.tokens_per_second() > best->tokens_per_second()) best = &t;
    return *best;
}

// Where these kernels stop waiting for weights and start waiting for
// arithmetic, from two measured rates: how fast batch 1 streams weights,
// and the fastest arithmetic of any batch. It is the roofline's ridge with
// the kernels' own best rate in place of the machine's peak (the machine's
// ridge is Roofline::ridge). The weight products do B/2 FLOPs per byte, so
// the batch size at the ridge is about twice the ratio.
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

// What the report says about one width, each fact made once and then
// printed as text or added to the JSON.
struct WidthFacts {
    const WidthResult& width;
    std::uint64_t weight_bytes;  // weights read per step
    bool from_last_level;        // its memory roof: the last-level cache's, or DRAM's
    double roof;                 // that roof, bytes per second
    double machine_ridge;        // the machine's ridge at that roof, FLOPs per byte
    Ridge kernels;               // the kernels' ridge
    const BatchTiming& best;     // the batch size with the most tokens per second
    Table batches;               // one row per batch size
};

inline WidthFacts width_facts(const WidthResult& w, const Results& r) {
    const double dram = r.roofs.dram_bytes_per_second;
    const bool llc = weights_from_last_level(w.config, r.cache_bytes, w.read_at_weights, dram);
    const double roof = width_memory_roof(w.config, r.cache_bytes, w.read_at_weights, dram);
    return {w,
            weight_bytes_per_step(w.config),
            llc,
            roof,
            r.roofs.ridge(roof),
            ridge_point(w.timings),
            best_throughput(w.timings),
            batch_table(w.timings, r.roofs, roof)};
}

// The table of one width, headed by its weight bytes against the CPU's
// cache, and followed by its roofline: the machine's ridge and the kernels'.
inline void print_width(std::ostream& out, const WidthFacts& f, const Results& r) {
    const Config& c = f.width.config;
    out << "\ndim " << c.dim << ", ffn " << c.ffn_dim << ": "
        << with_commas(multiplied_parameters(c)) << " multiplied weights, "
        << format_bytes(f.weight_bytes) << " read per step";
    const double dram = r.roofs.dram_bytes_per_second;
    if (r.cache_bytes == 0)
        out << " (no last-level cache reported: read from DRAM)";
    else if (!fits_reported_last_level(f.weight_bytes, r.cache_bytes))
        out << " (do not fit in the " << format_bytes(r.cache_bytes)
            << " largest CPU cache: read from DRAM)";
    else
        out << " (fit in the " << format_bytes(r.cache_bytes)
            << " largest CPU cache as reported; a read of that size ran at "
            << fixed(f.width.read_at_weights / 1e9, 1) << " GB/s, "
            << fixed(dram > 0 ? f.width.read_at_weights / dram : 0.0, 2) << " x DRAM's: "
            << (f.from_last_level ? "read from the cache" : "no more than 1.2 x, read from DRAM")
            << ")";
    out << "\n";
    f.batches.print(out);
    const Ridge& k = f.kernels;
    out << "  memory roof: " << (f.from_last_level ? "the last-level cache" : "DRAM") << ", "
        << fixed(f.roof / 1e9, 1) << " GB/s; batch 1 reads weights at "
        << fixed(k.bytes_per_second / 1e9, 1) << " GB/s ("
        << fixed(100 * k.bytes_per_second / f.roof, 0) << "% of it)\n"
        << "  the machine's ridge: " << fixed(r.roofs.peak_flops / 1e9, 1) << " GFLOP/s / "
        << fixed(f.roof / 1e9, 1) << " GB/s = " << fixed(f.machine_ridge, 1)
        << " FLOPs per byte, about batch " << fixed(batch_at_intensity(f.machine_ridge, 4), 0)
        << "\n  these kernels attain at most " << fixed(k.flops_per_second / 1e9, 1)
        << " GFLOP/s (batch " << k.at_batch << ", "
        << fixed(100 * k.flops_per_second / r.roofs.peak_flops, 0)
        << "% of the peak);\n  their line meets batch 1's rate at " << fixed(k.flops_per_byte(), 1)
        << " FLOPs per byte, about batch " << fixed(k.batch(), 0)
        << ":\n  below it a step waits for weights, above it for arithmetic.\n";
}

// Tokens per second against batch size, one line per width; with
// `relative`, divided by each width's batch-1 rate (the speed-up per token),
// so that widths whose rates differ tenfold can be compared on one scale.
inline SvgPlot throughput_plot(const std::vector<WidthResult>& widths, bool relative) {
    SvgPlot plot(relative ? "Decode speed-up per token over batch 1"
                          : "Decode throughput against batch size",
                 "batch size (sequences)",
                 relative ? "tokens per second / batch 1's" : "tokens per second");
    plot.set_log2_x(true);
    for (const WidthResult& w : widths) {
        const double base = relative ? w.timings.front().tokens_per_second() : 1.0;
        std::vector<double> xs, ys;
        for (const BatchTiming& t : w.timings) {
            xs.push_back(t.batch);
            ys.push_back(t.tokens_per_second() / base);
        }
        plot.add_series("dim " + std::to_string(w.config.dim), xs, ys);
    }
    return plot;
}

// What the roofline plot draws, every line from this run's numbers: the
// peak arithmetic across; a memory roof for the last-level cache for each
// width whose weights were read from it (by the rule above; its rate is the
// read at their size), then DRAM's, from the DRAM probe; and each width's
// steps, one point per batch size at the table's FLOPs/byte and GFLOP/s,
// joined by the line of what these kernels attain.
inline RooflineFigure roofline_figure(const std::vector<WidthResult>& widths, const Roofline& roofs,
                                      std::uint64_t last_level_cache_bytes) {
    RooflineFigure f;
    const double dram = roofs.dram_bytes_per_second;
    f.peak_flops = roofs.peak_flops;
    f.peak_label = "peak, multiply then add: " + fixed(roofs.peak_flops / 1e9, 1) + " GFLOP/s";
    std::vector<const WidthResult*> cached;
    for (const WidthResult& w : widths)
        if (weights_from_last_level(w.config, last_level_cache_bytes, w.read_at_weights, dram))
            cached.push_back(&w);
    for (const WidthResult* w : cached)  // a width named only if two widths were read there
        f.memory_roofs.push_back(
            {"last-level cache" +
                 (cached.size() > 1 ? " (dim " + std::to_string(w->config.dim) + ")" : "") + ": " +
                 fixed(w->read_at_weights / 1e9, 1) + " GB/s",
             w->read_at_weights});
    f.memory_roofs.push_back({"DRAM: " + fixed(dram / 1e9, 1) + " GB/s", dram});
    for (const WidthResult& w : widths) {
        if (w.timings.empty()) continue;
        AchievedLine line;
        line.label = "dim " + std::to_string(w.config.dim) + ": what these kernels attain";
        for (const BatchTiming& t : w.timings)
            line.points.push_back(
                {t.batch, t.arithmetic.flops_per_byte(), t.arithmetic.flops() / t.step_seconds});
        const Ridge best = ridge_point(w.timings);
        line.note = "at most " + fixed(best.flops_per_second / 1e9, 1) + " GFLOP/s, at batch " +
                    std::to_string(best.at_batch);
        f.achieved.push_back(std::move(line));
    }
    return f;
}

// One width's numbers for --json, each key starting with `prefix`.
inline void add_width_json(Json& json, const std::string& prefix, const WidthFacts& f) {
    json.add(prefix + "model", f.width.config.describe())
        .add(prefix + "weight_bytes_per_step", f.weight_bytes)
        .add(prefix + "batches", f.batches)
        .add(prefix + "read_bytes_per_second_at_weights_size", f.width.read_at_weights)
        .add(prefix + "memory_roof", f.from_last_level ? "last_level_cache" : "dram")
        .add(prefix + "memory_roof_bytes_per_second", f.roof)
        .add(prefix + "tokens_per_second_batch1", f.width.timings.front().tokens_per_second())
        .add(prefix + "tokens_per_second_best", f.best.tokens_per_second())
        .add(prefix + "best_batch", f.best.batch)
        .add(prefix + "ridge_flops_per_byte", f.kernels.flops_per_byte())
        .add(prefix + "machine_ridge_flops_per_byte", f.machine_ridge);
}

// Writes the plots, then the JSON or the text. Returns the exit status: 1
// if a batched step chose another token than the sequence alone.
inline int report(const Results& r, const OutputOptions& out) {
    const LoadedModel& loaded = r.loaded;
    const int status = r.same_tokens ? 0 : 1;
    const std::string plot_path =
        throughput_plot(r.widths, false).write(out.plot_dir + "/04_tokens_per_second.svg");
    const std::string speedup_path =
        throughput_plot(r.widths, true).write(out.plot_dir + "/04_speedup.svg");
    const std::string roofline_path = out.plot_dir + "/04_roofline.svg";
    write_file(roofline_path, roofline_svg(roofline_figure(r.widths, r.roofs, r.cache_bytes)),
               "--plot-dir");
    const bool has_text = loaded.tokenizer.has_value();
    const std::string prompt_text = loaded.prompt_text();
    const std::string answer_text = loaded.answer_text(r.answer0);
    std::vector<WidthFacts> widths;
    for (const WidthResult& w : r.widths) widths.push_back(width_facts(w, r));

    Json json;
    json.add("chapter", "04_batched_decoding")
        .add("max_batch", r.max_batch)
        .add("longest_prompt", r.prompt_len)
        .add("mean_prompt", r.mean_prompt)
        .add("repeats", r.repeats)
        .add("last_level_cache_bytes", r.cache_bytes)
        .add("peak_flops", r.roofs.peak_flops)
        .add("dram_bytes_per_second", r.roofs.dram_bytes_per_second)
        .add("dram_probe_bytes", r.dram_probe_bytes)
        .add("same_tokens", r.same_tokens)
        .add("max_logit_difference", r.max_logit_difference)
        .add("weights", loaded.weights);
    if (has_text) json.add("answer_text", answer_text);
    add_width_json(json, "", widths[0]);  // the closing table's keys: the demo model
    if (widths.size() > 1) add_width_json(json, "wide_", widths[1]);
    if (emit(out, json.add("plot", plot_path)
                      .add("speedup_plot", speedup_path)
                      .add("roofline_plot", roofline_path)))
        return status;

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
    for (const WidthFacts& f : widths) print_width(std::cout, f, r);
    std::cout << "\nEach step reads every weight once and does 2 FLOPs with it per sequence:"
              << " the weight\nproducts do B/2 FLOPs per byte (B with 16-bit weights)."
              << " Attention adds 4 x layers x dim\nFLOPs per cached position of each"
              << " sequence, on keys and values no other sequence shares.\n\n"
              << "batched vs alone (chapter 02's decode_step), " << r.rows_compared
              << " sequence-steps: same tokens " << (r.same_tokens ? "yes" : "NO")
              << ", largest logit difference " << r.max_logit_difference
              << (r.max_logit_difference == 0 ? " (identical to the last bit)" : "")
              << "\nplots: " << visible(plot_path) << ", " << visible(speedup_path) << ", "
              << visible(roofline_path) << "\n\n";
    if (has_text)
        std::cout << "sequence 0, prompt: " << prompt_text << "\n"
                  << "sequence 0, answer (the same alone and in every batch): " << answer_text
                  << "\n\n";
    std::cout << "tokens per second, batch 1 -> best batch:";
    for (const WidthFacts& f : widths) {
        const BatchTiming& best = f.best;
        const double one = f.width.timings.front().tokens_per_second();
        std::cout << (&f == &widths[0] ? "" : ";") << " dim " << f.width.config.dim << ": "
                  << with_commas(std::llround(one)) << " -> "
                  << with_commas(std::llround(best.tokens_per_second())) << " at batch "
                  << best.batch << " (" << fixed(best.tokens_per_second() / one, 1) << " x)";
    }
    std::cout << "\n";
    return status;
}

}  // namespace kv::ch04
