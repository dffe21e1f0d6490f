// Chapter 04's experiment: one decode step timed for batches of 1, 2, 4,
// ... ragged sequences, at the demo width and at a width whose weights miss
// the CPU's cache; every batched step of the demo width checked against the
// sequences decoded alone; and this thread's roofs (peak arithmetic, DRAM,
// and each width's weights read at their size where they may fit a cache).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../common/fast/machine_probes.h"
#include "../../common/fast/memory_level.h"
#include "../../common/kit/answer_timing.h"  // PassesShown
#include "../../common/kit/flags.h"
#include "../../common/kit/machine.h"
#include "../../common/kit/model_flags.h"
#include "../../common/kit/program.h"
#include "../../common/kit/report.h"
#include "../../common/real_weights/model_source.h"
#include "arithmetic_intensity.h"
#include "batch_benchmark.h"

namespace kv::ch04 {

// One model width's results.
struct WidthResult {
    Config config;
    std::vector<BatchTiming> timings;  // batch sizes 1, 2, 4, ...
    double read_at_weights = 0;        // bytes/s reading a buffer its weights' size (0: not read,
                                       // they do not fit the reported last level)
    bool from_last_level = false;      // its weights are read from the last-level cache
    double memory_roof = 0;            // bytes/s: that cache's read, or DRAM's (memory_level.h)
};

struct Results {
    LoadedModel loaded;               // the demo-width model, its prompt and tokenizer
    int max_batch;                    // the largest batch
    int prompt_len;                   // the longest prompt
    int repeats;                      // timed decode steps per batch size
    double mean_prompt;               // mean prompt length over all max_batch sequences
    std::vector<WidthResult> widths;  // the demo width, then the wide one (if any)
    AloneReference alone;             // every batched step of the demo width compared with it
    std::uint64_t cache_bytes;        // the largest CPU cache, as Linux reports it (0: unknown)
    Roofline roofs;                   // this thread's peak arithmetic and DRAM's read bandwidth
    std::uint64_t dram_probe_bytes;   // the buffer the DRAM probe reads
};

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
    int repeats = 15;     // timed decode steps per batch size; each round adds a warm-up
    int wide_dim = 1024;  // width of the second model, whose weights miss the cache (0: none)

    void add_flags(Flags& flags) {
        model.add_flags(flags);
        flags.add("max-batch", max_batch, 1, 1024, "largest batch (sizes 1, 2, 4, ... up to it)");
        flags.add("prompt-len", prompt_len, 1, 1 << 20,
                  "longest prompt (lengths drawn from 1..it)");
        flags.add("repeats", repeats, 1, 1000, "timed decode steps per batch size (median)");
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
        const int steps = decode_steps(repeats);  // the timed ones and a warm-up per round
        if (longest + steps > config.max_seq)
            throw UsageError("--prompt-len " + std::to_string(longest) + " and --repeats " +
                             std::to_string(repeats) + " need " + std::to_string(longest + steps) +
                             " positions, more than --max-seq " + std::to_string(config.max_seq));
        const std::string bench = "--max-batch " + std::to_string(max_batch) +
                                  " with --prompt-len " + std::to_string(longest) +
                                  " and --repeats " + std::to_string(repeats);
        check_fits(config, bench_bytes(config, max_batch, longest, steps), "", bench);
        const CacheSizes caches = cache_sizes();
        const std::uint64_t dram_bytes = dram_probe_bytes(caches);

        check_fits(config, double(dram_bytes), "",
                   "the DRAM read-bandwidth probe reads a buffer of " + format_bytes(dram_bytes) +
                       " (eight times this CPU's last-level cache, 256 MiB to 1 GiB) beside the "
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
            const PassesShown passes(loaded.model, progress);
            return AloneReference(loaded.model, prompts, steps);
        }();
        std::vector<WidthResult> widths;
        widths.push_back(
            {config, time_batches(loaded.model, prompts, sizes,
                                  [&](int s, const Matrix& l) { alone.compare(s, l); })});
        if (wide.dim > 0) {
            Transformer wide_model(wide, model.seed);
            widths.push_back({wide, time_batches(wide_model, prompts, sizes)});
        }
        // The roofs; a width's weights are read at their own size if they may fit a cache.
        Roofline roofs;
        roofs.peak_flops = peak_multiply_then_add_flops();
        roofs.dram_bytes_per_second = ReadBandwidthProbe(dram_bytes).bytes_per_second();
        for (WidthResult& w : widths) {
            const std::uint64_t bytes = weight_bytes_per_step(w.config);
            if (fits_reported_last_level(bytes, caches.last_level))
                w.read_at_weights = ReadBandwidthProbe(bytes).bytes_per_second();
            w.from_last_level = reads_from_last_level(bytes, caches.last_level, w.read_at_weights,
                                                      roofs.dram_bytes_per_second);
            w.memory_roof = memory_roof(bytes, caches.last_level, w.read_at_weights,
                                        roofs.dram_bytes_per_second);
        }
        return {std::move(loaded), max_batch,        longest,           repeats, mean_prompt,
                std::move(widths), std::move(alone), caches.last_level, roofs,   dram_bytes};
    }

  private:
    // One width's bench, its prefill and rounds shown on a terminal.
    std::vector<BatchTiming> time_batches(Transformer& m,
                                          const std::vector<std::vector<int>>& prompts,
                                          const std::vector<int>& sizes,
                                          const BatchStepCallback& on_step = {}) const {
        const std::string dim = "dim " + std::to_string(m.config().dim);
        DecodeBench bench = [&] {
            Progress prefilling(dim + ", prefilling the sequences");
            const PassesShown passes(m, prefilling);
            return DecodeBench(m, prompts, repeats);
        }();
        Progress progress(dim + ", round");
        return bench.run(sizes, on_step,
                         [&](int round, int rounds) { progress.update(round, rounds); });
    }
};

}  // namespace kv::ch04
