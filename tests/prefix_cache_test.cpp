// Chapter 08's prefix cache: blocks named by their tokens and every token
// before them, shared by reference, given back least recently used first.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "../common/core/block_pool.h"
#include "../common/core/kv_cache.h"
#include "../common/core/paged_kv_cache.h"
#include "../common/core/transformer.h"
#include "../common/serving/prefix_cache.h"
#include "tiny_models.h"

using namespace kv;

namespace {

std::vector<int> join(std::vector<int> a, const std::vector<int>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

std::vector<float> copy(std::span<const float> s) {
    return {s.begin(), s.end()};
}

}  // namespace

TEST_CASE("a request served from the prefix cache gets the logits of a fresh prefill") {
    const Config c = test::tiny_config();
    Transformer model(c, 13);
    BlockPool pool(c, 4, 32);
    PrefixCache cache(pool);
    const std::vector<int> system = {5, 9, 2, 6, 5, 3, 5, 8, 9, 7};  // 2 full blocks and 2 tokens
    const std::vector<int> first = join(system, {1, 1}), second = join(system, {4, 2, 4});

    PagedKVCache a(pool, 40);
    model.forward(first, a);
    CHECK(cache.insert(first, a.block_table()) == 3);  // 12 tokens: 3 full blocks

    // The second shares the first 10 tokens, but only whole blocks are
    // shared: tokens 0..7 (2 blocks); tokens 8..11 are {9, 7, 1, 1} in the
    // first and {9, 7, 4, 2} here.
    const std::vector<int> hit = cache.match(second);
    REQUIRE(hit.size() == 2);
    CHECK(hit[0] == a.block_table()[0]);
    CHECK(hit[1] == a.block_table()[1]);
    PagedKVCache b(pool, 40);
    b.adopt(hit, 8);
    const std::vector<float> served =
        copy(model.forward(std::span(second).subspan(8), b));  // prefills 5 tokens, not 13
    KVCache fresh(c, 40);
    CHECK(copy(model.forward(second, fresh)) == served);
    CHECK(b.copies_on_write() == 0);  // whole blocks: nothing to copy
    // And at every decode step after it.
    for (int step = 0; step < 5; ++step) {
        const int token = step + 3;
        CHECK(copy(model.forward(std::span(&token, 1), b)) ==
              copy(model.forward(std::span(&token, 1), fresh)));
    }
}

TEST_CASE("equal blocks under different prefixes are different entries") {
    const Config c = test::tiny_config();
    Transformer model(c, 2);
    BlockPool pool(c, 2, 16);
    PrefixCache cache(pool);
    const std::vector<int> x_then_y = {1, 2, 7, 7}, z_then_y = {3, 4, 7, 7};
    PagedKVCache a(pool, 16), b(pool, 16);
    model.forward(x_then_y, a);
    model.forward(z_then_y, b);
    CHECK(cache.insert(x_then_y, a.block_table()) == 2);
    CHECK(cache.insert(z_then_y, b.block_table()) == 2);  // {7, 7} again, under another parent
    CHECK(cache.entries() == 4);
    CHECK(cache.match(z_then_y) == b.block_table());
    CHECK(cache.match(x_then_y) == a.block_table());
    CHECK(
        cache.match(std::vector<int>{7, 7}).empty());  // a block is never found without its prefix
    CHECK(cache.insert(x_then_y, a.block_table()) == 0);  // named once
}

TEST_CASE("a cached block outlives its request and is freed only when nobody holds it") {
    const Config c = test::tiny_config();
    Transformer model(c, 3);
    BlockPool pool(c, 4, 6);
    PrefixCache cache(pool);
    const std::vector<int> prompt = {1, 2, 3, 4, 5, 6, 7, 8};
    std::vector<int> table;
    {
        PagedKVCache seq(pool, 16);
        model.forward(prompt, seq);
        cache.insert(prompt, seq.block_table());
        table = seq.block_table();
        CHECK(pool.owners(table[0]) == 2);  // the request and the cache
        CHECK(cache.reclaimable() == 0);    // in use
    }
    CHECK(pool.owners(table[0]) == 1);  // the cache alone
    CHECK(pool.owners(table[1]) == 1);
    CHECK(pool.used_blocks() == 2);
    CHECK(cache.reclaimable() == 2);
    CHECK(pool.available_blocks() == 6);
    CHECK(cache.reclaim_one());
    CHECK(pool.owners(table[1]) == 0);  // the leaf went first
    CHECK(pool.owners(table[0]) == 1);
    CHECK(cache.match(prompt) == std::vector<int>{table[0]});
    CHECK(cache.reclaim_one());
    CHECK_FALSE(cache.reclaim_one());  // nothing left to give back
    CHECK(pool.used_blocks() == 0);
    CHECK(cache.entries() == 0);
}

TEST_CASE("eviction never frees a block in use and goes least recently used first") {
    const Config c = test::tiny_config();
    Transformer model(c, 4);
    BlockPool pool(c, 2, 6);
    PrefixCache cache(pool);
    const std::vector<int> old_one = {1, 1, 2, 2}, new_one = {3, 3, 4, 4};
    std::vector<int> old_table, new_table;
    for (const auto* p : {&old_one, &new_one}) {
        PagedKVCache seq(pool, 8);
        model.forward(*p, seq);
        cache.insert(*p, seq.block_table());
        (p == &old_one ? old_table : new_table) = seq.block_table();
    }
    cache.match(old_one);  // the old chain is used again: now the new one is the older
    PagedKVCache holder(pool, 8);
    holder.adopt(cache.match(new_one), 4);  // and in use
    CHECK(cache.reclaimable() == 2);        // only the old chain
    // The pool has 2 free blocks; a sequence needing 4 gets them and the
    // old chain's 2 (leaf first); the blocks in use stay.
    PagedKVCache big(pool, 8);
    CHECK_NOTHROW(model.forward(std::vector<int>{9, 8, 7, 6, 5, 4, 3, 2}, big));
    CHECK(pool.owners(old_table[0]) == 1);  // now big's
    CHECK(pool.owners(new_table[0]) == 2);  // still the holder's and the cache's
    CHECK(pool.owners(new_table[1]) == 2);
    CHECK(cache.match(old_one).empty());
    CHECK(cache.match(new_one) == new_table);
    // With nothing left to give back, the pool is full and says so.
    PagedKVCache more(pool, 8);
    CHECK_THROWS_AS(model.forward(std::vector<int>{1, 2}, more), std::length_error);
    CHECK(pool.owners(new_table[0]) == 2);
}

TEST_CASE("a cached block continued by a block in use is not counted as reclaimable") {
    const Config c = test::tiny_config();
    Transformer model(c, 5);
    BlockPool pool(c, 2, 8);
    PrefixCache cache(pool);
    const std::vector<int> prompt = {1, 2, 3, 4};
    PagedKVCache a(pool, 8);
    model.forward(prompt, a);
    cache.insert(prompt, a.block_table());
    // b computed the same two blocks on its own; its first block is not
    // the cached one, its second continues the cached chain.
    PagedKVCache b(pool, 8);
    model.forward(std::vector<int>{1, 2}, b);
    model.forward(std::vector<int>{3, 4, 5, 6}, b);
    cache.insert(std::vector<int>{1, 2, 3, 4, 5, 6},
                 b.block_table());  // adds {5, 6} under a's chain
    a.truncate(0);  // a's blocks are the cache's alone now, but {5, 6} (b's) continues them
    CHECK(cache.reclaimable() == 0);
    CHECK_FALSE(cache.reclaim_one());
}
