// Chapter 10's experiment. What each format costs the answer: the queue's
// first --prompts requests, and --long-prompts answers reaching
// --long-context positions, answered in float32 and compared in every
// format (answer_agreement.h). What it buys (format_memory.h): bytes per
// token, the article's cache at 16 bits, the pool and the queue at each
// width, and a decode step at the long context timed on the engine.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../common/core/generation.h"
#include "../../common/core/timing.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/machine.h"  // beyond_memory, page_size, resident_bytes
#include "../../common/kit/model_flags.h"
#include "../../common/kit/program.h"
#include "../../common/kit/queue_flags.h"
#include "../../common/kit/report.h"
#include "../../common/lab/timed_step.h"
#include "../../common/real_weights/model_source.h"
#include "../../common/serving/metrics.h"
#include "../../common/serving/paged_memory.h"
#include "../../common/serving/scheduler.h"
#include "answer_agreement.h"
#include "format_memory.h"

namespace kv::ch10 {

struct ResidentGrowth {
    std::uint64_t formula;               // cache_bytes(cache_shape_of(config, format), positions)
    std::uint64_t allocated;             // KVCache::bytes_allocated()
    std::optional<std::int64_t> growth;  // resident bytes after writing minus before
    std::uint64_t page_size;             // the unit resident memory is counted in
};

// Allocates a cache of `positions` for `config`'s shape in `format`,
// writes every position of every layer, as decoding would, and measures
// how much the process's resident memory grew. Run it while the process
// is fresh (chapter 03 says why: a used process may recycle pages).
inline ResidentGrowth measure_resident_growth(Config config, int positions, NumberFormat format) {
    config.max_seq = std::max(config.max_seq, positions);
    ResidentGrowth r{cache_bytes(cache_shape_of(config, format), std::uint64_t(positions)), 0,
                     std::nullopt, page_size()};
    const std::optional<std::uint64_t> before = resident_bytes();
    auto cache = std::make_unique<KVCache>(config, positions, format);
    std::vector<float> key(std::size_t(config.kv_dim()), 0.5f), value(key.size(), -0.25f);
    for (int layer = 0; layer < config.n_layers; ++layer)
        for (int pos = 0; pos < positions; ++pos)
            cache->write(layer, pos, key.data(), value.data());
    const std::optional<std::uint64_t> after = resident_bytes();
    r.allocated = cache->bytes_allocated();
    if (before && after) r.growth = std::int64_t(*after) - std::int64_t(*before);
    return r;
}

struct FormatResult {
    NumberFormat format;
    FormatBytes bytes;               // per token: chapter 03's formula and the engine's caches
    AgreementTotals demo{};          // answers at the model's own lengths, against float32
    AgreementTotals long_context{};  // answers that reach the long context
    int conversations = 0;           // of the queue, at once in the pool
    Summary queue{};                 // the simulator's queue on that pool
    double decode_step_s = 0;        // a decode step at the long context (median, thread CPU)
};

struct Results {
    std::string model, weights;            // the model's shape; "random (seed 1)" or a checkpoint
    bool has_text = false;                 // --tokenizer: the first request shown as text
    std::string prompt_text, answer_text;  // its prompt, and float32's answer to it
    int prompts = 0, long_context = 0, long_prompts = 0;
    Config article;             // article_shape()
    int article_positions = 0;  // 4,096
    ResidentGrowth article_16;  // its cache at 16 bits (bfloat16), measured
    WorkloadOptions work;
    std::vector<Request> queue;
    std::uint64_t budget_mib = 0;
    int block_size = 0, batch = 0;
    std::string cost_model;             // "measured" or "analytic" (--cost-model)
    StepCalibration pricing;            // the step cost the simulator prices every width's steps by
    std::vector<FormatResult> formats;  // float32 first (all_formats())

    const FormatResult& at(NumberFormat f) const {
        for (const FormatResult& r : formats)
            if (r.format == f) return r;
        throw std::logic_error("no result for the format " + std::string(format_name(f)));
    }
};

inline QueueOptions batches_of(int batch) {
    QueueOptions q;
    q.batch = batch;
    return q;
}

// The article's cache shape (32 layers, 8 KV heads, head size 128), as a
// model the engine can allocate a cache for.
inline Config article_shape() {
    Config c;
    c.n_layers = 32, c.dim = 4096, c.n_heads = 32, c.n_kv_heads = 8, c.max_seq = 4096;
    return c;
}

struct Experiment {
    ModelChoice model;  // --layers ... --seed, --checkpoint (real_weights/model_source.h)
    // --requests ... --calibrate (kit/queue_flags.h): chapter 05's queue and
    // 16 MiB, in batches of up to 256, so that memory caps the batch before
    // the batch size does, at every width.
    QueueOptions queue = batches_of(256);
    int prompts = 16;                    // the queue's first requests answered in every format
    int long_context = 4096;             // positions the long answers reach; 0: none
    int long_prompts = 1;                // answers at the long context
    int block_size = 16;                 // positions per block of the pool (vLLM's default)
    static constexpr int kRepeats = 15;  // timed decode steps per format
    static constexpr double kWatermark = 0.05;  // share of the pool admission keeps free (ch. 07)

    void add_flags(Flags& flags) {
        model.add_flags(flags);
        add_queue_flags(flags, queue);
        flags.add("prompts", prompts, 1, 100000,
                  "the queue's first requests answered in every format");
        flags.add("long-context", long_context, 0, 1 << 20,
                  "positions the long answers reach (0: none)");
        flags.add("long-prompts", long_prompts, 1, 1000, "answers at the long context");
        flags.add("block-size", block_size, 1, 1 << 16, "positions per block of the pool");
    }

    void check() const {
        model.check();
        check_queue(model.config, queue);
        if (prompts > queue.workload.requests)
            throw UsageError("--prompts " + std::to_string(prompts) + " is more than --requests " +
                             std::to_string(queue.workload.requests));
        const int answer = queue.workload.answer_len;
        if (long_context != 0 && long_context <= answer)
            throw UsageError("--long-context " + std::to_string(long_context) +
                             " must be longer than --answer-len " + std::to_string(answer));
        // The long answers' caches, one per format, and the article's 512 MiB.
        Config long_model = model.config;
        long_model.max_seq = std::max(long_context, 1);
        const double bytes = 4.0 * double(long_model.kv_bytes(std::uint64_t(long_context))) +
                             double(cache_bytes(CacheShape{}, 4096));
        if (const std::string over = beyond_memory(bytes, 0.5); !over.empty())
            throw UsageError("--long-context " + std::to_string(long_context) + " needs " +
                             format_bytes(std::uint64_t(bytes)) + " of caches, " + over);
        // The pool must hold the longest request alone in float32, or it
        // would wait forever.
        const std::uint64_t per_block = BlockPool::bytes_per_block(model.config, block_size);
        const WorkloadOptions& w = queue.workload;
        const std::uint64_t blocks =
            std::uint64_t(blocks_for(w.prompt_max + w.answer_max - 1, block_size));
        if ((queue.kv_budget_mib << 20) / per_block < blocks)
            throw UsageError("--kv-budget-mib " + std::to_string(queue.kv_budget_mib) +
                             " cannot hold one request at its longest in blocks of " +
                             std::to_string(block_size) + " (" + format_bytes(blocks * per_block) +
                             ")");
    }

    Results run() const {
        Results r;
        // Resident memory first, while the process is fresh.
        r.article = article_shape();
        r.article_positions = 4096;
        r.article_16 = measure_resident_growth(r.article, 4096, NumberFormat::bfloat16);
        r.work = workload_of(queue, model.seed);
        r.queue = make_workload(r.work);
        LoadedModel loaded = model.load(r.queue[0].prompt_len, r.queue[0].answer_len);
        Transformer& m = loaded.model;
        const Config c = m.config();
        r.model = c.describe();
        r.weights = loaded.weights;
        r.prompts = prompts;
        r.long_context = long_context;
        r.long_prompts = long_prompts;
        r.budget_mib = queue.kv_budget_mib;
        r.block_size = block_size;
        r.batch = queue.batch;
        for (NumberFormat f : all_formats())
            r.formats.push_back({.format = f, .bytes = bytes_at(c, f, block_size)});

        compare_answers(r, m, loaded.prompt);
        if (loaded.tokenizer) {
            r.has_text = true;
            r.prompt_text = loaded.prompt_text();
            r.answer_text =
                loaded.answer_text(float32_answer(m, loaded.prompt, r.queue[0].answer_len).tokens);
        }
        Config long_config = c;
        long_config.max_seq = long_context;
        if (long_context > 0) {
            Transformer long_model(long_config, m.weights());
            compare_long_answers(r, long_model);
            time_decode_steps(r, long_model);
        }
        r.cost_model = queue.cost_model;
        r.pricing = price_steps(c, model.seed, queue);
        for (FormatResult& f : r.formats) simulate_queue(r, c, f);
        return r;
    }

  private:
    // Each of the first requests: float32's answer, then every format's.
    void compare_answers(Results& r, Transformer& m, const std::vector<int>& first) const {
        Progress progress("answers compared:");
        for (int i = 0; i < prompts; ++i) {
            const Request& q = r.queue[std::size_t(i)];
            const std::vector<int> prompt =
                i == 0 ? first : fixed_prompt(q.prompt_len, m.config().vocab_size, model.seed + i);
            const ReferenceAnswer ref = float32_answer(m, prompt, q.answer_len);
            for (FormatResult& f : r.formats) f.demo.add(compare_answer(m, prompt, ref, f.format));
            progress.update(i + 1, prompts);
        }
    }

    void compare_long_answers(Results& r, Transformer& m) const {
        Progress progress("answers at the long context:");
        const int answer = queue.workload.answer_len;
        for (int i = 0; i < long_prompts; ++i) {
            const std::vector<int> prompt =
                fixed_prompt(long_context - answer, m.config().vocab_size, model.seed + 1000 + i);
            progress.update(i, long_prompts, "(float32)");
            const ReferenceAnswer ref = float32_answer(m, prompt, answer);
            for (FormatResult& f : r.formats) {
                progress.update(i, long_prompts, std::string("(") + format_name(f.format) + ")");
                f.long_context.add(compare_answer(m, prompt, ref, f.format));
            }
        }
    }

    // A decode step on a cache of long_context - 1 positions marked filled
    // (lab/timed_step.h), each format in turn, so that a slower moment of
    // the machine hits them alike.
    void time_decode_steps(Results& r, Transformer& m) const {
        std::vector<KVCache> caches;
        for (const FormatResult& f : r.formats)
            caches.emplace_back(m.config(), long_context, f.format);
        std::vector<std::vector<double>> times(caches.size());
        const int token = 1, filled = long_context - 1;
        for (KVCache& c : caches) mark_filled(c, filled);
        for (int rep = 0; rep <= kRepeats; ++rep)
            for (std::size_t i = 0; i < caches.size(); ++i) {
                const SequenceInput step{std::span(&token, 1), &caches[i]};
                const double seconds = timed_step(m, std::span(&step, 1), std::span(&filled, 1));
                if (rep > 0) times[i].push_back(seconds);  // rep 0 warms up
            }
        for (std::size_t i = 0; i < caches.size(); ++i)
            r.formats[i].decode_step_s = median(times[i]);
    }

    void simulate_queue(Results& r, const Config& c, FormatResult& f) const {
        const std::uint64_t bytes = queue.kv_budget_mib << 20;
        f.conversations = conversations_in_pool(c, bytes, block_size, f.format, r.queue);
        const std::uint64_t per_block = BlockPool::bytes_per_block(c, block_size, f.format);
        PagedMemory memory(
            {.blocks = int(bytes / per_block), .block_size = block_size, .watermark = kWatermark});
        // The same step prices at every width: the engine's arithmetic is
        // float32 at every width; only what a step may hold changes.
        SimulatedExecutor executor(r.pricing.cost);
        const Policy continuous{"continuous, cache", queue.batch, true, true};
        f.queue = summarize(run_schedule(r.queue, continuous, memory, PrefillFirst{}, executor));
    }
};

}  // namespace kv::ch10
