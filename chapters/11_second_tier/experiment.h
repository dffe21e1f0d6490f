// Chapter 11's experiment: one request whose prefix of P = 64 to
// --longest-prefix tokens is in the pool, reloaded warm or cold from the
// tier file, or computed again (one_request.h), and the same for every
// number format at one P; the break-even arithmetic from those rates and
// from published ones (reload_arithmetic.h); and a queue of conversations
// (conversations.h) without and with the second tier across tier sizes in
// the simulator, its first --engine-requests on the engine beside it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../../common/core/block_pool.h"
#include "../../common/core/generation.h"
#include "../../common/core/number_format.h"
#include "../../common/core/transformer.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/model_flags.h"
#include "../../common/kit/program.h"  // Progress
#include "../../common/lab/queue_flags.h"
#include "../../common/lab/side_by_side.h"  // finish_order
#include "../../common/serving/metrics.h"
#include "../../common/serving/prefix_sharing_memory.h"
#include "../../common/serving/scheduler.h"
#include "../../common/serving/tier_file.h"
#include "conversations.h"
#include "one_request.h"
#include "reload_arithmetic.h"
#include "tier_time.h"

namespace kv::ch11 {

// Published figures for the article's shape; the README names each source.
inline constexpr double kAcceleratorRate = 989.4e12;  // NVIDIA H100 SXM, BF16 dense, FLOP/s
inline constexpr double kPcie5 = 63.0e9;              // PCIe 5.0 x16, one direction, bytes/s
inline constexpr double kNvme = 7.45e9;               // an NVMe SSD's sequential read, bytes/s
// Llama 3 8B: the article's cache (32 layers, 8 KV heads of 128) and its
// width, feed-forward and vocabulary, 16-bit: 128 KiB of cache per token.
inline Config article_model() {
    return {.n_layers = 32,
            .dim = 4096,
            .n_heads = 32,
            .n_kv_heads = 8,
            .ffn_dim = 14336,
            .vocab_size = 128256,
            .max_seq = 8192};
}

// One run of the queue (or its first requests) on one side.
struct QueueRun {
    int tier_mib = 0;  // the second tier's capacity; 0: none
    bool engine = false;
    int requests = 0;
    Summary summary;
    // The prompts of returning turns as they arrived: their tokens, and
    // those found in the pool and read back from the tier (a first turn
    // finds nothing: its tokens are drawn fresh).
    std::int64_t returning = 0, from_pool = 0, from_tier = 0;
    std::int64_t prefilled = 0;  // positions prefills computed, every admission
    PrefixCache::TierCounts tier;
    std::int64_t preemptions = 0;
    bool same_order = true;   // engine: requests finished in the simulator's order (if compared)
    bool same_tokens = true;  // engine with the tier: every answer as without it

    double share(std::int64_t tokens) const { return returning ? double(tokens) / returning : 0; }
};

struct FormatReload {
    NumberFormat format;
    OneRequest one;
};

// The chapter's parameters (its flags) and their check.
struct Setup {
    Config model;                 // --layers, --dim, ... (the model's shape)
    std::uint64_t seed = 1;       // of the weights, the prompts and the queue
    QueueOptions queue;           // --requests ... --calibrate (lab/queue_flags.h)
    int conversations = 32;       // the queue's requests are their turns, in turn
    std::uint64_t tier_mib = 64;  // the second tier's capacity
    std::string tier_dir;         // where its file goes ("": $TMPDIR or /tmp)
    int block_size = 16;          // positions per block, the unit that moves
    int engine_requests = 96;     // the queue's first requests on the engine; 0: none
    int longest_prefix = 4096;    // the one-request sweep: P = 64, 128, ... up to this

    static constexpr int kQuestion = 16;        // the sweep's tokens after the prefix
    static constexpr int kFormatPrefix = 1024;  // P at which every number format reloads
    static constexpr double kWatermark = 0.05;  // share of the pool admission keeps free

    Setup() {
        model.max_seq = 1024;  // room for a conversation's history, chapter 08's shape
        queue.workload.requests = 320;
        queue.kv_budget_mib = 8;  // a pool too small to keep every history
    }

    void add_flags(Flags& flags) {
        add_model_flags(flags, model, seed);
        add_queue_flags(flags, queue);
        flags.add(
            "conversations", conversations, 1, 1 << 20,
            "conversations taking turns: request i is the next turn of conversation i % this, "
            "sent once the turn before it has finished");
        flags.add("tier-mib", tier_mib, 1, 1 << 20, "the second tier's capacity, MiB on disk");
        flags.add("tier-dir", tier_dir,
                  "folder for the tier's files (default $TMPDIR or /tmp); one that cannot be "
                  "written keeps no block");
        flags.add("block-size", block_size, 1, 1 << 16, "positions per block");
        flags.add("engine-requests", engine_requests, 0, 10'000'000,
                  "requests of the queue the real engine runs beside the simulator (0: none)");
        flags.add("longest-prefix", longest_prefix, 64, 1 << 20,
                  "the one-request sweep's longest prefix: P = 64, 128, ... up to this");
    }

    Config long_model() const {
        Config c = model;
        c.max_seq = std::max(model.max_seq, longest_prefix + kQuestion);
        return c;
    }

    void check() const {
        check_queue(model, queue);
        // Every turn keeps its whole history, which grows up to --max-seq.
        check_prompt_tokens(queue.workload, std::uint64_t(model.max_seq),
                            "--max-seq " + std::to_string(model.max_seq) +
                                ", as far as a conversation's history grows");
        check_blocks(model, "--kv-budget-mib", queue.kv_budget_mib, block_size, model.max_seq,
                     true);
        if (longest_prefix < block_size)
            throw UsageError("--longest-prefix " + std::to_string(longest_prefix) +
                             " is shorter than one block (--block-size " +
                             std::to_string(block_size) + "): nothing to reload");
        // The sweep's pool: the prompt's blocks twice over, in float32.
        check_model(long_model(), 2 * std::uint64_t(longest_prefix + kQuestion + block_size));
    }

    int blocks() const {
        return int((queue.kv_budget_mib << 20) / BlockPool::bytes_per_block(model, block_size));
    }
    int tier_slots(std::uint64_t mib) const {
        return TierFile::slots_in(mib, BlockPool::bytes_per_block(model, block_size), block_size);
    }
    Policy continuous() const { return {"continuous, cache", queue.batch, true, true}; }
    // The engine and the simulator finish the requests in the same order
    // only when every request is there at the start: then who runs when is
    // decided by counts alone (a follow-up arrives at a step's end on either
    // side). Arrivals spread in time (--rate) land between different steps
    // on the two clocks, so the two decide differently, and rightly.
    bool orders_compare() const { return queue.workload.rate == 0; }
    std::vector<int> prefixes() const {
        std::vector<int> p;
        for (int n = 64; n < longest_prefix; n *= 2)
            if (n >= block_size) p.push_back(n);  // shorter: not one whole block
        p.push_back(longest_prefix);
        return p;
    }
    // The tier sizes the queue tries: none, a quarter of --tier-mib, a half, all, twice.
    std::vector<int> tier_sizes() const {
        const int t = int(tier_mib);
        std::vector<int> sizes = {0};
        for (int s : {t / 4, t / 2, t, 2 * t})
            if (s > sizes.back()) sizes.push_back(s);
        return sizes;
    }
};

struct Results {
    Setup setup;                        // what ran
    StepCalibration pricing;            // its .cost prices the simulator's steps
    int blocks = 0;                     // in the pool
    std::uint64_t slot_bytes = 0;       // one block in the tier, with its name and checksum
    std::string measured_in;            // the folder the sweep's file was made under
    std::string warning;                // the first tier file that failed, if one did
    std::vector<OneRequest> sweep;      // float32, P = prefixes()
    std::vector<FormatReload> formats;  // every format at kFormatPrefix
    ReloadArithmetic demo, article;     // the break-even arithmetic
    TierBandwidth measured;             // what the simulator prices the tier's blocks at
    std::vector<QueueRun> queues;       // the whole queue in the simulator, per tier size
    std::vector<QueueRun> first;  // its first requests: simulator and engine, without and with
    const OneRequest& longest() const { return sweep.back(); }
};

struct Experiment : Setup {
    static constexpr bool draws_plots = false;  // its tables say it all: no --plot-dir
    static constexpr int kRepeats = 5;          // runs of each cheap way; the median is shown

    Results run() const {
        Results r;
        r.setup = *this;
        r.blocks = blocks();
        r.slot_bytes =
            TierFile::slot_bytes(BlockPool::bytes_per_block(model, block_size), block_size);
        Transformer engine(model, seed);
        Transformer long_engine(long_model(), engine.weights());
        measure_one_request(r, long_engine);
        const OneRequest& l = r.longest();
        const Config c = long_model();
        const double rate = prefill_operations(c, l.prefix + kQuestion) / l.recompute_s;
        r.demo = reload_arithmetic(c, l.prefix, double(r.slot_bytes) / block_size, rate);
        r.article = reload_arithmetic(article_model(), l.prefix, 131072.0, kAcceleratorRate);
        r.measured = {l.warm_bandwidth(), double(l.bytes) / l.write_s};

        r.pricing = price_steps(model, seed, queue);
        const Conversations all = make_conversations(workload_of(queue, seed), conversations,
                                                     model.vocab_size, model.max_seq);
        for (int mib : tier_sizes()) r.queues.push_back(simulate(r, all, all.requests.size(), mib));
        if (const std::size_t n = std::min<std::size_t>(engine_requests, all.requests.size())) {
            const Progress progress("the engine's queue:");
            Schedule without, with;
            for (const int mib : {0, int(tier_mib)}) {
                Schedule& engine_run = mib ? with : without;
                Schedule simulated;
                r.first.push_back(simulate(r, all, n, mib, &simulated));
                r.first.push_back(run_on_the_engine(r, all, n, mib, engine, engine_run));
                if (orders_compare())
                    r.first.back().same_order = finish_order(simulated) == finish_order(engine_run);
            }
            r.first.back().same_tokens = std::equal(
                without.requests.begin(), without.requests.end(), with.requests.begin(),
                [](const Request& a, const Request& b) { return a.token_ids == b.token_ids; });
        }
        return r;
    }

  private:
    // P = 64 .. --longest-prefix in float32, then every format at one P.
    void measure_one_request(Results& r, Transformer& m) const {
        Progress progress("one request:");
        const std::vector<int> prompt =
            fixed_prompt(longest_prefix + kQuestion, model.vocab_size, seed + 11);
        const std::vector<int> sizes = prefixes();
        const int formats = int(all_formats().size()) - 1;
        int step = 0;
        auto one = [&](NumberFormat f, int prefix, int recompute_repeats) {
            progress.update(step++, int(sizes.size()) + formats,
                            std::string(format_name(f)) + ", P = " + std::to_string(prefix));
            const int capacity = prefix + kQuestion;
            BlockPool pool(m.config(), block_size, 2 * blocks_for(capacity, block_size) + 2, f);
            std::optional<TierFile> file;
            for (const std::string& dir : {tier_dir, std::string()}) {
                file.emplace(pool, blocks_for(capacity, block_size), dir);
                if (file->warning().empty()) break;
                if (r.warning.empty()) r.warning = file->warning();
                if (dir.empty())
                    throw std::runtime_error("cannot measure the tier: " + file->warning());
            }
            r.measured_in = file->folder();
            OneRequest served =
                serve_one(m, pool, *file, std::span(prompt).first(std::size_t(capacity)), prefix,
                          kRepeats, recompute_repeats);
            // A write that failed on the way (a full disk) leaves reads
            // that never happened: nothing to time, so no figure at all.
            if (file->counts().write_failures > 0)
                throw std::runtime_error("cannot measure the tier: " + file->warning());
            return served;
        };
        // A recompute of 1,024 tokens or more is timed once: it moves little, and costs seconds.
        for (int p : sizes)
            r.sweep.push_back(one(NumberFormat::float32, p, p < 1024 ? kRepeats : 1));
        // kFormatPrefix is one of the sweep's P (or the longest, if shorter): float32 is measured.
        const int p = std::min(kFormatPrefix, longest_prefix);
        const OneRequest& float32 =
            r.sweep[std::size_t(std::find(sizes.begin(), sizes.end(), p) - sizes.begin())];
        for (NumberFormat f : all_formats())
            r.formats.push_back({f, f == NumberFormat::float32 ? float32 : one(f, p, 1)});
    }

    QueueRun tally(int mib, bool engine, const Conversations& all, std::size_t n, const Schedule& s,
                   const PrefixSharingMemory& memory) const {
        QueueRun q;
        q.tier_mib = mib;
        q.engine = engine;
        q.requests = int(n);
        q.summary = summarize(s);
        for (std::size_t i = 0; i < n; ++i)
            if (all.turn[i] > 1) q.returning += all.requests[i].prompt_len;
        q.from_tier = memory.prompt_tokens_from_tier();
        q.from_pool = memory.prompt_tokens_from_cache() - q.from_tier;
        q.prefilled = memory.positions_admitted() - memory.positions_from_cache();
        q.tier = memory.prefix_cache()->tier();
        q.preemptions = s.preemptions;
        return q;
    }

    SharingMemoryOptions options(int mib, TierStore* store) const {
        return {.watermark = kWatermark,
                .share = true,
                .tier_blocks = mib ? tier_slots(mib) : 0,
                .tier = store};
    }

    // The block manager over a ledger alone, the tier counted and priced.
    QueueRun simulate(const Results& r, const Conversations& all, std::size_t n, int mib,
                      Schedule* kept = nullptr) const {
        BlockLedger ledger(block_size, r.blocks);
        PrefixSharingMemory memory(ledger, options(mib, nullptr));
        TierPricedExecutor executor(r.pricing.cost, memory, r.slot_bytes, r.measured);
        const std::span<const Request> requests(all.requests.data(), n);
        Schedule s = run_schedule(requests, continuous(), memory, PrefillFirst{}, executor);
        const QueueRun q = tally(mib, false, all, n, s, memory);
        if (kept) *kept = std::move(s);
        return q;
    }

    // The same block manager over the engine's pool, the tier in a file.
    QueueRun run_on_the_engine(Results& r, const Conversations& all, std::size_t n, int mib,
                               Transformer& engine, Schedule& s) const {
        BlockPool pool(model, block_size, r.blocks);
        std::optional<TierFile> file;
        if (mib) file.emplace(pool, tier_slots(mib), tier_dir);
        PrefixSharingMemory memory(pool, options(mib, file ? &*file : nullptr));
        TieredExecutor executor(engine, seed, pool, memory, file ? &*file : nullptr);
        const std::span<const Request> requests(all.requests.data(), n);
        s = run_schedule(requests, continuous(), memory, PrefillFirst{}, executor);
        if (file && r.warning.empty()) r.warning = file->warning();
        return tally(mib, true, all, n, s, memory);
    }
};

}  // namespace kv::ch11
