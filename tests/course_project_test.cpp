// The course's final project, graded (chapters/course/README.md, "The final
// project"): an eviction policy for chapter 08's prefix cache, proven bit
// for bit on the engine and measured against least recently used.
//
// The grader serves a queue of prompts one after another on the engine,
// through chapter 08's PrefixCache with the policy deciding its evictions
// (PrefixCache::evict_with): a few hot prompts that come back every round,
// and a scan of prompts seen once, more than the pool holds beside the hot
// ones. Least recently used gives the hot blocks back during every scan; a
// policy that counts hits keeps them. A policy passes when
//   1. the cache refuses none of its choices (only a leaf nobody holds may
//      go; a refused choice is given to least recently used instead);
//   2. every request's logits equal a fresh prefill's, bit for bit;
//   3. it serves more of the prompts' tokens from the cache than least
//      recently used does on the same queue.
// The three are graded apart. Because the cache refuses every choice that
// could change a logit, no policy alone fails 2: it is shown failing on a
// block whose numbers were changed by one bit, as an edit to the cache
// could. The cases below show the reference policy (least frequently used,
// as SGLang's --radix-eviction-policy lfu) passing and a planted wrong one
// failing each criterion, and only that one; the last, skipped until
// enabled, grades course::ProjectPolicy (tests/course_project.h):
//   ./build/book_tests -ts="course project" --no-skip
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "../common/core/block_pool.h"
#include "../common/core/kv_cache.h"
#include "../common/core/paged_kv_cache.h"
#include "../common/core/transformer.h"
#include "../common/serving/prefix_cache.h"
#include "course_project.h"
#include "tiny_models.h"

using namespace kv;

namespace {

struct Grade {
    std::int64_t refused = 0;  // the policy's choices the cache refused
    int requests = 0;
    int differing = 0;  // requests whose logits differ from a fresh prefill's
    std::int64_t prompt_tokens = 0;
    std::int64_t from_cache = 0;  // prompt tokens whose keys and values came from the cache
};

constexpr int kBlockSize = 4;
constexpr int kPoolBlocks = 20;

// Each round: three hot prompts (3 blocks of their own and one token
// more), asked twice, then a scan of four 17-token prompts seen once, each
// its own chain: 16 new blocks a round, with the hot prompts' 9 more than
// the 20-block pool keeps. Hot tokens are 1..37, a scan prompt's first 38.
std::vector<std::vector<int>> graded_queue(int rounds) {
    std::vector<std::vector<int>> queue;
    for (int round = 0; round < rounds; ++round) {
        for (int asked = 0; asked < 6; ++asked) {
            const int hot = asked % 3;
            std::vector<int> prompt;
            for (int i = 0; i < 3 * kBlockSize; ++i) prompt.push_back(1 + (hot * 13 + i * 5) % 37);
            prompt.push_back(1 + asked);
            queue.push_back(prompt);
        }
        for (int scan = 0; scan < 4; ++scan) {
            const int seen_once = round * 4 + scan;  // < 57: its own first block
            std::vector<int> prompt{38, 40 + seen_once};
            for (int i = 2; i < 4 * kBlockSize + 1; ++i)
                prompt.push_back((seen_once * 7 + i * 3) % 97);
            queue.push_back(prompt);
        }
    }
    return queue;
}

// Serves the queue; `flip_after` >= 0 changes one bit of the first hot
// prompt's first cached block after that many requests (the planted fault).
Grade serve(const EvictionPolicy& policy, int flip_after = -1) {
    const Config c = test::tiny_config();
    Transformer model(c, 39);
    BlockPool pool(c, kBlockSize, kPoolBlocks);
    PrefixCache cache(pool);
    cache.evict_with(policy);
    const std::vector<std::vector<int>> queue = graded_queue(6);
    Grade g;
    for (const std::vector<int>& prompt : queue) {
        const int len = int(prompt.size());
        const std::vector<int> hit = cache.match(prompt, (len - 1) / kBlockSize);
        const int cached = int(hit.size()) * kBlockSize;
        PagedKVCache served(pool, len + 1);
        served.adopt(hit, cached);
        const std::span<const float> got =
            model.forward(std::span(prompt).subspan(std::size_t(cached)), served);
        const std::vector<float> with_cache(got.begin(), got.end());
        KVCache fresh(c, len + 1);
        const std::span<const float> want = model.forward(prompt, fresh);
        g.differing += std::vector<float>(want.begin(), want.end()) != with_cache;
        cache.insert(prompt, served.block_table());
        cache.touch(served.block_table());  // let go of now, as chapter 08's requests do
        g.prompt_tokens += len;
        g.from_cache += cached;
        if (++g.requests == flip_after)
            for (int block : cache.peek(queue.front(), 1)) {
                std::uint32_t bits;
                std::memcpy(&bits, pool.keys(block, 0), sizeof bits);
                bits ^= 1u << 20;  // a high bit of the fraction: a change the logits show
                std::memcpy(pool.keys(block, 0), &bits, sizeof bits);
            }
    }
    g.refused = cache.refused();
    return g;
}

// Chapter 08's rule, the one to beat: the cache's own, with no policy given.
const EvictionPolicy chapter_08_rule{};

// The reference solution: fewest hits first, the least recently used
// among equals.
int least_frequently_used(std::span<const CachedBlock> cached) {
    int found = -1;
    for (int i = 0; i < int(cached.size()); ++i) {
        const CachedBlock& b = cached[std::size_t(i)];
        if (!b.leaf || b.holders > 0) continue;
        const CachedBlock* f = found < 0 ? nullptr : &cached[std::size_t(found)];
        if (!f || b.hits < f->hits || (b.hits == f->hits && b.last_used < f->last_used)) found = i;
    }
    return found;
}

// The criteria a run failed, by number, each with what it measured; none
// when the policy passes.
std::vector<std::string> failed(const Grade& g) {
    std::vector<std::string> failures;
    if (g.refused > 0)
        failures.push_back("1: the cache refused " + std::to_string(g.refused) + " choices");
    if (g.differing > 0)
        failures.push_back("2: " + std::to_string(g.differing) + " requests' logits differ");
    const Grade lru = serve(chapter_08_rule);
    if (g.from_cache <= lru.from_cache)
        failures.push_back("3: served " + std::to_string(g.from_cache) +
                           " prompt tokens from the cache, least recently used " +
                           std::to_string(lru.from_cache));
    return failures;
}

// The one criterion a planted policy must fail, alone.
void check_fails_only(const std::vector<std::string>& failures, char criterion) {
    REQUIRE(failures.size() == 1);
    CHECK(failures[0][0] == criterion);
    MESSAGE(failures[0]);
}

}  // namespace

TEST_SUITE("course project") {
    TEST_CASE("course project: the queue makes least recently used lose the hot prompts") {
        const Grade lru = serve(chapter_08_rule);
        const Grade lfu = serve(least_frequently_used);
        CHECK(lru.refused == 0);
        CHECK(lru.differing == 0);
        CHECK(lru.requests == 6 * 10);
        // Every hot prompt but the first three could take its 3 blocks;
        // least frequently used keeps them all, least recently used loses
        // many to every scan.
        const std::int64_t hot_best = (6 * 6 - 3) * 3 * kBlockSize;
        CHECK(lfu.from_cache == hot_best);
        CHECK(lru.from_cache < hot_best * 3 / 4);
        MESSAGE("prompt tokens from the cache, of ", lru.prompt_tokens, ": least recently used ",
                lru.from_cache, ", least frequently used ", lfu.from_cache);
    }

    TEST_CASE("course project: the reference policy passes the grader") {
        CHECK(failed(serve(least_frequently_used)).empty());
    }

    TEST_CASE("course project: a policy that gives back a block a request holds fails 1 only") {
        // Most recently used first, which resists a scan (the scan's newest
        // block goes, not the hot ones), but blind to holders: while a hot
        // prompt is served, its most recently used blocks are the ones it
        // has just taken from the cache.
        const Grade g = serve([](std::span<const CachedBlock> cached) {
            int found = -1;
            for (int i = 0; i < int(cached.size()); ++i) {
                const CachedBlock& b = cached[std::size_t(i)];
                if (b.leaf && (found < 0 || b.last_used > cached[std::size_t(found)].last_used))
                    found = i;
            }
            return found;
        });
        check_fails_only(failed(g), '1');
    }

    TEST_CASE("course project: one changed bit in a cached block fails 2 only") {
        // The reference policy, with one key of a hot prompt's first block
        // changed after the first round: the next request that finds it differs.
        check_fails_only(failed(serve(least_frequently_used, 10)), '2');
    }

    TEST_CASE("course project: a correct policy no better than least recently used fails 3 only") {
        check_fails_only(failed(serve(chapter_08_rule)), '3');
    }

    TEST_CASE("course project: your policy (tests/course_project.h)" * doctest::skip()) {
        const course::ProjectPolicy yours;
        CHECK(failed(serve([&](std::span<const CachedBlock> cached) {
                  return yours.choose(cached);
              })).empty());
    }
}
