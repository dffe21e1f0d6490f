// Chapter 11's second tier in the prefix cache and the block manager: what
// the pool gives back is kept and read back into free blocks; the tier
// gives back its least recently used leaf; a block that fails its check is
// computed again; and nothing of it changes an answer, bit for bit, in any
// number format, nor what the simulator decides beside the engine.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "../chapters/11_second_tier/conversations.h"
#include "../chapters/11_second_tier/tier_time.h"
#include "../common/core/block_pool.h"
#include "../common/core/kv_cache.h"
#include "../common/core/paged_kv_cache.h"
#include "../common/core/transformer.h"
#include "../common/lab/side_by_side.h"  // finish_order
#include "../common/serving/prefix_cache.h"
#include "../common/serving/prefix_sharing_memory.h"
#include "../common/serving/scheduler.h"
#include "../common/serving/step_cost.h"
#include "../common/serving/tier_file.h"
#include "tiny_models.h"

using namespace kv;

namespace {

// A request's blocks, filled by nothing: the ledger alone.
std::vector<int> take(BlockLedger& pool, int n) {
    std::vector<int> blocks;
    for (int i = 0; i < n; ++i) blocks.push_back(pool.allocate());
    return blocks;
}
void give_back(BlockLedger& pool, const std::vector<int>& blocks) {
    for (int b : blocks) pool.release(b);
}

// A store that refuses to read one slot, and keeps nothing else.
struct RefusingStore : TierStore {
    int refused = -1;
    bool write(int, const BlockName&, int) override { return true; }
    bool read(int slot, const BlockName&, int) override { return slot != refused; }
};

std::vector<float> copy(std::span<const float> s) {
    return {s.begin(), s.end()};
}

// Overwrites every layer's keys and values of `blocks` (all 0xFF bytes: NaN
// in the float formats), so that a block read back holds the tier's bytes or
// nothing it had before.
void scribble(BlockPool& pool, std::span<const int> blocks) {
    const std::size_t n = std::size_t(pool.block_size()) * pool.row_format().bytes();
    for (int b : blocks)
        for (int l = 0; l < pool.n_layers(); ++l) {
            std::fill_n(pool.key_bytes(b, l), n, std::byte{0xFF});
            std::fill_n(pool.value_bytes(b, l), n, std::byte{0xFF});
        }
}

}  // namespace

TEST_CASE("what the pool gives back goes to the tier and comes back into free blocks") {
    BlockLedger pool(2, 6);
    PrefixCache cache(pool);
    cache.keep_evicted(4, nullptr);
    const std::vector<int> tokens = {1, 2, 3, 4, 5, 6, 7};  // 3 whole blocks of 2
    const std::vector<int> table = take(pool, 3);
    CHECK(cache.insert(tokens, table) == 3);
    give_back(pool, table);  // only the cache holds them now

    const std::vector<int> others = take(pool, 6);  // the pool needs all its blocks
    CHECK(cache.tier().kept == 3);
    CHECK(cache.evictions() == 3);
    CHECK(cache.peek(tokens).empty());        // none in the pool
    CHECK(cache.blocks_cached(tokens) == 3);  // all in the tier
    CHECK(cache.blocks_cached(tokens, 2) == 2);
    give_back(pool, others);

    const std::vector<int> back = cache.reload(tokens, 0);
    REQUIRE(back.size() == 3);
    CHECK(cache.tier().reloaded == 3);
    CHECK(cache.peek(tokens) == back);              // cached in the pool again, in order
    for (int b : back) CHECK(pool.owners(b) == 2);  // the cache's and the caller's
    give_back(pool, back);
    CHECK(cache.reclaimable() == 3);
}

TEST_CASE("the tier gives back its least recently used leaf and keeps every block before one") {
    BlockLedger pool(2, 4);
    PrefixCache cache(pool);
    cache.keep_evicted(3, nullptr);
    const std::vector<int> a = {1, 1, 2, 2, 3, 3, 0}, b = {7, 7, 8, 8, 0};
    for (const auto* tokens : {&a, &b}) {
        const std::vector<int> t = take(pool, int(tokens->size()) / 2);
        cache.insert(*tokens, t);
        give_back(pool, t);
    }
    // The pool holds b's 2 blocks and a's first 2 (a's third was evicted
    // for b's). Taking all 4 sends them to the tier, which holds 3: the
    // oldest leaf goes, a's last block, never a block a kept one continues.
    const std::vector<int> all = take(pool, 4);
    CHECK(cache.tier().kept == 5);
    CHECK(cache.tier().evictions == 2);
    CHECK(cache.blocks_cached(b) == 2);  // the newest chain whole
    CHECK(cache.blocks_cached(a) == 1);  // a's start: its continuation went first
    give_back(pool, all);
}

TEST_CASE("a block that fails its check is forgotten with what continues it") {
    BlockLedger pool(2, 6);
    PrefixCache cache(pool);
    RefusingStore store;
    cache.keep_evicted(6, &store);
    const std::vector<int> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9};  // 4 blocks
    const std::vector<int> t = take(pool, 4);
    cache.insert(tokens, t);
    give_back(pool, t);
    give_back(pool, take(pool, 6));  // all four to the tier, in slots 0..3 (leaves first)
    REQUIRE(cache.blocks_cached(tokens) == 4);
    // The chain's first block was the last to leave the pool; its second went to slot 2.
    store.refused = 2;
    const std::vector<int> back = cache.reload(tokens, 0);
    CHECK(back.size() == 1);  // the first, then the refused one stops it
    CHECK(cache.tier().failed == 1);
    CHECK(cache.tier().dropped == 2);  // the two after it could never be found again
    CHECK(cache.blocks_cached(tokens) == 1);
    CHECK(pool.free_blocks() == 5);  // the block read into was given back
    give_back(pool, back);
}

TEST_CASE(
    "a prefix reloaded from the tier file gives the logits of the pool and of a fresh "
    "prefill in every number format") {
    const Config c = test::tiny_config();
    Transformer model(c, 21);
    const std::vector<int> prompt = {3, 1, 4, 1, 5, 9, 2, 6, 5,
                                     3, 5, 8, 9, 7, 9, 3, 2, 3};  // 4 blocks + 2
    for (NumberFormat f : all_formats()) {
        CAPTURE(format_name(f));
        BlockPool pool(c, 4, 12, f);
        PrefixCache cache(pool);
        TierFile file(pool, 8);
        cache.keep_evicted(8, &file);
        PagedKVCache first(pool, 40), in_pool(pool, 40), reloaded(pool, 40), fresh(pool, 40);
        const std::vector<float> computed = copy(model.forward(prompt, first));
        cache.insert(prompt, first.block_table());
        const std::vector<int> hits = cache.match(prompt, 4);
        REQUIRE(hits.size() == 4);
        in_pool.adopt(hits, 16);
        const std::vector<float> from_pool =
            copy(model.forward(std::span(prompt).subspan(16), in_pool));

        first.truncate(0);
        in_pool.truncate(0);
        const std::vector<int> filler = take(pool, 12);  // every cached block to the tier
        REQUIRE(cache.tier().kept == 4);
        scribble(pool, filler);  // the pool no longer holds the prefix anywhere
        give_back(pool, filler);
        const std::vector<int> back = cache.reload(prompt, 0, 4);
        REQUIRE(back.size() == 4);
        reloaded.adopt(back, 16);
        give_back(pool, back);
        const std::vector<float> from_tier =
            copy(model.forward(std::span(prompt).subspan(16), reloaded));
        const std::vector<float> recomputed = copy(model.forward(prompt, fresh));
        CHECK(from_tier == recomputed);
        CHECK(from_pool == recomputed);
        CHECK(computed == recomputed);
        for (int step = 0; step < 6; ++step) {  // and at every decode step after it
            const int token = 11 + step;
            CHECK(copy(model.forward(std::span(&token, 1), reloaded)) ==
                  copy(model.forward(std::span(&token, 1), fresh)));
        }
    }
}

TEST_CASE("one changed byte on disk: the block is computed again and the logits do not change") {
    const Config c = test::tiny_config();
    Transformer model(c, 21);
    const std::vector<int> prompt = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7};  // 3 blocks + 2
    BlockPool pool(c, 4, 8);
    PrefixCache cache(pool);
    TierFile file(pool, 8);
    cache.keep_evicted(8, &file);
    {
        PagedKVCache first(pool, 40);
        model.forward(prompt, first);
        cache.insert(prompt, first.block_table());
    }
    const std::vector<int> filler = take(pool, 8);  // the 3 cached blocks to the tier
    REQUIRE(cache.tier().kept == 3);
    scribble(pool, filler);  // the pool no longer holds the prefix anywhere
    give_back(pool, filler);
    // The chain's second block is in the slot written second: leaves leave first,
    // so slots 0, 1, 2 hold the third, second and first block.
    const off_t slot = off_t(TierFile::slot_bytes(pool.bytes_per_block(), 4));
    const int fd = ::open(file.path().c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    char byte = 0;
    REQUIRE(::pread(fd, &byte, 1, slot + slot / 2) == 1);
    byte = char(byte ^ 1);
    REQUIRE(::pwrite(fd, &byte, 1, slot + slot / 2) == 1);
    ::close(fd);

    const std::vector<int> back = cache.reload(prompt, 0, 3);
    CHECK(back.size() == 1);  // the first block; the second failed its check
    CHECK(cache.tier().failed == 1);
    CHECK(file.counts().corrupt == 1);
    PagedKVCache served(pool, 40), fresh(pool, 40);
    served.adopt(back, 4);
    give_back(pool, back);
    const std::vector<float> logits = copy(model.forward(std::span(prompt).subspan(4), served));
    CHECK(logits == copy(model.forward(prompt, fresh)));
}

namespace {

// A queue of 4 conversations of tiny turns on the tiny model.
Conversations tiny_conversations(const Config& c) {
    WorkloadOptions w;
    w.requests = 24;
    w.prompt_min = 3;
    w.prompt_max = 9;
    w.answer_len = 3;
    w.answer_max = 8;
    w.seed = 7;
    return make_conversations(w, 4, c.vocab_size, c.max_seq);
}

Config queue_config() {
    Config c = test::tiny_config();
    c.max_seq = 96;
    return c;
}

constexpr int kBlocks = 30;  // of 4 positions: too few to keep every conversation's history

// A store that forwards to a tier file and changes one byte of the slot it
// reads the `at`-th time, as a failing disk would.
struct CorruptingStore : TierStore {
    TierFile& file;
    int at, reads = 0;
    CorruptingStore(TierFile& f, int n) : file(f), at(n) {}
    bool write(int slot, const BlockName& name, int block) override {
        return file.write(slot, name, block);
    }
    bool read(int slot, const BlockName& name, int block) override {
        if (++reads == at) {
            const off_t size =
                off_t(file.counts().bytes_written / std::uint64_t(file.counts().written));
            const int fd = ::open(file.path().c_str(), O_RDWR);
            char byte = 0;
            if (::pread(fd, &byte, 1, slot * size + size / 2) == 1) {
                byte = char(byte ^ 1);
                CHECK(::pwrite(fd, &byte, 1, slot * size + size / 2) == 1);
            }
            ::close(fd);
        }
        return file.read(slot, name, block);
    }
};

// A planted fault: a store that reads a block back with its numbers changed
// and says it is fine, as a tier without a checksum would.
struct LyingStore : TierStore {
    TierFile& file;
    BlockPool& pool;
    LyingStore(TierFile& f, BlockPool& p) : file(f), pool(p) {}
    bool write(int slot, const BlockName& name, int block) override {
        return file.write(slot, name, block);
    }
    bool read(int slot, const BlockName& name, int block) override {
        const bool read = file.read(slot, name, block);
        const std::size_t n = std::size_t(pool.block_size()) * std::size_t(pool.kv_dim());
        for (int layer = 0; layer < pool.n_layers(); ++layer)
            std::fill(pool.keys(block, layer), pool.keys(block, layer) + n, 0.5f);
        return read;
    }
};

struct QueueRun {
    Schedule schedule;
    PrefixCache::TierCounts tier;
    std::int64_t from_tier = 0;
};

// The queue by continuous batching, the tier of `tier_blocks` (0: none),
// on the engine when `model` is given, else in the simulator.
QueueRun run_queue(const Conversations& q, int tier_blocks, Transformer* model,
                   int corrupt_read = 0, bool lying = false) {
    const Config c = queue_config();
    const Policy policy{"continuous, cache", 4, true, true};
    QueueRun run;
    auto finish = [&](const PrefixSharingMemory& memory) {
        run.tier = memory.prefix_cache()->tier();
        run.from_tier = memory.prompt_tokens_from_tier();
    };
    if (!model) {
        BlockLedger ledger(4, kBlocks);
        PrefixSharingMemory memory(
            ledger,
            {.watermark = 0.05, .share = true, .tier_blocks = tier_blocks, .tier = nullptr});
        SimulatedExecutor executor(analytic_step_cost(c));
        run.schedule = run_schedule(q.requests, policy, memory, PrefillFirst{}, executor);
        finish(memory);
        return run;
    }
    BlockPool pool(c, 4, kBlocks);
    TierFile file(pool, std::max(tier_blocks, 1));
    CorruptingStore corrupting(file, corrupt_read);
    LyingStore liar(file, pool);
    TierStore* store = lying ? static_cast<TierStore*>(&liar) : &corrupting;
    PrefixSharingMemory memory(
        pool, {.watermark = 0.05, .share = true, .tier_blocks = tier_blocks, .tier = store});
    TieredExecutor executor(*model, 1, pool, memory, &file);
    run.schedule = run_schedule(q.requests, policy, memory, PrefillFirst{}, executor);
    finish(memory);
    return run;
}

bool same_answers(const Schedule& a, const Schedule& b) {
    for (std::size_t i = 0; i < a.requests.size(); ++i)
        if (a.requests[i].token_ids != b.requests[i].token_ids) return false;
    return a.requests.size() == b.requests.size();
}

}  // namespace

TEST_CASE("on the engine every answer is the same with and without the tier") {
    const Conversations q = tiny_conversations(queue_config());
    Transformer model(queue_config(), 5);
    const QueueRun without = run_queue(q, 0, &model), with = run_queue(q, 64, &model);
    REQUIRE(with.tier.reloaded > 0);  // the tier was used
    CHECK(with.from_tier > 0);
    CHECK(with.tier.failed == 0);
    CHECK(same_answers(without.schedule, with.schedule));
}

TEST_CASE(
    "a block corrupted on disk in the middle of the queue is computed again and no answer "
    "changes") {
    const Conversations q = tiny_conversations(queue_config());
    Transformer model(queue_config(), 5);
    const QueueRun clean = run_queue(q, 64, &model), corrupted = run_queue(q, 64, &model, 3);
    CHECK(corrupted.tier.failed == 1);
    CHECK(corrupted.tier.reloaded < clean.tier.reloaded);
    CHECK(same_answers(clean.schedule, corrupted.schedule));
}

// The chapter's "same tokens" compares every answer with the tier and
// without it, as same_answers does: a tier that hands back wrong numbers
// as good ones changes answers, and the comparison says so.
TEST_CASE("a tier that reads back changed numbers as good ones changes answers and is seen") {
    const Conversations q = tiny_conversations(queue_config());
    Transformer model(queue_config(), 5);
    const QueueRun without = run_queue(q, 0, &model), lied = run_queue(q, 64, &model, 0, true);
    REQUIRE(lied.tier.reloaded > 0);
    CHECK(lied.tier.failed == 0);  // nothing noticed it on the way
    CHECK_FALSE(same_answers(without.schedule, lied.schedule));
}

// Conversation i % 4 sends turn i's answer back in turn i + 4: turn i + 4
// cannot be sent, let alone admitted, before turn i's last token is out.
int turns_admitted_too_early(const Schedule& s) {
    int early = 0;
    for (std::size_t i = 4; i < s.requests.size(); ++i)
        early += s.requests[i].admitted_s < s.requests[i - 4].finished_s;
    return early;
}

TEST_CASE("no returning turn is admitted before the turn it follows has finished") {
    const Conversations q = tiny_conversations(queue_config());
    Transformer model(queue_config(), 5);
    for (int tier_blocks : {0, 64}) {
        CAPTURE(tier_blocks);
        for (Transformer* engine : {static_cast<Transformer*>(nullptr), &model}) {
            const Schedule s = run_queue(q, tier_blocks, engine).schedule;
            CHECK(turns_admitted_too_early(s) == 0);
            // Its wait counts from the moment it was sent.
            for (std::size_t i = 4; i < s.requests.size(); ++i)
                CHECK(s.requests[i].arrival_s == s.requests[i - 4].finished_s);
        }
    }
}

TEST_CASE("the simulator decides what the engine decides with the tier") {
    const Conversations q = tiny_conversations(queue_config());
    Transformer model(queue_config(), 5);
    for (int tier_blocks : {0, 6, 64}) {
        CAPTURE(tier_blocks);
        const QueueRun simulated = run_queue(q, tier_blocks, nullptr),
                       engine = run_queue(q, tier_blocks, &model);
        CHECK(simulated.tier.kept == engine.tier.kept);
        CHECK(simulated.tier.reloaded == engine.tier.reloaded);
        CHECK(simulated.tier.evictions == engine.tier.evictions);
        CHECK(simulated.from_tier == engine.from_tier);
        CHECK(simulated.schedule.prefills == engine.schedule.prefills);
        CHECK(simulated.schedule.decode_steps == engine.schedule.decode_steps);
        CHECK(simulated.schedule.preemptions == engine.schedule.preemptions);
        // Turns arrive when the turns they follow finish, so the order of
        // arrivals, admissions and finishes is the same on both clocks.
        CHECK(order_by(simulated.schedule, &Request::arrival_s) ==
              order_by(engine.schedule, &Request::arrival_s));
        CHECK(order_by(simulated.schedule, &Request::admitted_s) ==
              order_by(engine.schedule, &Request::admitted_s));
        CHECK(finish_order(simulated.schedule) == finish_order(engine.schedule));
    }
}

TEST_CASE("the simulator prices each block moved at the tier's bandwidth") {
    // All requests arrive at once, so the steps are the same with and without
    // the prices of the tier; the clock differs by the blocks moved.
    const Conversations q = tiny_conversations(queue_config());
    const StepCost cost = analytic_step_cost(queue_config());
    const Policy policy{"continuous, cache", 4, true, true};
    auto end = [&](bool priced) {
        BlockLedger ledger(4, kBlocks);
        PrefixSharingMemory memory(
            ledger, {.watermark = 0.05, .share = true, .tier_blocks = 64, .tier = nullptr});
        SimulatedExecutor plain(cost);
        TierPricedExecutor with_tier(cost, memory, 1000, {.read = 1e6, .write = 0.5e6});
        const Schedule s = run_schedule(q.requests, policy, memory, PrefillFirst{},
                                        priced ? static_cast<Executor&>(with_tier) : plain);
        const PrefixCache::TierCounts& t = memory.prefix_cache()->tier();
        return std::pair(s.end_s, double(t.kept) * 1000 / 0.5e6 + double(t.reloaded) * 1000 / 1e6);
    };
    const auto [plain_end, moved] = end(false);
    const auto [priced_end, same_moved] = end(true);
    REQUIRE(moved > 0);
    CHECK(same_moved == moved);
    CHECK(priced_end - plain_end == doctest::Approx(moved).epsilon(1e-9));
}
