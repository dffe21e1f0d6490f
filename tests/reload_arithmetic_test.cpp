// Chapter 11's break-even arithmetic (reload_arithmetic.h), counted by hand.
#include <doctest/doctest.h>

#include "../chapters/11_second_tier/reload_arithmetic.h"
#include "tiny_models.h"

using namespace kv;

TEST_CASE("a prefill's operations counted by hand") {
    // hand_sized_config: 1 layer, dim 4, 2 heads sharing 1 KV head (kv_dim
    // 2), ffn 6, vocab 10. Per token: wq 16 + wk 8 + wv 8 + wo 16 + w1, w2,
    // w3 3 x 24 = 120 weights, 240 operations; the logits once, 2 x 40 = 80.
    // Attention: 4 x dim x layers = 16 operations per (token, position)
    // pair, and 3 tokens make 1 + 2 + 3 = 6 pairs.
    const Config c = test::hand_sized_config();
    CHECK(prefill_operations(c, 1) == 240 + 16 + 80);
    CHECK(prefill_operations(c, 3) == 3 * 240 + 16 * 6 + 80);
}

TEST_CASE("the break-even bandwidth is where reading a token takes as long as computing it") {
    // 1,000 operations per token at 1e6 operations per second: 1 ms per
    // token. 500 bytes per token read in 1 ms: 500,000 bytes per second.
    const ReloadArithmetic a{500, 1000, 1e6};
    CHECK(a.break_even() == doctest::Approx(5e5));
    CHECK(a.reload_speedup(5e5) == doctest::Approx(1));
    CHECK(a.reload_speedup(5e6) == doctest::Approx(10));
    // The article's cache (128 KiB a token) at 15 GFLOP a token on 1 PFLOP/s.
    const ReloadArithmetic article{131072, 15e9, 1e15};
    CHECK(article.break_even() == doctest::Approx(131072 * 1e15 / 15e9));
}
