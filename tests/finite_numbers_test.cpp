// Numbers that are not finite (common/core/finite_numbers.h): a pass whose
// weights overflow float32 stops with one line naming the layer and the
// operation; a comparison of logits counts NaN as a difference; and chapter
// 02 refuses such a checkpoint with exit status 2 instead of calling two
// garbage answers identical.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "../chapters/02_kv_cache/experiment.h"
#include "../chapters/02_kv_cache/report.h"
#include "../common/core/block_pool.h"
#include "../common/core/finite_numbers.h"
#include "../common/core/generation.h"
#include "../common/core/kernels.h"
#include "../common/core/kv_cache.h"
#include "../common/core/narrow_kv_cache.h"
#include "../common/core/paged_kv_cache.h"
#include "../common/core/transformer.h"
#include "../common/real_weights/checkpoint.h"
#include "run_captured.h"
#include "test_files.h"
#include "tiny_models.h"

using namespace kv;

namespace {

// Random weights, every number times `scale`: finite, and as large as asked.
Weights scaled_weights(const Config& c, float scale) {
    Weights w = random_weights(c, 3);
    auto times = [&](auto& numbers) {
        for (float& x : numbers) x *= scale;
    };
    times(w.token_embedding.data);
    for (LayerWeights& l : w.layers) {
        times(l.attn_norm);
        times(l.ffn_norm);
        for (Matrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w1, &l.w2, &l.w3}) times(m->data);
    }
    times(w.final_norm);
    times(w.output.data);
    return w;
}

// The message forward() throws on `tokens`, or "" if it returns.
std::string pass_error(Transformer& model, const std::vector<int>& tokens, KVStore& cache) {
    try {
        model.forward(tokens, cache);
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("weights around 1e10 stop the pass at the attention that overflows") {
    const Config c = test::tiny_config();
    Transformer model(c, scaled_weights(c, 1e10f));
    KVCache cache(c);
    const std::string error = pass_error(model, {5, 17, 3}, cache);
    INFO(error);
    CHECK(has(error, "forward pass: layer 0 of 2, attention"));
    CHECK(has(error, "not finite"));
    CHECK(has(error, "too large for float32"));
    CHECK(error.find('\n') == std::string::npos);
    CHECK(cache.length() == 0);  // the cache is as it was
    CHECK_THROWS_AS(model.forward(std::vector<int>{5}, cache), NonFiniteError);
}

TEST_CASE("an RMSNorm whose sum of squares overflows is an error and not logits of zero") {
    // The kernel as it is: squares past float's range sum to infinity, and
    // 1 / sqrt(inf) scales every number to 0.
    const std::vector<float> huge(24, 1e20f), ones(24, 1.0f);
    std::vector<float> normed(24, -1.0f);
    rmsnorm(normed, huge, ones);
    CHECK(std::isinf(dot(huge.data(), huge.data(), 24)));
    CHECK(normed == std::vector<float>(24, 0.0f));

    // So a model whose numbers reach 1e20 would give logits of 0 and a
    // greedy answer of token 0 every step; the pass says where instead.
    const Config c = test::tiny_config();
    Transformer model(c, scaled_weights(c, 1e20f));
    KVCache cache(c);
    const std::string error = pass_error(model, {5, 17, 3}, cache);
    INFO(error);
    CHECK(has(error, "forward pass: layer 0 of 2, RMSNorm: the sum of squares"));
    CHECK(has(error, "overflows for the token at position 0 of sequence 1 of 1"));

    // A paged cache gives back the blocks the pass took.
    BlockPool pool(c, 4, 50);
    PagedKVCache paged(pool, 32);
    CHECK_THROWS_AS(model.forward(std::vector<int>{1, 2, 3, 4, 5}, paged), NonFiniteError);
    CHECK(paged.length() == 0);
    CHECK(pool.used_blocks() == 0);
}

TEST_CASE("the row that fails is named by its sequence and position in a batch") {
    // Two sequences; only the second's token is scaled past float32.
    const Config c = test::tiny_config();
    Weights w = random_weights(c, 3);
    for (int i = 0; i < c.dim; ++i) w.token_embedding.at(7, i) = 3e19f;
    Transformer model(c, std::move(w));
    KVCache a(c), b(c);
    model.forward(std::vector<int>{1, 2}, a);
    const std::vector<int> first = {4}, second = {7};
    const SequenceInput inputs[] = {{first, &a}, {second, &b}};
    try {
        model.forward(inputs);
        FAIL("a pass over 3e19 went through");
    } catch (const NonFiniteError& e) {
        CHECK(has(e.what(), "for the token at position 0 of sequence 2 of 2"));
    }
    CHECK(a.length() == 2);  // neither cache took the new positions
    CHECK(b.length() == 0);
}

TEST_CASE("a comparison of logits counts NaN as a difference") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> a = {1.0f, 2.0f, 3.0f};
    // std::max(0, NaN) is 0: a NaN anywhere must not read as "identical".
    CHECK(std::isnan(max_abs_difference(a, std::vector<float>{1.0f, nan, 3.0f})));
    CHECK(std::isnan(max_abs_difference(std::vector<float>{nan, 2.0f, 3.0f}, a)));
    CHECK(std::isnan(max_abs_difference(std::vector<float>{nan}, std::vector<float>{nan})));
    CHECK(std::isnan(max_abs_difference(std::vector<float>{inf}, std::vector<float>{inf})));
    CHECK(std::isinf(max_abs_difference(std::vector<float>{inf}, std::vector<float>{1.0f})));
    // Over steps, a NaN in an early step is not hidden by a later one.
    CHECK(std::isnan(max_abs_difference(std::vector<std::vector<float>>{{nan}, {1.0f}},
                                        std::vector<std::vector<float>>{{1.0f}, {3.0f}})));
    // argmax has no answer when a logit is NaN, first or later.
    CHECK_THROWS_AS(argmax(std::vector<float>{nan, 1.0f, 2.0f}), std::domain_error);
    CHECK_THROWS_AS(argmax(std::vector<float>{1.0f, nan, 2.0f}), std::domain_error);
    CHECK(argmax(std::vector<float>{1.0f, inf, 2.0f}) == 1);
}

TEST_CASE("a running largest difference keeps a NaN") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    CHECK(larger_difference(1.0, 2.0) == 2.0);
    CHECK(std::isnan(larger_difference(0.0, nan)));
    CHECK(std::isnan(larger_difference(nan, 5.0)));
}

TEST_CASE("chapter 02 refuses a checkpoint whose numbers overflow with one line and status 2") {
    const test::TempDir dir;
    const Config c{.n_layers = 2,
                   .dim = 16,
                   .n_heads = 2,
                   .n_kv_heads = 1,
                   .ffn_dim = 32,
                   .vocab_size = 40,
                   .max_seq = 32};
    for (const float scale : {1e10f, 1e20f}) {
        CAPTURE(scale);
        const std::string path = dir.file("big.bin");
        write_checkpoint(path, c, scaled_weights(c, scale), "--save-checkpoint");
        ch02::Experiment experiment;
        const test::Ran ran =
            test::run_captured("02_kv_cache",
                               {"--checkpoint", path, "--prompt-len", "3", "--answer-len", "3",
                                "--repeats", "1", "--plot-dir", dir.file("plots")},
                               experiment, ch02::report);
        INFO(ran.out);
        CHECK(ran.status == 2);
        CHECK(ran.out.find("identical to the last bit") == std::string::npos);
        CHECK(ran.err.rfind("02_kv_cache: forward pass: layer 0 of 2, ", 0) == 0);
        CHECK(std::count(ran.err.begin(), ran.err.end(), '\n') == 1);
    }
}

TEST_CASE("an infinite key stops the pass before any cache stores it, in every format") {
    const Config c = test::tiny_config();
    Weights w = random_weights(c, 3);
    for (float& x : w.layers[0].wk.data) x = 3e38f;  // the key product overflows
    Transformer model(c, std::move(w));
    for (NumberFormat format : {NumberFormat::float32, NumberFormat::bfloat16,
                                NumberFormat::float16, NumberFormat::int8}) {
        CAPTURE(std::string(format_name(format)));
        NarrowKVCache cache(c, c.max_seq, format);
        const std::string error = pass_error(model, {5, 17, 3}, cache);
        INFO(error);
        CHECK(has(error, "layer 0 of 2, the key product (wk): a number that is not finite"));
        CHECK(has(error, "before it is stored"));
        CHECK(cache.length() == 0);
    }
}

TEST_CASE("an int8 block keeps each number within half a step of its stored scale, however small") {
    const Config c = test::tiny_config();  // head size 6: one block of 6 per head
    const RowFormat f = row_format_of(c, NumberFormat::int8);
    for (float largest : {3.0f, 9.4e-4f, 1.06e-5f, 3.8e-6f, 1e-7f, 6e-8f}) {
        CAPTURE(largest);
        std::vector<float> numbers(std::size_t(f.numbers()));
        for (std::size_t i = 0; i < numbers.size(); ++i)
            numbers[i] = largest * (i % 3 == 0 ? 1.0f : -0.37f * float(i % 5) / 4.0f);
        std::vector<std::byte> stored(f.bytes());
        std::vector<float> back(numbers.size());
        narrow_row(f, numbers.data(), stored.data());
        widen_rows(f, stored.data(), 1, back.data());
        std::uint16_t scale_bits;
        std::memcpy(&scale_bits, stored.data(), 2);
        const float scale = from_float16(scale_bits);
        CHECK(scale > 0.0f);                                    // never stored as zeros
        for (std::size_t i = 0; i < numbers.size() / 2; ++i) {  // the first head's block
            CAPTURE(i);
            CHECK(std::fabs(back[i] - numbers[i]) <= scale / 2);
        }
    }
}
