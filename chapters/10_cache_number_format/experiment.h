// Chapter 10's experiment. What each format costs the answer: the queue's
// first --prompts requests, and --long-prompts answers reaching
// --long-context positions over one shared prefix (answer_agreement.h). What
// it buys (format_memory.h): bytes per token, the pool and the queue at each
// width (its first --engine-requests on the engine too); and at the long
// context (step_reads.h), the article's cache at 16 bits and a decode step
// of 1 and of kBatch sequences timed on the engine, with the two rates that
// bound it.
#pragma once

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../../common/core/attention.h"
#include "../../common/core/generation.h"
#include "../../common/core/narrow_kv_cache.h"
#include "../../common/core/timing.h"
#include "../../common/fast/machine_probes.h"
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
#include "step_reads.h"

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
    bool same_order = false;        // both finished the requests in the same order
    // At the long context: a decode step of 1 and of kBatch sequences.
    StepReads reads_one{}, reads_batch{};     // the bytes each reads
    double step_one_s = 0, step_batch_s = 0;  // its time (median of the thread's CPU time)
    double kernel_bytes_per_s = 0;  // cache bytes the attention kernels consume, rows in L1/L2
    double read_bytes_per_s = 0;    // bytes memory delivers, read at the batch step's size
    // What sets the pace of the step of 1 or of kBatch sequences.
    Limit limit(int batch) const {
        return limit_of(batch == 1 ? reads_one : reads_batch, kernel_bytes_per_s, read_bytes_per_s);
    }
};

// The larger batch the long context's step is timed at.
inline constexpr int kBatch = 8;

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
        // float32's size each, the timed steps' caches (kBatch of each
        // format, under 4 x float32's), the article's cache and both pools.
        const double bytes =
            (8.0 + 4 * kBatch) * double(model.config.kv_bytes_per_token()) * long_context +
            double(cache_bytes(CacheShape{}, std::uint64_t(long_context))) +
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
    ResidentCache article_16;  // article_shape()'s cache at 16 bits at the long context, measured
    std::vector<Request> queue;
    int engine_requests = 0;            // of them on the engine
    StepCalibration pricing;            // the step cost the simulator prices every width's steps by
    std::vector<FormatResult> formats;  // in all_formats()'s order, the enum's

    const FormatResult& at(NumberFormat f) const { return formats.at(std::size_t(f)); }
};

// The article's cache shape (32 layers, 8 KV heads, head size 128), as a
// model the engine can allocate a cache for.
inline Config article_shape(int positions = 4096) {
    return {.n_layers = 32, .dim = 4096, .n_heads = 32, .n_kv_heads = 8, .max_seq = positions};
}

// Keeps this thread on the core it runs on while alive, as a timed probe
// wants (no move between cores mid-sample), then lets it go where it may.
class OnOneCore {
  public:
    OnOneCore() {
        const int cpu = sched_getcpu();
        if (cpu < 0 || sched_getaffinity(0, sizeof before_, &before_) != 0) return;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        pinned_ = sched_setaffinity(0, sizeof one, &one) == 0;
    }
    ~OnOneCore() {
        if (pinned_) sched_setaffinity(0, sizeof before_, &before_);
    }
    OnOneCore(const OnOneCore&) = delete;
    OnOneCore& operator=(const OnOneCore&) = delete;

  private:
    cpu_set_t before_;
    bool pinned_ = false;
};

struct Experiment : Setup {
    static constexpr int kRepeats = 15;           // timed decode steps per format and batch
    static constexpr int kKernelPositions = 256;  // rows the kernels' own rate is timed on
    static constexpr double kWatermark = 0.05;    // share of the pool admission keeps free (ch. 07)

    Results run() const {
        Results r;
        r.setup = *this;
        // Resident memory first, while the process is fresh; at the long
        // context only, where the run's own caches are that long too.
        if (long_context > 0)
            r.article_16 = measure_resident_cache(article_shape(long_context), long_context,
                                                  NumberFormat::bfloat16);
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
            compare_long_answers(r, long_model);
            time_decode_steps(r, long_model);
        }
        r.pricing = price_steps(c, model.seed, queue);
        Progress progress("chapter 10: the queue at each width:");
        for (std::size_t i = 0; i < r.formats.size(); ++i) {
            progress.update(long(i) + 1, long(r.formats.size()), format_name(r.formats[i].format));
            run_queues(r, m, r.formats[i]);
        }
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
    // passes): each starts from copies of its caches and feeds its own
    // --long-tail tokens, a short pass, then reaches --long-context.
    void compare_long_answers(Results& r, Transformer& m) const {
        Progress progress("answers at the long context:");
        const int answer = queue.workload.answer_len, vocab = m.config().vocab_size;
        const std::vector<int> prefix = fixed_prompt(long_prefix(), vocab, model.seed + 1000);
        std::vector<NarrowKVCache> prefilled;
        progress.update(0, long_prompts, "(the shared prefix)");
        for (const FormatResult& f : r.formats) {
            prefilled.emplace_back(m.config(), long_context, f.format);
            m.forward(prefix, prefilled.back());
        }
        for (int i = 0; i < long_prompts; ++i) {
            progress.update(i, long_prompts);
            const std::vector<int> tail = fixed_prompt(long_tail, vocab, model.seed + 1001 + i);
            add(r, &FormatResult::long_context, compare_formats(m, prefilled, tail, answer));
        }
    }

    // A decode step of 1 and of kBatch sequences on caches of each format
    // filled to long_context - 1 positions (marked: lab/timed_step.h), each
    // in turn, so that a slower moment of the machine hits them alike; the
    // thread kept on one core. Then the two rates that bound the step.
    void time_decode_steps(Results& r, Transformer& m) const {
        Progress progress("decode steps at the long context timed: round");
        const int token = 1, filled = long_context - 1;
        std::vector<std::vector<NarrowKVCache>> caches(r.formats.size());
        std::vector<std::vector<SequenceInput>> steps(r.formats.size());
        const std::vector<int> bases(kBatch, filled);
        for (std::size_t i = 0; i < r.formats.size(); ++i) {
            FormatResult& f = r.formats[i];
            f.reads_one = decode_step_reads(m.config(), f.format, long_context, 1);
            f.reads_batch = decode_step_reads(m.config(), f.format, long_context, kBatch);
            for (int b = 0; b < kBatch; ++b) {
                caches[i].emplace_back(m.config(), long_context, f.format);
                mark_filled(caches[i].back(), filled);
            }
            for (NarrowKVCache& c : caches[i]) steps[i].push_back({std::span(&token, 1), &c});
        }
        std::vector<std::vector<double>> one(r.formats.size()), batch(r.formats.size());
        const OnOneCore pinned;
        for (int rep = 0; rep <= kRepeats; ++rep)
            for (std::size_t i = 0; i < r.formats.size(); ++i) {
                progress.update(rep, kRepeats);
                const double a = timed_step(m, std::span(steps[i]).first(1), bases);
                const double b = timed_step(m, steps[i], bases);
                if (rep == 0) continue;  // the warm-up
                one[i].push_back(a);
                batch[i].push_back(b);
            }
        caches.clear();
        for (std::size_t i = 0; i < r.formats.size(); ++i) {
            FormatResult& f = r.formats[i];
            f.step_one_s = median(one[i]);
            f.step_batch_s = median(batch[i]);
            f.kernel_bytes_per_s = kernel_bytes_per_second(m.config(), f.format);
            const ReadBandwidthProbe memory(f.reads_batch.total());
            f.read_bytes_per_s = memory.bytes_per_second(3, 3 * memory.bytes());
        }
    }

    // The cache bytes per second attention's kernels consume when the rows
    // are already in the core's caches: one KV head's keys and values at
    // kKernelPositions positions, scored and summed by its group of query
    // heads, over and over; the best of a few samples. The rate of the
    // kernels' reading, widening and arithmetic, with the memory left out.
    static double kernel_bytes_per_second(const Config& config, NumberFormat format) {
        Config c = config;
        c.max_seq = kKernelPositions;
        NarrowKVCache cache(c, kKernelPositions, format);
        mark_filled(cache, kKernelPositions);
        std::vector<KVRun> runs;
        cache.runs(0, kKernelPositions, runs);
        const int n = kKernelPositions, hs = c.head_size(), group = c.group_size();
        const StoredRows rows{format, cache.row_format().bytes(), hs};
        const StoredRun keys{runs[0].keys, n}, values{runs[0].values, n};
        std::vector<float> queries(std::size_t(group) * hs, 0.5f), out(queries.size());
        std::vector<float> scores(std::size_t(group) * n, 1.0f / n);
        const double bytes = 2.0 * n * double(rows.bytes());  // keys and values
        const OnOneCore pinned;
        double best = 0;
        // The clock is read once per kCallsPerRead calls: in a virtual
        // machine one read of the thread's CPU time can cost a microsecond, a
        // good part of what the two calls take at these sizes.
        constexpr int kCallsPerRead = 32;
        for (int sample = 0; sample < 5; ++sample) {
            int calls = 0;
            const double began = thread_cpu_seconds();
            double seconds = 0;
            while (seconds < 2e-3) {
                for (int i = 0; i < kCallsPerRead; ++i) {
                    dot_rows_for_group(queries.data(), group, std::size_t(hs), std::span(&keys, 1),
                                       n, rows, scores.data(), std::size_t(n));
                    weighted_sum_add_for_group(scores.data(), group, std::size_t(n),
                                               std::span(&values, 1), n, rows, out.data(),
                                               std::size_t(hs));
                }
                calls += kCallsPerRead;
                seconds = thread_cpu_seconds() - began;
            }
            best = std::max(best, bytes * calls / seconds);
        }
        return best;
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
