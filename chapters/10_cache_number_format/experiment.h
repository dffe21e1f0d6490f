// Chapter 10's experiment. What each format costs the answer: the queue's
// first --prompts requests, and --long-prompts answers reaching
// --long-context positions over one shared prefix (answer_agreement.h). What
// it buys (format_memory.h): bytes per token, the article's cache at 16 bits,
// the pool and the queue at each width (its first --engine-requests on the
// engine too), and a decode step at the long context timed on the engine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../common/core/generation.h"
#include "../../common/core/timing.h"
#include "../../common/kit/answer_timing.h"  // PassesShown
#include "../../common/kit/flags.h"
#include "../../common/kit/machine.h"  // beyond_memory
#include "../../common/kit/model_flags.h"
#include "../../common/kit/program.h"
#include "../../common/kit/report.h"
#include "../../common/lab/queue_flags.h"
#include "../../common/lab/resident_cache.h"
#include "../../common/lab/side_by_side.h"
#include "../../common/lab/timed_step.h"
#include "../../common/real_weights/model_source.h"
#include "../../common/serving/metrics.h"
#include "../../common/serving/paged_memory.h"
#include "../../common/serving/scheduler.h"
#include "answer_agreement.h"
#include "format_memory.h"

namespace kv::ch10 {

struct FormatResult {
    NumberFormat format;
    FormatBytes bytes;              // per token: chapter 03's formula and the engine's caches
    Agreement demo{};               // answers at the model's own lengths, against float32
    Agreement long_context{};       // answers that reach the long context
    int conversations = 0;          // of the queue, at once in the pool
    Summary queue{};                // the simulator's whole queue on that pool
    int engine_blocks = 0;          // of the smaller pool, at this width
    Summary simulated{}, engine{};  // its first requests in the smaller pool, side by side
    bool same_order = false;        // both gave first tokens in the same order
    double decode_step_s = 0;       // a decode step at the long context (median, thread CPU)
};

// The chapter's parameters (its flags) and their check.
struct Setup {
    ModelChoice model;  // --layers ... --seed, --checkpoint (real_weights/model_source.h)
    // --requests ... --calibrate (lab/queue_flags.h): chapter 05's queue and
    // 16 MiB, in batches of up to 256 (the constructor), so that memory caps
    // the batch before the batch size does, at every width.
    QueueOptions queue;
    int prompts = 16;                     // the queue's first requests answered in every format
    int long_context = 4096;              // positions the long answers reach; 0: none
    int long_prompts = 6;                 // answers at the long context, over one prefix
    int long_tail = 16;                   // prompt tokens of each of them after the prefix
    int block_size = 16;                  // positions per block of the pool (vLLM's default)
    int engine_requests = 48;             // the queue's first, on the engine; 0: none
    std::uint64_t engine_budget_mib = 2;  // their pool: one where float32 runs short

    Setup() { queue.batch = 256; }
    int long_prefix() const { return long_context - queue.workload.answer_len - long_tail; }

    void add_flags(Flags& flags) {
        model.add_flags(flags);
        add_queue_flags(flags, queue);
        flags.add("prompts", prompts, 1, 100000,
                  "the queue's first requests answered in every format");
        flags.add("long-context", long_context, 0, 1 << 20,
                  "positions the long answers reach (0: none)");
        flags.add("long-prompts", long_prompts, 1, 1000,
                  "answers at the long context, over one shared prefix");
        flags.add("long-tail", long_tail, 1, 1 << 20,
                  "each long answer's own prompt tokens after the shared prefix");
        flags.add("block-size", block_size, 1, 1 << 16, "positions per block of the pool");
        flags.add("engine-requests", engine_requests, 0, 100000,
                  "the queue's first requests run on the engine at each width (0: none)");
        flags.add("engine-budget-mib", engine_budget_mib, 1, 1 << 20, "their pool's memory");
    }

    void check() const {
        model.check();
        check_queue(model.config, queue);
        if (prompts > queue.workload.requests)
            throw UsageError("--prompts " + std::to_string(prompts) + " is more than --requests " +
                             std::to_string(queue.workload.requests));
        if (long_context != 0 && long_prefix() < 1)
            throw UsageError("--long-context " + std::to_string(long_context) +
                             " must be longer than --answer-len " +
                             std::to_string(queue.workload.answer_len) + " + --long-tail " +
                             std::to_string(long_tail));
        // The long prefix's caches and an answer's copies of them, at most
        // float32's size each, the article's 512 MiB and both pools.
        const double bytes = 8.0 * double(model.config.kv_bytes_per_token()) * long_context +
                             double(cache_bytes(CacheShape{}, 4096)) +
                             double((queue.kv_budget_mib + engine_budget_mib) << 20);
        if (const std::string over = beyond_memory(bytes, 0.5); !over.empty())
            throw UsageError("--long-context " + std::to_string(long_context) +
                             " and the pools need " + format_bytes(std::uint64_t(bytes)) + ", " +
                             over);
        // A pool in use must hold the longest request alone in float32, or it waits forever.
        const int longest = queue.workload.prompt_max + queue.workload.answer_max - 1;
        check_blocks(model.config, "--kv-budget-mib", queue.kv_budget_mib, block_size, longest,
                     false);
        if (engine_requests)
            check_blocks(model.config, "--engine-budget-mib", engine_budget_mib, block_size,
                         longest, false);
    }
};

struct Results {
    Setup setup;                           // what ran
    std::string model, weights;            // the model's shape; "random (seed 1)" or a checkpoint
    bool has_text = false;                 // --tokenizer: the first request shown as text
    std::string prompt_text, answer_text;  // its prompt, and float32's answer to it
    ResidentCache article_16;  // article_shape()'s cache at 16 bits for 4,096 positions, measured
    std::vector<Request> queue;
    int engine_requests = 0;            // of them on the engine
    StepCalibration pricing;            // the step cost the simulator prices every width's steps by
    std::vector<FormatResult> formats;  // in all_formats()'s order, the enum's

    const FormatResult& at(NumberFormat f) const { return formats.at(std::size_t(f)); }
};

// The article's cache shape (32 layers, 8 KV heads, head size 128), as a
// model the engine can allocate a cache for.
inline Config article_shape() {
    return {.n_layers = 32, .dim = 4096, .n_heads = 32, .n_kv_heads = 8, .max_seq = 4096};
}

struct Experiment : Setup {
    static constexpr int kRepeats = 15;         // timed decode steps per format
    static constexpr double kWatermark = 0.05;  // share of the pool admission keeps free (ch. 07)

    Results run() const {
        Results r;
        r.setup = *this;
        // Resident memory first, while the process is fresh.
        r.article_16 = measure_resident_cache(article_shape(), 4096, NumberFormat::bfloat16);
        r.queue = make_workload(workload_of(queue, model.seed));
        LoadedModel loaded = model.load(r.queue[0].prompt_len, r.queue[0].answer_len);
        Transformer& m = loaded.model;
        const Config c = m.config();
        r.model = c.describe();
        r.weights = loaded.weights;
        r.engine_requests = std::min(engine_requests, int(r.queue.size()));
        for (NumberFormat f : all_formats())
            r.formats.push_back({.format = f, .bytes = bytes_at(c, f, block_size)});

        r.has_text = bool(loaded.tokenizer);
        compare_answers(r, loaded);
        if (long_context > 0) {
            Config long_config = c;
            long_config.max_seq = long_context;
            Transformer long_model(long_config, m.weights());
            time_decode_steps(r, long_model, compare_long_answers(r, long_model));
        }
        r.pricing = price_steps(c, model.seed, queue);
        for (FormatResult& f : r.formats) run_queues(r, m, f);
        return r;
    }

  private:
    static void add(Results& r, Agreement FormatResult::*totals, const FormatAnswers& a) {
        for (std::size_t i = 0; i < r.formats.size(); ++i) (r.formats[i].*totals).add(a.formats[i]);
    }

    // Each of the first requests, answered in every format at once; the
    // first is the loaded prompt, shown as text with a tokenizer.
    void compare_answers(Results& r, LoadedModel& loaded) const {
        Progress progress("answers compared:");
        const int vocab = loaded.model.config().vocab_size;
        for (int i = 0; i < prompts; ++i) {
            const Request& q = r.queue[std::size_t(i)];
            const FormatAnswers a = compare_formats(
                loaded.model,
                i == 0 ? loaded.prompt : fixed_prompt(q.prompt_len, vocab, model.seed + i),
                q.answer_len, all_formats());
            add(r, &FormatResult::demo, a);
            if (i == 0 && r.has_text) {
                r.prompt_text = loaded.prompt_text();
                r.answer_text = loaded.answer_text(a.tokens);
            }
            progress.update(i + 1, prompts);
        }
    }

    // The long answers share one prefix, prefilled once per format (the long
    // passes): each starts from copies of its caches (returned) and feeds its
    // own --long-tail tokens, a short pass, then reaches --long-context.
    std::vector<KVCache> compare_long_answers(Results& r, Transformer& m) const {
        Progress progress("answers at the long context:");
        const PassesShown shown(m, progress);  // how far each prefix's pass has got
        const int answer = queue.workload.answer_len, vocab = m.config().vocab_size;
        const std::vector<int> prefix = fixed_prompt(long_prefix(), vocab, model.seed + 1000);
        std::vector<KVCache> prefilled;
        for (const FormatResult& f : r.formats) {
            prefilled.emplace_back(m.config(), long_context, f.format);
            m.forward(prefix, prefilled.back());
        }
        for (int i = 0; i < long_prompts; ++i) {
            progress.update(i, long_prompts);
            const std::vector<int> tail = fixed_prompt(long_tail, vocab, model.seed + 1001 + i);
            add(r, &FormatResult::long_context, compare_formats(m, prefilled, tail, answer));
        }
        return prefilled;
    }

    // A decode step on each format's cache, filled to long_context - 1
    // positions (the prefix's, the rest marked: lab/timed_step.h), each in
    // turn, so that a slower moment of the machine hits them alike.
    void time_decode_steps(Results& r, Transformer& m, std::vector<KVCache> caches) const {
        std::vector<std::vector<double>> times(caches.size());
        const int token = 1, filled = long_context - 1;
        for (KVCache& c : caches) mark_filled(c, filled - c.length());
        for (int rep = 0; rep <= kRepeats; ++rep)
            for (std::size_t i = 0; i < caches.size(); ++i) {
                const SequenceInput step{std::span(&token, 1), &caches[i]};
                const double seconds = timed_step(m, std::span(&step, 1), std::span(&filled, 1));
                if (rep > 0) times[i].push_back(seconds);  // rep 0 warms up
            }
        for (std::size_t i = 0; i < caches.size(); ++i)
            r.formats[i].decode_step_s = median(times[i]);
    }

    // The pool at this width: as many blocks as its bytes hold. The same
    // step prices at every width: the engine's arithmetic is float32 at
    // every width; only what a step may hold changes.
    PagedMemoryOptions pool(const Config& c, std::uint64_t mib, NumberFormat f) const {
        const std::uint64_t per_block = BlockPool::bytes_per_block(c, block_size, f);
        return {.blocks = int((mib << 20) / per_block),
                .block_size = block_size,
                .watermark = kWatermark};
    }

    void run_queues(Results& r, Transformer& m, FormatResult& f) const {
        const Config& c = m.config();
        f.conversations =
            conversations_in_pool(c, queue.kv_budget_mib << 20, block_size, f.format, r.queue);
        PagedMemory memory(pool(c, queue.kv_budget_mib, f.format));
        SimulatedExecutor executor(r.pricing.cost);
        const Policy continuous{"continuous, cache", queue.batch, true, true};
        f.queue = summarize(run_schedule(r.queue, continuous, memory, PrefillFirst{}, executor));
        if (r.engine_requests == 0) return;
        const PagedMemoryOptions small = pool(c, engine_budget_mib, f.format);
        const SideBySide s = run_side_by_side(
            m, model.seed, std::span(r.queue).first(std::size_t(r.engine_requests)), continuous,
            small, r.pricing.cost, f.format);
        f.engine_blocks = small.blocks;
        f.simulated = summarize(s.simulated), f.engine = summarize(s.engine);
        f.same_order = s.same_order();
    }
};

}  // namespace kv::ch10
