// make bench's accounting (tests/bench/workloads.h): the FLOPs and bytes of
// a step, held to a count by hand for a tiny model, so that a missing factor
// of 2 or a wrong attention term fails here and not as a row at 50 % or
// 200 % of a limit.
#include <doctest/doctest.h>

#include "bench/workloads.h"

using namespace kv;
using namespace kv::bench;

namespace {

// 2 layers, dim 8, 2 query heads of size 4 sharing 1 KV head (kv_dim 4),
// ffn 16, vocab 32, an output projection of its own.
Config tiny() {
    Config c;
    c.n_layers = 2;
    c.dim = 8;
    c.n_heads = 2;
    c.n_kv_heads = 1;
    c.ffn_dim = 16;
    c.vocab_size = 32;
    c.max_seq = 64;
    return c;
}

}  // namespace

TEST_CASE("a step's FLOPs and bytes match a count by hand for a tiny model") {
    const Config c = tiny();
    // Weights one new row multiplies by in one layer: wq and wo 8 x 8 each,
    // wk and wv 4 x 8 each, w1 w2 w3 16 x 8 each: 64 + 64 + 32 + 32 + 384 =
    // 576, 2 FLOPs each (a multiply and an add): 1152 FLOPs per row per layer.
    // Attention, per layer and attended position: the score q.k over both
    // heads (8 multiplies, 8 adds) and the weighted sum of values (8 and 8):
    // 32 = 4 x dim. The classifier: 32 x 8 weights, 2 FLOPs each: 512.

    SUBCASE("decode at context 5 for a batch of 3") {
        const bench::StepCost cost = step_cost(c, Workload{"tiny", "decode", 3, 5, 0});
        // One sequence: 2 layers x (1152 + 32 x 6 positions: the 5 cached
        // and its own) + 512 = 3200; three sequences 9600.
        CHECK(forward_flops(c, 1, 5, 1) == 3200.0);
        CHECK(cost.flops == 9600.0);
        // Keys and values: 3 sequences x 6 positions x 2 layers x (4 keys +
        // 4 values) x 4 bytes = 1152.
        CHECK(cost.cache_bytes == 1152.0);
        // Weights read once per step whatever the batch: per layer 576 and
        // two norms of 8; the final norm 8 and the classifier 256 (the
        // embedding table is only looked up): 2 x 592 + 8 + 256 = 1448
        // floats, 5792 bytes.
        CHECK(cost.weight_bytes == 5792.0);
    }

    SUBCASE("prefill of 4 tokens") {
        const bench::StepCost cost = step_cost(c, Workload{"tiny", "prefill", 1, 0, 4});
        // 4 rows attend to 1, 2, 3 and 4 positions, 10 in all: 2 layers x
        // (1152 x 4 + 32 x 10) + 512 for the one row projected to the
        // vocabulary = 10368.
        CHECK(forward_flops(c, 4, 0, 1) == 10368.0);
        CHECK(cost.flops == 10368.0);
        // The keys and values of the 4 positions it writes: 4 x 2 x 8 x 4 = 256.
        CHECK(cost.cache_bytes == 256.0);
        CHECK(cost.weight_bytes == 5792.0);
    }
}

TEST_CASE("the bench's model shapes are the sizes its comments and README give") {
    const std::vector<BenchShape> shapes = bench_shapes();
    REQUIRE(shapes.size() == 3);
    const double MiB = 1 << 20;
    // Weights read per pass: demo 21.3 MiB, cache-resident 10.5 MiB, large 376 MiB.
    CHECK(shapes[0].config.weight_bytes_read_per_pass() / MiB ==
          doctest::Approx(21.26).epsilon(0.001));
    CHECK(shapes[1].config.weight_bytes_read_per_pass() / MiB ==
          doctest::Approx(10.51).epsilon(0.001));
    CHECK(shapes[2].config.weight_bytes_read_per_pass() / MiB ==
          doctest::Approx(376.1).epsilon(0.001));
}
