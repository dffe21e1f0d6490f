// What the chapter prints: one table row per batch size, the best batch,
// and the size of this CPU's largest cache, which decides whether the
// weights come from cache or from memory at every step.
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "../../common/core/config.h"
#include "../../common/kit/report.h"
#include "../../common/kit/svg_plot.h"
#include "arithmetic_intensity.h"
#include "batch_benchmark.h"

namespace kv {

inline Table batch_table(const std::vector<BatchTiming>& timings) {
    Table table({"batch", "step (ms)", "per token (ms)", "tokens/s", "speed-up per token",
                 "GFLOP per step", "FLOPs/byte", "GFLOP/s", "GB/s of weights"});
    const double base = timings.front().seconds_per_token();
    for (const BatchTiming& t : timings) {
        const StepArithmetic& a = t.arithmetic;
        table.add_row({t.batch, Cell(t.step_seconds * 1e3, 3), Cell(t.seconds_per_token() * 1e3, 3),
                       Cell(t.tokens_per_second(), 0), Cell(base / t.seconds_per_token(), 2),
                       Cell(a.flops() / 1e9, 3), Cell(a.flops_per_byte(), 1),
                       Cell(a.flops() / t.step_seconds / 1e9, 1),
                       Cell(a.weight_bytes / t.step_seconds / 1e9, 1)});
    }
    return table;
}

// The batch size with the most tokens per second.
inline const BatchTiming& best_throughput(const std::vector<BatchTiming>& timings) {
    const BatchTiming* best = &timings.front();
    for (const BatchTiming& t : timings)
        if (t.tokens_per_second() > best->tokens_per_second()) best = &t;
    return *best;
}

// Where a step stops waiting for weights and starts waiting for arithmetic
// (the ridge point of the roofline model), from two measured rates: how
// fast batch 1 streams weights, and the fastest arithmetic of any batch. A
// step whose intensity is below their ratio is limited by memory; above
// it, by arithmetic. The weight products do B/2 FLOPs per byte, so the
// batch size at the ridge is about twice the ratio.
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

// One model width's results.
struct WidthResult {
    Config config;
    std::vector<BatchTiming> timings;  // batch sizes 1, 2, 4, ...
};

// The table of one width, headed by its weight bytes against the CPU's
// cache, and followed by its ridge point.
inline void print_width(std::ostream& out, const WidthResult& w, std::uint64_t cache_bytes,
                        double memory_bytes_per_second) {
    const std::uint64_t bytes = weight_bytes_per_step(w.config);
    out << "\ndim " << w.config.dim << ", ffn " << w.config.ffn_dim << ": "
        << with_commas(multiplied_parameters(w.config)) << " multiplied weights, "
        << format_bytes(bytes) << " read per step";
    if (cache_bytes > 0)
        out << " (" << (bytes <= cache_bytes ? "fit" : "do not fit") << " in the "
            << format_bytes(cache_bytes) << " largest CPU cache)";
    out << "\n";
    batch_table(w.timings).print(out);
    const Ridge r = ridge_point(w.timings);
    char text[400];
    std::snprintf(text, sizeof text,
                  "  batch 1 reads weights at %.1f GB/s (%.0f%% of what this core streams from "
                  "memory);\n  arithmetic peaks at %.1f GFLOP/s (batch %d). The two balance at "
                  "%.1f FLOPs per byte,\n  about batch %.0f: below it a step waits for weights, "
                  "above it for arithmetic.\n",
                  r.bytes_per_second / 1e9, 100 * r.bytes_per_second / memory_bytes_per_second,
                  r.flops_per_second / 1e9, r.at_batch, r.flops_per_byte(), r.batch());
    out << text;
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

// One width's numbers for --json, each key starting with `prefix`.
inline void add_width_json(Json& json, const std::string& prefix, const WidthResult& w) {
    const BatchTiming& best = best_throughput(w.timings);
    json.add(prefix + "model", w.config.describe())
        .add(prefix + "weight_bytes_per_step", weight_bytes_per_step(w.config))
        .add(prefix + "batches", batch_table(w.timings))
        .add(prefix + "tokens_per_second_batch1", w.timings.front().tokens_per_second())
        .add(prefix + "tokens_per_second_best", best.tokens_per_second())
        .add(prefix + "best_batch", best.batch)
        .add(prefix + "ridge_flops_per_byte", ridge_point(w.timings).flops_per_byte());
}

// Size in bytes of the highest-level cache of CPU 0, as Linux reports it in
// /sys ("32768K"); 0 where that cannot be read (another OS). sysconf()'s
// _SC_LEVEL3_CACHE_SIZE is not used: under some hypervisors it reports the
// whole host's cache, not what this core can use.
inline std::uint64_t last_level_cache_bytes() {
    std::uint64_t best = 0;
    int best_level = 0;
    for (int index = 0; index < 8; ++index) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
        std::ifstream level_file(dir + "/level"), size_file(dir + "/size");
        int level = 0;
        std::string size;
        if (!(level_file >> level) || !(size_file >> size) || size.empty()) continue;
        std::uint64_t unit = 1;
        if (size.back() == 'K') unit = 1024;
        if (size.back() == 'M') unit = 1024 * 1024;
        std::uint64_t number = 0;
        for (char ch : size) {
            if (ch < '0' || ch > '9' || number > (1ull << 40)) break;
            number = number * 10 + std::uint64_t(ch - '0');
        }
        if (level > best_level && number > 0) best_level = level, best = number * unit;
    }
    return best;
}

}  // namespace kv
