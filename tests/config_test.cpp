// Config: validation and the byte arithmetic, including its overflow guard.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "../common/core/checked.h"
#include "../common/core/config.h"
#include "../common/core/rng.h"
#include "tiny_models.h"

using namespace kv;

TEST_CASE("the default config is valid and its sizes are derived") {
    const Config c;
    CHECK_NOTHROW(c.validate());
    CHECK(c.head_size() == 32);  // 256 / 8
    CHECK(c.kv_dim() == 64);     // 2 KV heads of 32
    CHECK(c.group_size() == 4);  // 8 query heads share 2 KV heads
}

TEST_CASE("invalid configs name what is wrong") {
    auto fails_with = [](Config c, const std::string& fragment) {
        try {
            c.validate();
        } catch (const std::invalid_argument& e) {
            INFO(e.what());
            CHECK(std::string(e.what()).find(fragment) != std::string::npos);
            return;
        }
        FAIL("validate() accepted an invalid config");
    };
    Config c = test::tiny_config();
    c.n_layers = 0;
    fails_with(c, "layers");
    c = test::tiny_config();
    c.dim = -8;
    fails_with(c, "dim");
    c = test::tiny_config();
    c.n_heads = 5;  // 24 / 5
    fails_with(c, "must divide dim");
    c = test::tiny_config();
    c.n_kv_heads = 3;  // 4 / 3
    fails_with(c, "must divide heads");
    c = test::tiny_config();
    c.n_heads = 8;  // head size 3: odd
    c.n_kv_heads = 8;
    fails_with(c, "even");
    c = test::tiny_config();
    c.vocab_size = 0;
    fails_with(c, "vocab");
}

TEST_CASE("parameter count worked out by hand") {
    const Config c = test::hand_sized_config();  // dim 4, head size 2, kv_dim 2, ffn 6, vocab 10
    // embedding 40 + output 40 + final norm 4
    // layer: norms 8, wq 16, wo 16, wk 8, wv 8, w1 24, w2 24, w3 24 = 128
    CHECK(c.parameter_count() == 40 + 40 + 4 + 128);
    CHECK(c.weight_bytes() == 4 * 212);
    // A pass reads all but the embedding (40, looked up): 172 numbers, of
    // which the norms (2 x 4 + 4 = 12) are not matrices.
    CHECK(c.lookup_only_parameters() == 40);
    CHECK(c.weight_bytes_read_per_pass() == 4 * 172);
    CHECK(c.multiplied_parameters() == 160);
}

TEST_CASE("a shared output table is read in full by every pass") {
    Config c = test::hand_sized_config();
    c.shared_output = true;  // the embedding is the output projection: 40 numbers fewer
    CHECK(c.parameter_count() == 40 + 4 + 128);
    CHECK(c.lookup_only_parameters() == 0);
    CHECK(c.weight_bytes_read_per_pass() == c.weight_bytes());  // nothing is lookup-only
    CHECK(c.multiplied_parameters() == 160);                    // the same matrices are multiplied
}

TEST_CASE("kv bytes per token: 2 x layers x kv heads x head size x bytes") {
    const Config c{.n_layers = 32, .dim = 4096, .n_heads = 32, .n_kv_heads = 8};  // head size 128
    CHECK(c.kv_bytes_per_token(2) == 131072);            // 128 KiB at 16 bits
    CHECK(c.kv_bytes(4096, 2) == 512ull * 1024 * 1024);  // 512 MiB
    CHECK(c.kv_bytes_per_token() == 262144);             // float32: twice that
}

TEST_CASE("byte counts that would wrap around 64 bits are refused") {
    const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    CHECK(checked_mul(1ull << 32, (1ull << 32) - 1, "x") == (1ull << 32) * ((1ull << 32) - 1));
    CHECK_THROWS_AS(checked_mul(1ull << 32, 1ull << 32, "x"), std::overflow_error);
    CHECK(checked_add(max - 1, 1, "x") == max);
    CHECK_THROWS_AS(checked_add(max, 1, "x"), std::overflow_error);
    Config c = test::tiny_config();
    CHECK_THROWS_AS(c.kv_bytes(max / 2), std::overflow_error);
    c.n_layers = 1 << 30;
    c.dim = 1 << 30;
    c.n_heads = 1 << 20;
    c.n_kv_heads = 1 << 20;
    c.ffn_dim = 1 << 30;
    c.vocab_size = 1 << 30;
    CHECK_THROWS_AS(c.validate(), std::overflow_error);
}

TEST_CASE("the generator gives the same numbers on every machine") {
    // SplitMix64's published first outputs for seed 0 (Vigna's reference code).
    Rng rng(0);
    CHECK(rng.next_u64() == 0xE220A8397B1DCDAFull);
    CHECK(rng.next_u64() == 0x6E789E6AA1B965F4ull);
    Rng a(42), b(42);
    for (int i = 0; i < 100; ++i) {
        const float u = a.uniform();
        CHECK(u == b.uniform());
        CHECK(u >= 0.0f);
        CHECK(u < 1.0f);
    }
}
