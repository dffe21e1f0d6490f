// The cache's number format in the engine (chapter 10): a narrower cache
// rounds each key and value once, when it is written, and everything else
// is as in float32. So the proof of chapters 02-09 holds at every format:
// cached, naive, batched, paged, shared and mixed steps give the same
// logits, bit for bit, as long as they keep the same format; against
// float32, the format changes the logits, and the tests say by how much
// they may.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/core/batched_decoding.h"
#include "../common/core/block_pool.h"
#include "../common/core/generation.h"
#include "../common/core/kv_cache.h"
#include "../common/core/memory_arithmetic.h"
#include "../common/core/number_format.h"
#include "../common/core/paged_kv_cache.h"
#include "../common/core/transformer.h"
#include "forwarding_store.h"
#include "tiny_models.h"

using namespace kv;

namespace {

const NumberFormat kNarrow[] = {NumberFormat::bfloat16, NumberFormat::float16, NumberFormat::int8};

using Logits = std::vector<std::vector<float>>;

// Every step's logits of a greedy answer: the prompt in one pass, then one
// token at a time, into whatever store the caller gives.
Logits answer_logits(Transformer& model, std::span<const int> prompt, int steps, KVStore& store) {
    Logits all;
    std::span<const float> logits = model.forward(prompt, store);
    for (int s = 0; s < steps; ++s) {
        all.emplace_back(logits.begin(), logits.end());
        const int next = argmax(logits);
        logits = model.forward(std::span(&next, 1), store);
    }
    all.emplace_back(logits.begin(), logits.end());
    return all;
}

// The oracle: a float32 cache whose write() rounds each key and value
// through the plain conversions and stores the widened floats. No packed
// rows, no widening on the way to attention: just "round at the write".
class RoundingCache final : public test::ForwardingStore {
  public:
    RoundingCache(const Config& c, int capacity, NumberFormat format)
        : ForwardingStore(c, capacity), row_(row_format_of(c, format)), scratch_(row_.bytes()) {}
    void write(int layer, int pos, const float* key, const float* value) override {
        round_into(key, cache_.key(layer, pos));
        round_into(value, cache_.value(layer, pos));
    }

  private:
    void round_into(const float* numbers, float* out) {
        narrow_row_plain(row_, numbers, scratch_.data());
        widen_rows_plain(row_, scratch_.data(), 1, out);
    }
    RowFormat row_;
    std::vector<std::byte> scratch_;
};

// A NaN on either side counts as a difference (generation.h).
double largest_difference(const Logits& a, const Logits& b) {
    return max_abs_difference(a, b);
}

const std::vector<int> kPrompt = {3, 14, 15, 9, 2, 6, 5, 3, 5};

}  // namespace

TEST_CASE("a narrower cache gives the logits of a float32 cache that rounds at the write") {
    for (const NumberFormat format : kNarrow)
        for (const Config& c : test::shapes_to_check()) {
            const std::string name = format_name(format);
            CAPTURE(name);
            CAPTURE(c.describe());
            Transformer model(c, 11);
            KVCache narrow(c, c.max_seq, format);
            RoundingCache oracle(c, c.max_seq, format);
            CHECK(answer_logits(model, kPrompt, 20, narrow) ==
                  answer_logits(model, kPrompt, 20, oracle));
        }
}

TEST_CASE("cached decoding gives naive decoding's logits at every number format") {
    for (const NumberFormat format : kNarrow)
        for (const Config& c : test::shapes_to_check()) {
            const std::string name = format_name(format);
            CAPTURE(name);
            CAPTURE(c.describe());
            Transformer model(c, 12);
            KVCache cache(c, c.max_seq, format);
            const Logits cached = answer_logits(model, kPrompt, 12, cache);
            // Naive: a fresh cache of the same format and the whole sequence, every step.
            std::vector<int> sequence = kPrompt;
            for (std::size_t step = 0; step < cached.size(); ++step) {
                KVCache scratch(c, static_cast<int>(sequence.size()), format);
                const std::span<const float> naive = model.forward(sequence, scratch);
                REQUIRE(std::vector<float>(naive.begin(), naive.end()) == cached[step]);
                sequence.push_back(argmax(naive));
            }
        }
}

TEST_CASE("batched steps on narrower caches give each sequence its logits alone") {
    const Config c = test::shapes_to_check().back();
    for (const NumberFormat format : kNarrow) {
        const std::string name = format_name(format);
        CAPTURE(name);
        Transformer model(c, 13);
        const std::vector<std::vector<int>> prompts = {
            {1, 2, 3}, {7}, {9, 8, 7, 6, 5, 4, 3}, {4, 4}};
        const std::size_t n = prompts.size();
        std::vector<KVCache> batched, single;
        for (std::size_t i = 0; i < n; ++i) {
            batched.emplace_back(c, c.max_seq, format);
            single.emplace_back(c, c.max_seq, format);
        }
        std::vector<int> tokens(n);
        for (std::size_t i = 0; i < n; ++i) {
            model.forward(prompts[i], batched[i]);
            tokens[i] = argmax(model.forward(prompts[i], single[i]));
        }
        std::vector<KVCache*> pointers;
        for (KVCache& cache : batched) pointers.push_back(&cache);
        for (int step = 0; step < 8; ++step) {
            const Matrix& rows = decode_batch(model, tokens, pointers);
            const Matrix copy = rows;
            for (std::size_t i = 0; i < n; ++i) {
                const std::span<const float> alone =
                    model.forward(std::span(&tokens[i], 1), single[i]);
                REQUIRE(std::vector<float>(alone.begin(), alone.end()) ==
                        std::vector<float>(copy.row(int(i)), copy.row(int(i)) + c.vocab_size));
                tokens[i] = argmax(alone);
            }
        }
    }
}

TEST_CASE(
    "paged caches of a narrower format give the contiguous cache's logits at any block size") {
    for (const NumberFormat format : kNarrow)
        for (const Config& c : test::shapes_to_check())
            for (const int block_size : {1, 3, 4, 16}) {
                const std::string name = format_name(format);
                CAPTURE(name);
                CAPTURE(block_size);
                Transformer model(c, 14);
                KVCache contiguous(c, c.max_seq, format);
                BlockPool pool(c, block_size, c.max_seq, format);
                PagedKVCache paged(pool, c.max_seq);
                CHECK(answer_logits(model, kPrompt, 10, paged) ==
                      answer_logits(model, kPrompt, 10, contiguous));
            }
}

TEST_CASE("a forked narrower cache copies a shared block on write and both answers stay exact") {
    const Config c = test::tiny_config();
    for (const NumberFormat format : kNarrow) {
        const std::string name = format_name(format);
        CAPTURE(name);
        Transformer model(c, 15);
        BlockPool pool(c, 4, 32, format);
        PagedKVCache first(pool, c.max_seq);
        model.forward(kPrompt, first);  // 9 positions: the last block is shared part-full
        PagedKVCache second = first.fork();
        const std::vector<int> a = {5, 6, 7, 8, 9}, b = {40, 41, 42};
        std::vector<float> got_a, got_b;
        for (int t : a) {
            const std::span<const float> l = model.forward(std::span(&t, 1), first);
            got_a.assign(l.begin(), l.end());
        }
        for (int t : b) {
            const std::span<const float> l = model.forward(std::span(&t, 1), second);
            got_b.assign(l.begin(), l.end());
        }
        CHECK(first.copies_on_write() == 1);
        CHECK(second.copies_on_write() == 0);  // the first writer took the copy
        // The same sequences, each in a contiguous cache of its own.
        std::vector<int> seq_a = kPrompt, seq_b = kPrompt;
        seq_a.insert(seq_a.end(), a.begin(), a.end());
        seq_b.insert(seq_b.end(), b.begin(), b.end());
        KVCache own_a(c, c.max_seq, format), own_b(c, c.max_seq, format);
        const std::span<const float> want_a = model.forward(seq_a, own_a);
        CHECK(got_a == std::vector<float>(want_a.begin(), want_a.end()));
        const std::span<const float> want_b = model.forward(seq_b, own_b);
        CHECK(got_b == std::vector<float>(want_b.begin(), want_b.end()));
    }
}

TEST_CASE("a mixed step of a prompt chunk and decode rows on narrower caches is exact") {
    const Config c = test::shapes_to_check().back();
    for (const NumberFormat format : kNarrow) {
        const std::string name = format_name(format);
        CAPTURE(name);
        Transformer model(c, 16);
        BlockPool pool(c, 4, 64, format);
        // Sequence 0's 11-token prompt goes in chunks of 4, 4 and 3 while
        // sequences 1 and 2 decode; each row against a pass of its own.
        const std::vector<int> long_prompt = {2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4};
        std::vector<PagedKVCache> mixed;
        std::vector<KVCache> alone;
        for (int i = 0; i < 3; ++i) {
            mixed.emplace_back(pool, c.max_seq);
            alone.emplace_back(c, c.max_seq, format);
        }
        std::vector<int> next(3, 0);
        for (int i = 1; i < 3; ++i) {
            const std::vector<int> p = {i, i + 10, i + 20};
            model.forward(p, mixed[std::size_t(i)]);
            next[std::size_t(i)] = argmax(model.forward(p, alone[std::size_t(i)]));
        }
        for (int first = 0; first < 11; first += 4) {
            const std::span<const int> chunk =
                std::span(long_prompt)
                    .subspan(std::size_t(first), std::size_t(std::min(4, 11 - first)));
            const std::vector<SequenceInput> inputs = {{chunk, &mixed[0]},
                                                       {std::span(&next[1], 1), &mixed[1]},
                                                       {std::span(&next[2], 1), &mixed[2]}};
            const Matrix rows = model.forward(inputs);
            const std::span<const float> a = model.forward(chunk, alone[0]);
            REQUIRE(std::vector<float>(a.begin(), a.end()) ==
                    std::vector<float>(rows.row(0), rows.row(0) + c.vocab_size));
            for (int i = 1; i < 3; ++i) {
                const std::span<const float> l =
                    model.forward(std::span(&next[std::size_t(i)], 1), alone[std::size_t(i)]);
                REQUIRE(std::vector<float>(l.begin(), l.end()) ==
                        std::vector<float>(rows.row(i), rows.row(i) + c.vocab_size));
                next[std::size_t(i)] = argmax(l);
            }
        }
    }
}

TEST_CASE("a narrower sequence swapped out and back in goes on bit for bit") {
    const Config c = test::tiny_config();
    for (const NumberFormat format : kNarrow) {
        const std::string name = format_name(format);
        CAPTURE(name);
        Transformer model(c, 17);
        BlockPool pool(c, 4, 16, format);
        PagedKVCache seq(pool, c.max_seq);
        KVCache never(c, c.max_seq, format);
        model.forward(kPrompt, seq);
        model.forward(kPrompt, never);
        const SwappedBlocks saved = seq.swap_out();
        CHECK(saved.blocks == 3);
        CHECK(saved.bytes() == 3 * pool.bytes_per_block());
        CHECK(pool.free_blocks() == 16);
        seq.swap_in(saved);
        const int t = 33;
        const std::span<const float> a = model.forward(std::span(&t, 1), seq);
        const std::vector<float> got(a.begin(), a.end());
        const std::span<const float> b = model.forward(std::span(&t, 1), never);
        CHECK(got == std::vector<float>(b.begin(), b.end()));
    }
}

TEST_CASE(
    "each key and value is rounded once as it is written: layer 0 holds the float32 rows rounded") {
    // Layer 0's keys and values depend only on the tokens, not on the cache
    // (attention comes after them), so a narrower cache must hold exactly
    // the float32 cache's layer-0 rows, each rounded once.
    for (const NumberFormat format : kNarrow)
        for (const Config& c : test::shapes_to_check()) {
            const std::string name = format_name(format);
            CAPTURE(name);
            Transformer model(c, 18);
            KVCache wide(c, 16), narrow(c, 16, format);
            model.forward(kPrompt, wide);
            model.forward(kPrompt, narrow);
            const RowFormat row = narrow.row_format();
            std::vector<KVRun> runs;
            narrow.runs(0, 9, runs);
            REQUIRE(runs.size() == 1);
            std::vector<std::byte> want(row.bytes());
            for (int pos = 0; pos < 9; ++pos) {
                narrow_row_plain(row, wide.key(0, pos), want.data());
                CHECK(std::memcmp(want.data(), runs[0].keys + pos * row.bytes(), row.bytes()) == 0);
                narrow_row_plain(row, wide.value(0, pos), want.data());
                CHECK(std::memcmp(want.data(), runs[0].values + pos * row.bytes(), row.bytes()) ==
                      0);
            }
        }
}

// Attention reads every format where the cache keeps it: a run is the
// store's own bytes, contiguous or paged, never a copy made for the step.
TEST_CASE("a cache's runs point at its own bytes in every format and are never copied") {
    const Config c = test::tiny_config();
    for (const NumberFormat format : all_formats()) {
        const std::string name = format_name(format);
        CAPTURE(name);
        Transformer model(c, 19);
        KVCache cache(c, 16, format);
        model.forward(kPrompt, cache);
        const std::size_t row = cache.row_format().bytes();
        std::vector<KVRun> first, second;
        cache.runs(0, 9, first);
        cache.runs(1, 9, second);
        REQUIRE(first.size() == 1);
        REQUIRE(second.size() == 1);
        // Layer 1's rows follow layer 0's 16 in the one allocation.
        CHECK(second[0].keys == first[0].keys + 16 * row);
        CHECK(second[0].values == first[0].values + 16 * row);
        if (format == NumberFormat::float32) {
            CHECK(second[0].keys == reinterpret_cast<const std::byte*>(cache.key(1, 0)));
            CHECK(second[0].values == reinterpret_cast<const std::byte*>(cache.value(1, 0)));
        }
        BlockPool pool(c, 4, 8, format);
        PagedKVCache paged(pool, 16);
        model.forward(kPrompt, paged);
        std::vector<KVRun> blocks;
        paged.runs(1, 9, blocks);
        REQUIRE(blocks.size() == 3);  // 4 + 4 + 1 positions
        for (std::size_t b = 0; b < blocks.size(); ++b) {
            const int block = paged.block_table()[b];
            CHECK(blocks[b].keys == pool.key_bytes(block, 1));
            CHECK(blocks[b].values == pool.value_bytes(block, 1));
            CHECK(blocks[b].positions == (b < 2 ? 4 : 1));
        }
    }
}

TEST_CASE("a narrower cache has no floats to point at and refuses another head layout") {
    const Config c = test::tiny_config();
    KVCache cache(c, 8, NumberFormat::int8);
    CHECK_THROWS_AS(cache.key(0, 0), std::logic_error);
    BlockPool pool(c, 4, 4, NumberFormat::float16);
    CHECK_THROWS_AS(pool.keys(0, 0), std::logic_error);
    // Same kv_dim (12), other head size: int8's blocks would fall elsewhere.
    Config other = c;
    other.n_heads = 2;
    other.n_kv_heads = 1;  // one KV head of 12
    KVCache wrong(other, 8, NumberFormat::int8);
    Transformer model(c, 1);
    CHECK_THROWS_AS(model.forward(kPrompt, wrong), std::invalid_argument);
    CHECK(wrong.length() == 0);
}

TEST_CASE("a cache holds the bytes chapter 03's formula gives at its width") {
    for (const NumberFormat format : all_formats())
        for (const Config& c : test::shapes_to_check()) {
            const std::string name = format_name(format);
            CAPTURE(name);
            const std::uint64_t per_token = bytes_per_token(cache_shape_of(c, format));
            CHECK(per_token == kv_bytes_per_token(c, format));
            KVCache cache(c, 10, format);
            CHECK(cache.bytes_allocated() == 10 * per_token);
            Transformer model(c, 3);
            model.forward(kPrompt, cache);
            CHECK(cache.bytes_used() == 9 * per_token);
            BlockPool pool(c, 4, 5, format);
            CHECK(pool.bytes_per_block() == 4 * per_token);
            CHECK(pool.bytes_allocated() == 20 * per_token);
            CHECK(BlockPool::bytes_per_block(c, 4, format) == 4 * per_token);
        }
    // The demo model: 2 x 6 layers x 2 KV heads x 32 numbers x 4, 2 or 1
    // bytes; int8 adds one 2-byte scale per head (32 numbers) of each.
    const Config demo;
    const std::uint64_t want[] = {3072, 1536, 1536, 768 + 48};
    for (std::size_t i = 0; i < 4; ++i) {
        const NumberFormat format = all_formats()[i];
        CHECK(bytes_per_token(cache_shape_of(demo, format)) == want[i]);
        CHECK(KVCache(demo, 4, format).bytes_allocated() == 4 * want[i]);
    }
    // The article's shape at 16 bits: 128 KiB a token, 512 MiB for 4,096.
    CHECK(bytes_per_token(CacheShape{}) == 128 * 1024);
    CacheShape int8 = CacheShape{};
    int8.bytes_per_number = 1;
    int8.numbers_per_scale = 32;
    int8.bytes_per_scale = 2;
    CHECK(bytes_per_token(int8) == 2 * 32 * 8 * (128 + 4 * 2));  // 69,632: 8.5 bits a number
}

TEST_CASE("the number format changes the logits and 16 bits change them little") {
    const Config c = test::shapes_to_check().back();
    Transformer model(c, 20);
    // Decode the same tokens in every format (float32's greedy answer), so
    // the logits compare step for step.
    KVCache wide(c, c.max_seq);
    const Logits reference = answer_logits(model, kPrompt, 24, wide);
    std::vector<int> forced = kPrompt;
    for (std::size_t s = 0; s + 1 < reference.size(); ++s) forced.push_back(argmax(reference[s]));
    float spread = 0;
    for (const auto& step : reference)
        for (float l : step) spread = std::max(spread, std::fabs(l));
    std::vector<float> differences;  // kNarrow's order
    for (const NumberFormat format : kNarrow) {
        const std::string name = format_name(format);
        CAPTURE(name);
        KVCache cache(c, c.max_seq, format);
        Logits got;
        std::span<const float> l = model.forward(kPrompt, cache);
        got.emplace_back(l.begin(), l.end());
        for (std::size_t t = kPrompt.size(); t < forced.size(); ++t) {
            l = model.forward(std::span(&forced[t], 1), cache);
            got.emplace_back(l.begin(), l.end());
        }
        const float d = largest_difference(got, reference);
        MESSAGE(name, ": largest logit difference ", d, " (16-bit bound ", 0.01f * spread, ")");
        CHECK(d > 0);
        if (format != NumberFormat::int8) CHECK(d < 0.01f * spread);
        differences.push_back(d);
    }
    // float16 keeps 11 significant bits to bfloat16's 8: on numbers this
    // size (far from float16's limits) it is the closer of the two.
    CHECK(differences[1] < differences[0]);
}
