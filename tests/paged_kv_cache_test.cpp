// The paged KV cache: a block pool, block tables, and a forward pass that
// gives exactly the logits of a contiguous cache.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <vector>

#include "../common/core/block_pool.h"
#include "../common/core/generation.h"
#include "../common/core/kernels.h"
#include "../common/core/kv_cache.h"
#include "../common/core/paged_kv_cache.h"
#include "../common/core/transformer.h"
#include "../common/serving/paged_memory.h"  // blocks_for
#include "tiny_models.h"

using namespace kv;

namespace {

// Every step's logits of a greedy answer: the prompt in one pass, then one
// token at a time, into whatever store the caller gives.
std::vector<std::vector<float>> answer_logits(Transformer& model, std::span<const int> prompt,
                                              int steps, KVStore& store) {
    std::vector<std::vector<float>> all;
    std::span<const float> logits = model.forward(prompt, store);
    for (int s = 0; s < steps; ++s) {
        all.emplace_back(logits.begin(), logits.end());
        const int next = argmax(logits);
        logits = model.forward(std::span(&next, 1), store);
    }
    return all;
}

// Blocks in use must be exactly those the tables hold, each once per owner.
void check_pool(const BlockPool& pool, const std::vector<const PagedKVCache*>& caches) {
    std::vector<int> held(std::size_t(pool.blocks()), 0);
    for (const PagedKVCache* c : caches) {
        CHECK(static_cast<int>(c->block_table().size()) == c->blocks_for(c->length()));
        for (int b : c->block_table()) ++held[std::size_t(b)];
    }
    int used = 0;
    for (int b = 0; b < pool.blocks(); ++b) {
        CHECK(pool.owners(b) == held[std::size_t(b)]);
        used += pool.owners(b) > 0;
    }
    CHECK(used == pool.used_blocks());
    int unowned = 0;  // blocks with no owner are exactly the free ones
    for (int b = 0; b < pool.blocks(); ++b) unowned += pool.owners(b) == 0;
    CHECK(unowned == pool.free_blocks());
}

}  // namespace

TEST_CASE("paged and contiguous caches give the same logits at every step") {
    const std::vector<int> prompt = {5, 17, 2,  40, 33, 8,
                                     1, 29, 11, 3,  60};  // 11: divides no B below
    for (const Config& c : test::shapes_to_check()) {
        Transformer model(c, 21);
        KVCache contiguous(c, 40);
        const auto want = answer_logits(model, prompt, 20, contiguous);
        for (int B : {1, 3, 8, 16, 64}) {  // 64: one block longer than the whole context
            BlockPool pool(c, B, 40);
            PagedKVCache paged(pool, 40);
            const auto got = answer_logits(model, prompt, 20, paged);
            CHECK_MESSAGE(max_abs_difference(want, got) == 0.0, "block size " << B);
            CHECK(paged.length() == contiguous.length());
            CHECK(static_cast<int>(paged.block_table().size()) == blocks_for(paged.length(), B));
            check_pool(pool, {&paged});
        }
    }
}

TEST_CASE("one pass may mix paged and contiguous sequences") {
    const Config c = test::tiny_config();
    Transformer model(c, 5);
    BlockPool pool(c, 4, 16);
    PagedKVCache a(pool, 32), b(pool, 32);
    KVCache d(c, 32);
    const std::vector<int> pa = {1, 2, 3, 4, 5, 6}, pb = {7, 8, 9}, pd = {10, 11, 12, 13, 14};
    const std::vector<SequenceInput> inputs = {{pa, &a}, {pb, &b}, {pd, &d}};
    const Matrix& together = model.forward(inputs);
    const std::vector<std::vector<int>> prompts = {pa, pb, pd};
    for (int i = 0; i < 3; ++i) {
        KVCache alone(c, 32);
        const std::span<const float> logits = model.forward(prompts[std::size_t(i)], alone);
        CHECK(std::vector<float>(together.row(i), together.row(i) + c.vocab_size) ==
              std::vector<float>(logits.begin(), logits.end()));
    }
    CHECK(a.block_table().size() == 2);  // 6 positions in blocks of 4
    CHECK(b.block_table().size() == 1);
    check_pool(pool, {&a, &b});
}

TEST_CASE("the block pool hands out each block once and takes it back") {
    const Config c = test::tiny_config();
    BlockPool pool(c, 8, 3);
    CHECK(pool.bytes_per_block() == c.kv_bytes(8));
    CHECK(pool.bytes_allocated() == 3 * c.kv_bytes(8));
    std::set<int> got;
    for (int i = 0; i < 3; ++i) got.insert(pool.allocate());
    CHECK(got == std::set<int>{0, 1, 2});
    CHECK(pool.free_blocks() == 0);
    CHECK_THROWS_AS(pool.allocate(), std::length_error);
    pool.release(1);
    CHECK(pool.free_blocks() == 1);
    CHECK(pool.allocate() == 1);  // a freed block is reused
    pool.share(2);
    pool.release(2);
    CHECK(pool.owners(2) == 1);  // still held by its other owner
    pool.release(2);
    CHECK(pool.owners(2) == 0);
    CHECK_THROWS_AS(pool.release(2), std::logic_error);  // never below zero
    CHECK_THROWS_AS(pool.share(2), std::logic_error);    // a free block has no owner to join
    CHECK_THROWS_AS(pool.release(3), std::out_of_range);
    CHECK_THROWS_AS(BlockPool(c, 0, 3), std::invalid_argument);
    CHECK_THROWS_AS(BlockPool(c, 8, 0), std::invalid_argument);
}

TEST_CASE("a sequence's table covers exactly its length and gives every block back") {
    const Config c = test::tiny_config();
    Transformer model(c, 2);
    BlockPool pool(c, 4, 10);
    {
        PagedKVCache seq(pool, 40);
        const std::vector<int> prompt = {1, 2, 3, 4, 5};
        model.forward(prompt, seq);
        CHECK(seq.block_table().size() == 2);
        for (int token = 0; token < 3; ++token) model.forward(std::span(&token, 1), seq);
        CHECK(seq.length() == 8);
        CHECK(seq.block_table().size() == 2);  // 8 positions fill two blocks exactly
        const int one = 1;
        model.forward(std::span(&one, 1), seq);
        CHECK(seq.block_table().size() == 3);
        seq.truncate(4);  // a preempted tail: its blocks go back at once
        CHECK(seq.block_table().size() == 1);
        CHECK(pool.used_blocks() == 1);
        check_pool(pool, {&seq});
        seq.truncate(0);
        CHECK(pool.used_blocks() == 0);
        model.forward(prompt, seq);
    }
    CHECK(pool.used_blocks() == 0);  // the destructor returned them
}

TEST_CASE("a pass the pool cannot hold changes no cache and takes no block") {
    const Config c = test::tiny_config();
    Transformer model(c, 3);
    BlockPool pool(c, 4, 3);
    PagedKVCache a(pool, 40), b(pool, 40);
    const std::vector<int> six = {1, 2, 3, 4, 5, 6}, five = {7, 8, 9, 10, 11};
    // Each alone fits (2 blocks of 3 free); together they need 4.
    const std::vector<SequenceInput> inputs = {{six, &a}, {five, &b}};
    CHECK_THROWS_AS(model.forward(inputs), std::length_error);
    CHECK(a.length() == 0);
    CHECK(b.length() == 0);
    CHECK(pool.free_blocks() == 3);
    CHECK(model.positions_processed() == 0);
    CHECK_NOTHROW(model.forward(six, a));
    CHECK_THROWS_AS(model.forward(five, b), std::length_error);  // 1 block left, 2 needed
    CHECK(pool.free_blocks() == 1);
}

TEST_CASE("forked samples share the prompt's blocks until each writes its own copy") {
    const Config c = test::tiny_config();
    Transformer model(c, 8);
    const std::vector<int> prompt = {4,  8,  15,
                                     16, 23, 42};  // 6 positions: the second block is half full
    BlockPool pool(c, 4, 12);
    PagedKVCache first(pool, 40);
    model.forward(prompt, first);
    const std::vector<float> keys_before(first.key(0, 4), first.key(0, 4) + c.kv_dim());

    PagedKVCache second = first.fork();
    CHECK(second.block_table() == first.block_table());
    CHECK(pool.used_blocks() == 2);  // forking cost no block
    CHECK(pool.owners(first.block_table()[1]) == 2);

    // The second sample writes position 6 into the shared half-full block:
    // it copies that block once, then writes into its copy.
    const int token = 9;
    const std::span<const float> logits = model.forward(std::span(&token, 1), second);
    const std::vector<float> got(logits.begin(), logits.end());
    CHECK(second.copies_on_write() == 1);
    CHECK(second.block_table()[0] == first.block_table()[0]);  // the full block stays shared
    CHECK(second.block_table()[1] != first.block_table()[1]);
    CHECK(pool.used_blocks() == 3);
    CHECK(std::vector<float>(first.key(0, 4), first.key(0, 4) + c.kv_dim()) == keys_before);
    CHECK(first.length() == 6);
    model.forward(std::span(&token, 1), second);
    CHECK(second.copies_on_write() == 1);  // exactly once: the copy is its own now
    check_pool(pool, {&first, &second});

    // The same token after the same prompt, unshared, gives the same logits.
    KVCache plain(c, 40);
    model.forward(prompt, plain);
    const std::span<const float> want = model.forward(std::span(&token, 1), plain);
    CHECK(std::vector<float>(want.begin(), want.end()) == got);
}

TEST_CASE("a sequence that adopts a cached prefix gives the logits of a fresh one") {
    const Config c = test::tiny_config();
    Transformer model(c, 9);
    const std::vector<int> system = {3, 1, 4, 1, 5, 9, 2, 6};  // two full blocks of 4
    const std::vector<int> question = {5, 3, 5};
    BlockPool pool(c, 4, 12);
    PagedKVCache writer(pool, 40);
    model.forward(system, writer);

    PagedKVCache reader(pool, 40);
    reader.adopt(writer.block_table(), 8);
    const std::span<const float> got = model.forward(question, reader);  // prefills only the rest
    const std::vector<float> with_hit(got.begin(), got.end());
    CHECK(reader.copies_on_write() == 0);  // the adopted blocks were full: nothing to copy
    CHECK(pool.owners(writer.block_table()[0]) == 2);

    std::vector<int> whole = system;
    whole.insert(whole.end(), question.begin(), question.end());
    KVCache fresh(c, 40);
    const std::span<const float> want = model.forward(whole, fresh);
    CHECK(std::vector<float>(want.begin(), want.end()) == with_hit);

    PagedKVCache wrong(pool, 40);
    CHECK_THROWS_AS(wrong.adopt(writer.block_table(), 3),
                    std::invalid_argument);  // 3 fit in 1 block
}

TEST_CASE("weighted sums over consecutive runs equal one sum over all the rows") {
    const int rows = 37, width = 40, stride = 48;  // a 16-lane part and a tail of 8
    std::vector<float> weights(rows), values(std::size_t(rows) * stride);
    for (int j = 0; j < rows; ++j) weights[std::size_t(j)] = 1.0f / float(j + 3);
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = float(int(i * 7919 % 201) - 100) / 37.0f;
    std::vector<float> whole(width, 0.0f), pieces(width, 0.0f), plain(width, 0.0f);
    const RowRun all{values.data(), rows};
    weighted_sum_add_for_group(weights.data(), 1, 0, std::span(&all, 1), rows, stride, width,
                               whole.data(), 0);
    std::vector<RowRun> runs;  // of 1, 2, 3, 4, 5, 1, 2, ... rows
    for (int first = 0, n = 1; first < rows; first += n, n = n % 5 + 1)
        runs.push_back({values.data() + std::size_t(first) * stride, std::min(n, rows - first)});
    weighted_sum_add_for_group(weights.data(), 1, 0, runs, rows, stride, width, pieces.data(), 0);
    weighted_sum_add_reference(weights.data(), rows, values.data(), stride, width, plain.data());
    CHECK(pieces == whole);
    CHECK(whole == plain);
}

TEST_CASE("a swap round trip restores the cache bit for bit") {
    const Config c = test::tiny_config();
    Transformer model(c, 12);
    const std::vector<int> prompt = {2, 7, 1, 8, 2, 8, 1};
    BlockPool pool(c, 3, 8);
    PagedKVCache seq(pool, 40), plain_seq(pool, 40);
    model.forward(prompt, seq);
    model.forward(prompt, plain_seq);
    const std::vector<int> table_before = seq.block_table();

    const SwappedBlocks saved = seq.swap_out();
    CHECK(saved.positions == 7);
    CHECK(saved.blocks == 3);
    CHECK(saved.bytes() == 3 * pool.bytes_per_block());  // whole blocks move
    CHECK(seq.length() == 0);
    CHECK(pool.used_blocks() == 3);  // only plain_seq's

    // Another sequence takes the freed blocks meanwhile; the swap-in gets others.
    PagedKVCache squatter(pool, 40);
    model.forward(std::vector<int>{9, 9, 9}, squatter);
    seq.swap_in(saved);
    CHECK(seq.length() == 7);
    CHECK(seq.block_table() != table_before);
    for (int l = 0; l < c.n_layers; ++l)
        for (int pos = 0; pos < 7; ++pos)
            for (int i = 0; i < c.kv_dim(); ++i) {
                CHECK(seq.key(l, pos)[i] == plain_seq.key(l, pos)[i]);
                CHECK(seq.value(l, pos)[i] == plain_seq.value(l, pos)[i]);
            }
    const int token = 4;
    const std::span<const float> a = model.forward(std::span(&token, 1), seq);
    const std::vector<float> after_swap(a.begin(), a.end());
    const std::span<const float> b = model.forward(std::span(&token, 1), plain_seq);
    CHECK(std::vector<float>(b.begin(), b.end()) == after_swap);
    check_pool(pool, {&seq, &plain_seq, &squatter});

    PagedKVCache late(pool, 40);
    const SwappedBlocks big = seq.swap_out();
    PagedKVCache hog(pool, 40);
    model.forward(std::vector<int>(12, 1), hog);  // the 4 free blocks
    CHECK(pool.free_blocks() == 0);
    CHECK_THROWS_AS(late.swap_in(big), std::length_error);
    CHECK(late.length() == 0);
}

TEST_CASE("a pass the pool cannot hold leaves a copy on write made, the numbers as they were") {
    const Config c = test::tiny_config();
    Transformer model(c, 14);
    BlockPool pool(c, 4, 4);
    PagedKVCache first(pool, 40);
    model.forward(std::vector<int>{1, 2, 3, 4, 5, 6}, first);  // 2 blocks, the second half full
    PagedKVCache twin = first.fork();
    PagedKVCache hungry(pool, 40);
    // twin's token needs a private copy of the half-full block (1 of the 2
    // free blocks); hungry's 8 tokens need 2 more: the pass cannot run.
    const int token = 7;
    const std::vector<int> eight(8, 3);
    const std::vector<SequenceInput> inputs = {{std::span(&token, 1), &twin}, {eight, &hungry}};
    CHECK_THROWS_AS(model.forward(inputs), std::length_error);
    // twin keeps its copy (the block it left could have been written by
    // first in the same pass): one block more in use, the same positions.
    CHECK(twin.length() == 6);
    CHECK(twin.copies_on_write() == 1);
    CHECK(twin.block_table()[0] == first.block_table()[0]);
    CHECK(twin.block_table()[1] != first.block_table()[1]);
    CHECK(pool.free_blocks() == 1);
    CHECK(pool.owners(first.block_table()[1]) == 1);
    CHECK(hungry.length() == 0);
    check_pool(pool, {&first, &twin, &hungry});
    const std::span<const float> got = model.forward(std::span(&token, 1), twin);
    const std::vector<float> from_twin(got.begin(), got.end());
    const std::span<const float> want = model.forward(std::span(&token, 1), first);
    CHECK(std::vector<float>(want.begin(), want.end()) == from_twin);
}
