// Chapter 04's experiment: one decode step timed for batches of 1, 2, 4,
// ... ragged sequences, at the demo width and at a width whose weights miss
// the CPU's cache; every batched step of the demo width checked against the
// sequences decoded alone; and this thread's roofs, sampled beside the
// batches: peak arithmetic, DRAM, and each batch's working set read at its
// own size (common/fast/memory_level.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../../common/core/timing.h"
#include "../../common/fast/machine_probes.h"
#include "../../common/fast/memory_level.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/machine.h"
#include "../../common/kit/model_flags.h"
#include "../../common/kit/program.h"
#include "../../common/kit/report.h"
#include "../../common/real_weights/model_source.h"
#include "arithmetic_intensity.h"
#include "batch_benchmark.h"

namespace kv::ch04 {

// One batch's step against this thread's limits (common/fast/memory_level.h).
struct BatchRoof {
    std::uint64_t bytes = 0;  // its working set: the weights and every sequence's keys and values
    double read_at_size = 0;  // bytes/s of the best read of that many bytes
    double roof = 0;          // bytes/s: the fastest read of that many bytes or more
    std::string level;        // where the bytes come from, as the reader is told
    Share memory;             // the step's bytes per second against the roof
    Share arithmetic;         // its FLOP/s against the peak
    int measured_again = 0;   // rounds of measuring again it took (0: none needed)
};

// One model width's results.
struct WidthResult {
    Config config;
    std::vector<BatchTiming> timings;  // batch sizes 1, 2, 4, ...
    std::vector<BatchRoof> roofs;      // (batch sizes) each batch against the limits

    // Batch 1's roof: the highest of the width's (its working set is the
    // smallest), the line the roofline plot draws.
    double memory_roof() const { return roofs.empty() ? 0.0 : roofs.front().roof; }
};

struct Results {
    LoadedModel loaded;               // the demo-width model, its prompt and tokenizer
    int max_batch;                    // the largest batch
    int prompt_len;                   // the longest prompt
    int repeats;                      // timed decode steps per batch size in each round
    double mean_prompt;               // mean prompt length over all max_batch sequences
    std::vector<WidthResult> widths;  // the demo width, then the wide one (if any)
    AloneReference alone;             // every batched step of the demo width compared with it
    CacheSizes caches;                // as sysfs or CPUID report them: they only name levels
    Roofline roofs;                   // this thread's peak arithmetic and DRAM's read bandwidth
    std::uint64_t dram_probe_bytes;   // what the DRAM probe reads
};

// Rounds of measuring a batch's limits again, while its step is above one.
inline constexpr int kMeasureAgainTries = 3;

// Throws UsageError, starting with `prefix`, if the model's shape is wrong
// or its weights plus `other_bytes` (for `what`) take more than half of the
// memory this process may use.
inline void check_fits(const Config& c, double other_bytes, const std::string& prefix,
                       const std::string& what) {
    try {
        check_model(c, 0);  // the shape, and room for the weights
    } catch (const UsageError& e) {
        throw UsageError(prefix + e.what());
    }
    const double need = double(c.weight_bytes()) + other_bytes;
    if (const std::string beyond = beyond_memory(need, 0.5); !beyond.empty())
        throw UsageError(prefix + what + " needs " + format_bytes(std::uint64_t(need)) + ", " +
                         beyond);
}

struct Experiment {
    ModelChoice model;    // the model's shape and seed; random weights or a checkpoint
    int max_batch = 64;   // batch sizes 1, 2, 4, ... up to this
    int prompt_len = 32;  // longest prompt; each sequence's length is drawn from 1..this
    int repeats = 10;     // timed decode steps per batch size in each of 5 rounds (fastest kept)
    int wide_dim = 1024;  // width of the second model, whose weights miss the cache (0: none)
    std::uint64_t dram_probe = 0;  // bytes the DRAM probe reads (0: dram_probe_bytes; a test's
                                   // smaller buffer, no flag)

    void add_flags(Flags& flags) {
        model.add_flags(flags);
        flags.add("max-batch", max_batch, 1, 1024, "largest batch (sizes 1, 2, 4, ... up to it)");
        flags.add("prompt-len", prompt_len, 1, 1 << 20,
                  "longest prompt (lengths drawn from 1..it)");
        flags.add("repeats", repeats, 1, 1000,
                  "timed decode steps per batch size in each of 5 rounds (fastest kept)");
        flags.add("wide-dim", wide_dim, 0, 1 << 16,
                  "width of the second model, ffn 3x as wide (0: skip it)");
    }

    void check() const { model.check(); }

    Results run() const {
        LoadedModel loaded = model.load(prompt_len, 1);
        const Config config = loaded.model.config();  // a checkpoint brings its own shape
        const bool text_prompt = !model.source.prompt.empty();
        const int longest = text_prompt ? static_cast<int>(loaded.prompt.size()) : prompt_len;
        // The wide model keeps a checkpoint's heads: its width rounds up to
        // split into them with an even head size.
        const int step = 2 * config.n_heads;
        Config wide = config;  // the same model, wider; the feed-forward stays 3 x dim
        wide.dim = model.source.checkpoint.empty() ? wide_dim : (wide_dim + step - 1) / step * step;
        wide.ffn_dim = 3 * wide.dim;
        const int steps = kDecodeSteps;  // the checked ones and the timed one
        if (longest + steps > config.max_seq)
            throw UsageError(
                "--prompt-len " + std::to_string(longest) + " needs " +
                std::to_string(longest + steps) + " positions (" + std::to_string(steps) +
                " decode steps after it), more than --max-seq " + std::to_string(config.max_seq));
        const std::string bench = "--max-batch " + std::to_string(max_batch) +
                                  " with --prompt-len " + std::to_string(longest);
        check_fits(config, bench_bytes(config, max_batch, longest, steps), "", bench);
        const CacheSizes caches = cache_sizes();
        const std::uint64_t dram_bytes = dram_probe > 0 ? dram_probe : dram_probe_bytes(caches);
        // One buffer for every read: DRAM's, and each batch's working set
        // (the weights, and at most every sequence's keys and values).
        std::uint64_t probe_bytes = dram_bytes;
        for (const Config& c : {config, wide})
            if (c.dim > 0)
                probe_bytes =
                    std::max(probe_bytes, weight_bytes_per_step(c) +
                                              std::uint64_t(max_batch) *
                                                  c.kv_bytes(std::uint64_t(longest + steps)));
        check_fits(config, double(probe_bytes), "",
                   "the read-bandwidth probe reads a buffer of " + format_bytes(probe_bytes) +
                       " (DRAM's: eight times this CPU's last-level cache, 256 MiB to 1 GiB, 1 GiB "
                       "where none is reported; or the largest batch's working set) beside the "
                       "model's weights:");
        if (wide.dim > 0)
            check_fits(wide, bench_bytes(wide, max_batch, longest, steps),
                       "--wide-dim " + std::to_string(wide_dim) + ": ", bench);

        std::vector<std::vector<int>> prompts =
            ragged_prompts(max_batch, longest, config.vocab_size, model.seed);
        if (text_prompt) {
            // Text prompt: sequence 0 gets all of it, the others ragged beginnings of it.
            for (std::vector<int>& p : prompts)
                p.assign(loaded.prompt.begin(), loaded.prompt.begin() + p.size());
            prompts[0] = loaded.prompt;
        }
        double mean_prompt = 0;
        for (const std::vector<int>& p : prompts) mean_prompt += double(p.size()) / max_batch;
        const std::vector<int> sizes = batch_sizes_up_to(max_batch);

        // The demo width, every batched step checked against decoding alone.
        AloneReference alone = [&] {
            Progress progress("prefilling the sequences alone");  // a long prompt takes a while
            return AloneReference(loaded.model, prompts, steps);
        }();
        const ReadBandwidthProbe probe(probe_bytes);
        Limits limits(probe, dram_bytes);
        std::vector<WidthResult> widths;
        widths.push_back(time_batches(loaded.model, prompts, sizes, limits,
                                      [&](int s, const Matrix& l) { alone.compare(s, l); }));
        if (wide.dim > 0) {
            Transformer wide_model(wide, model.seed);
            widths.push_back(time_batches(wide_model, prompts, sizes, limits));
        }
        // Every step against the limits, now that all are measured.
        for (WidthResult& w : widths) limits.price(w, caches);
        Roofline roofs;
        roofs.peak_flops = limits.peak;
        roofs.dram_bytes_per_second = limits.dram;
        return {std::move(loaded), max_batch,        longest, repeats, mean_prompt,
                std::move(widths), std::move(alone), caches,  roofs,   probe.readable(dram_bytes)};
    }

  private:
    // This thread's limits, sampled beside the batches: the peak and DRAM
    // once a round, each batch's working set after its steps in every round.
    struct Limits {
        Limits(const ReadBandwidthProbe& p, std::uint64_t d) : probe(p), dram_bytes(d) {}
        const ReadBandwidthProbe& probe;
        std::uint64_t dram_bytes;
        double peak = 0;                  // FLOP/s, the best sample
        double dram = 0;                  // bytes/s, the best sample
        std::vector<MeasuredRead> reads;  // every read at a working set's size (its best)

        // A sample of each, about 10 ms (a batch-64 step of the demo width).
        void sample_peak_and_dram() {
            peak = std::max(peak, peak_multiply_then_add_flops(1, 2'000'000));
            dram = std::max(dram, probe.read_rate(dram_bytes, 1, dram_bytes));
        }
        // A read of `bytes`, after a pass that brings them into a cache
        // (the step before left its own bytes there, not the probe's); at
        // least kLeastRead in all, passes over the buffer again and again,
        // so that a small working set's read is not the clock's overhead.
        void sample_at(MeasuredRead& read) {
            const std::uint64_t least = std::max(read.bytes, kLeastRead);
            probe.read_rate(read.bytes, 1, read.bytes);
            read.bytes_per_second =
                std::max(read.bytes_per_second, probe.read_rate(read.bytes, 1, least));
        }
        static constexpr std::uint64_t kLeastRead = 4 << 20;
        std::vector<MeasuredRead> all_reads() const {
            std::vector<MeasuredRead> all = reads;
            all.push_back({probe.readable(dram_bytes), dram});
            return all;
        }
        // Each batch of `w` against its roof and the peak.
        void price(WidthResult& w, const CacheSizes& caches) {
            for (std::size_t k = 0; k < w.timings.size(); ++k) {
                BatchRoof& roof = w.roofs[k];
                const BatchTiming& t = w.timings[k];
                for (const MeasuredRead& r : reads)
                    if (r.bytes == probe.readable(roof.bytes))
                        roof.read_at_size = r.bytes_per_second;
                roof.roof = measured_roof(probe.readable(roof.bytes), all_reads());
                roof.level = memory_level_name(roof.bytes, caches, roof.read_at_size, dram);
                roof.memory = share_of(t.arithmetic.bytes() / t.step_seconds, roof.roof);
                roof.arithmetic = share_of(t.arithmetic.flops() / t.step_seconds, peak);
            }
        }
    };

    // One width's bench, its prefill and rounds shown on a terminal, each
    // batch's working set read after its steps in every round; a batch
    // above a limit has its limits and its step measured again.
    WidthResult time_batches(Transformer& m, const std::vector<std::vector<int>>& prompts,
                             const std::vector<int>& sizes, Limits& limits,
                             const BatchStepCallback& on_step = {}) const {
        const std::string dim = "dim " + std::to_string(m.config().dim);
        DecodeBench bench = [&] {
            Progress prefilling(dim + ", prefilling the sequences");
            return DecodeBench(m, prompts, batch_sampling(repeats));
        }();
        WidthResult w;
        w.config = m.config();
        std::vector<std::size_t> read_of;  // (batch sizes) its entry in limits.reads
        Progress progress(dim + ", round");
        bench.run(
            sizes, on_step,
            [&](int round, int rounds) {
                progress.update(round, rounds);
                limits.sample_peak_and_dram();
                if (round > 0) return;
                // The working sets, known once the batches are decoded up to the timed step.
                for (const BatchTiming& t : bench.timings()) {
                    const std::uint64_t bytes = std::uint64_t(t.arithmetic.bytes());
                    BatchRoof& roof = w.roofs.emplace_back();
                    roof.bytes = bytes;
                    read_of.push_back(limits.reads.size());
                    limits.reads.push_back({limits.probe.readable(bytes), 0});
                }
            },
            [&](int k) { limits.sample_at(limits.reads[read_of[std::size_t(k)]]); });
        w.timings = bench.timings();
        limits.price(w, CacheSizes{});
        for (std::size_t k = 0; k < sizes.size(); ++k) {
            BatchRoof& roof = w.roofs[k];
            roof.measured_again = measure_again_while(
                [&] { return roof.memory.probe_failed() || roof.arithmetic.probe_failed(); },
                kMeasureAgainTries,
                [&] {
                    limits.sample_peak_and_dram();
                    limits.sample_at(limits.reads[read_of[k]]);
                    bench.sample_again(static_cast<int>(k));
                    w.timings = bench.timings();
                    limits.price(w, CacheSizes{});
                });
        }
        return w;
    }
};

}  // namespace kv::ch04
