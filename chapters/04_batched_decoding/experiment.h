// Chapter 04's experiment: one decode step timed for batches of 1, 2, 4,
// ... ragged sequences, at the demo width and at a width whose weights do
// not fit in the CPU's cache; every batched step of the demo width checked
// against the same sequences decoded alone; and this core's roofs: its peak
// arithmetic, how fast it reads from DRAM, and how fast it reads a buffer
// the size of each width's weights, where they fit the reported last-level
// cache (common/kit/memory_level.h: the cache's roof only if that read is
// more than 1.2 x DRAM's).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../../common/kit/answer_timing.h"  // PassesShown
#include "../../common/kit/flags.h"
#include "../../common/kit/machine.h"
#include "../../common/kit/machine_probes.h"
#include "../../common/kit/memory_level.h"
#include "../../common/kit/model_flags.h"
#include "../../common/kit/program.h"
#include "../../common/kit/report.h"
#include "../../common/real_weights/model_source.h"
#include "batch_benchmark.h"
#include "roofline.h"

namespace kv::ch04 {

// One model width's results.
struct WidthResult {
    Config config;
    std::vector<BatchTiming> timings;  // batch sizes 1, 2, 4, ...
    double read_at_weights = 0;        // bytes/s reading a buffer its weights' size (0: not read,
                                       // they do not fit the reported last level)
};

struct Results {
    LoadedModel loaded;               // the demo-width model, its prompt and tokenizer
    int max_batch;                    // the largest batch
    int prompt_len;                   // the longest prompt
    int repeats;                      // timed decode steps per batch size
    double mean_prompt;               // mean prompt length over all max_batch sequences
    std::vector<WidthResult> widths;  // the demo width, then the wide one (if any)
    bool same_tokens;                 // batched vs alone, every sequence-step
    double max_logit_difference;      // over those sequence-steps
    long rows_compared;               // sequence-steps compared
    std::vector<int> answer0;         // sequence 0's answer decoded alone
    std::uint64_t cache_bytes;        // the largest CPU cache, as Linux reports it (0: unknown)
    Roofline roofs;                   // this thread's peak arithmetic and DRAM's read bandwidth
    std::uint64_t dram_probe_bytes;   // the buffer the DRAM probe reads
};

// The roofs every width shares, measured by the kit's probes (the bench's):
// the best of three runs each.
inline Roofline measure_roofs(std::uint64_t dram_bytes) {
    Roofline roofs;
    roofs.peak_flops = peak_multiply_then_add_flops();
    roofs.dram_bytes_per_second = ReadBandwidthProbe(dram_bytes).bytes_per_second();
    return roofs;
}

// How fast this thread reads a buffer the size of `c`'s weights (best of
// three runs), if they fit the reported last level; 0 if they do not (they
// are read from DRAM, nothing to measure).
inline double read_at_weights_size(const Config& c, std::uint64_t reported_last_level) {
    const std::uint64_t bytes = weight_bytes_per_step(c);
    if (!fits_reported_last_level(bytes, reported_last_level)) return 0;
    return ReadBandwidthProbe(bytes).bytes_per_second();
}

// Throws UsageError, starting with `flag_prefix`, if the model's shape is
// wrong or its weights plus bench_bytes() would take more than half of the
// memory this process may use (the message names that limit).
inline void check_bench_fits(const Config& c, int sequences, int longest_prompt, int repeats,
                             const std::string& flag_prefix) {
    try {
        check_model(c, 0);  // the shape, and room for the weights
    } catch (const UsageError& e) {
        throw UsageError(flag_prefix + e.what());
    }
    const double need =
        double(c.weight_bytes()) + bench_bytes(c, sequences, longest_prompt, decode_steps(repeats));
    if (const std::string beyond = beyond_memory(need, 0.5); !beyond.empty())
        throw UsageError(flag_prefix + "--max-batch " + std::to_string(sequences) +
                         " with --prompt-len " + std::to_string(longest_prompt) +
                         " and --repeats " + std::to_string(repeats) + " needs " +
                         format_bytes(std::uint64_t(need)) + ", " + beyond);
}

// Throws UsageError if the DRAM probe's buffer would not fit beside the
// demo model's weights in half of the memory this process may use. It is
// the largest buffer a probe reads (a read at a width's size is made only if
// its weights fit the reported last-level cache), and the probes run one
// after the other. The probes are sized by this machine's caches, not by a
// flag (machine_probes.h).
inline void check_probes_fit(const Config& c, std::uint64_t probe_bytes) {
    const double need = double(c.weight_bytes()) + double(probe_bytes);
    if (const std::string beyond = beyond_memory(need, 0.5); !beyond.empty())
        throw UsageError("the DRAM read-bandwidth probe reads a buffer of " +
                         format_bytes(probe_bytes) + " (eight times this CPU's last-level cache, " +
                         "256 MiB to 1 GiB) beside the model's weights: " +
                         format_bytes(std::uint64_t(need)) + ", " + beyond);
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
        int wide_dim = this->wide_dim;
        if (!model.source.checkpoint.empty() && wide_dim % (2 * config.n_heads) != 0) {
            // The wide model keeps the checkpoint's heads (stories15M has 6), so
            // its width must split into them with an even head size: round up.
            const int step = 2 * config.n_heads;
            wide_dim = (wide_dim + step - 1) / step * step;
        }
        const int steps = decode_steps(repeats);  // the timed ones and a warm-up per round
        if (longest + steps > config.max_seq)
            throw UsageError("--prompt-len " + std::to_string(longest) + " and --repeats " +
                             std::to_string(repeats) + " need " + std::to_string(longest + steps) +
                             " positions, more than --max-seq " + std::to_string(config.max_seq));
        Config wide = config;  // the same model, wider; the feed-forward stays 3 x dim
        wide.dim = wide_dim;
        wide.ffn_dim = 3 * wide_dim;
        check_bench_fits(config, max_batch, longest, repeats, "");
        const CacheSizes caches = cache_sizes();
        const std::uint64_t dram_bytes = dram_probe_bytes(caches);
        check_probes_fit(config, dram_bytes);
        if (wide_dim > 0)
            check_bench_fits(wide, max_batch, longest, repeats,
                             "--wide-dim " + std::to_string(wide_dim) + ": ");

        std::vector<std::vector<int>> prompts =
            ragged_prompts(max_batch, longest, config.vocab_size, model.seed);
        if (text_prompt) {
            // Text prompt: sequence 0 gets all of it, the others ragged beginnings of it.
            for (std::vector<int>& p : prompts)
                p.assign(loaded.prompt.begin(), loaded.prompt.begin() + p.size());
            prompts[0] = loaded.prompt;
        }
        const std::vector<int> sizes = batch_sizes_up_to(max_batch);

        // The demo width, every batched step checked against decoding alone.
        std::vector<WidthResult> widths;
        AloneReference alone = [&] {
            // A long prompt's prefills run minutes before the first round.
            Progress progress("prefilling the sequences alone");
            const PassesShown passes(loaded.model, progress);
            return AloneReference(loaded.model, prompts, steps);
        }();
        widths.push_back(
            {config, time_batches(loaded.model, prompts, sizes,
                                  [&](int s, const Matrix& l) { alone.compare(s, l); })});
        if (wide_dim > 0) {
            Transformer wide_model(wide, model.seed);
            widths.push_back({wide, time_batches(wide_model, prompts, sizes)});
        }
        const Roofline roofs = measure_roofs(dram_bytes);
        for (WidthResult& w : widths)
            w.read_at_weights = read_at_weights_size(w.config, caches.last_level);
        return {std::move(loaded),
                max_batch,
                longest,
                repeats,
                mean_length(prompts),
                std::move(widths),
                alone.same_tokens(),
                alone.largest_difference(),
                alone.rows_compared(),
                alone.answer(0),
                caches.last_level,
                roofs,
                dram_bytes};
    }

  private:
    // One width's bench, its rounds shown on a terminal.
    std::vector<BatchTiming> time_batches(Transformer& m,
                                          const std::vector<std::vector<int>>& prompts,
                                          const std::vector<int>& sizes,
                                          const BatchStepCallback& on_step = {}) const {
        DecodeBench bench = [&] {
            Progress prefilling("dim " + std::to_string(m.config().dim) +
                                ", prefilling the sequences");
            const PassesShown passes(m, prefilling);
            return DecodeBench(m, prompts, repeats);
        }();
        Progress progress("dim " + std::to_string(m.config().dim) + ", round");
        return bench.run(sizes, on_step,
                         [&](int round, int rounds) { progress.update(round, rounds); });
    }
};

}  // namespace kv::ch04
