// Chapter 04: a sequence decoded inside a batch gets the same tokens and the
// same logits as decoded alone, whatever else is in the batch, whenever it
// joined and whoever left.
//
// Tolerance: zero. Every dot product in the core adds its terms in one fixed
// order in a one-row and in a B-row matrix product (common/core/kernels.h), and
// attention runs per sequence, so batching changes nothing but the time. The
// largest difference is still printed: it is the number to look at if a
// kernel change ever breaks that promise.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <stdexcept>
#include <vector>

#include "../chapters/04_batched_decoding/arithmetic_intensity.h"
#include "../chapters/04_batched_decoding/batch_benchmark.h"
#include "../chapters/04_batched_decoding/report.h"
#include "../common/core/batched_decoding.h"
#include "../common/core/cached_decoding.h"
#include "tiny_models.h"

using namespace kv;

namespace {

using Logits = std::vector<float>;

double largest_difference(std::span<const float> a, std::span<const float> b) {
    REQUIRE(a.size() == b.size());
    return max_abs_difference(a, b);
}

// Chapter 02's way, one sequence alone: the logits of the prefill (step 0)
// and of each of `steps` decode steps after it, feeding back the argmax.
std::vector<Logits> decode_alone(Transformer& model, const std::vector<int>& prompt, int steps) {
    std::vector<Logits> all;
    generate_cached(model, prompt, steps + 1,
                    [&](int, std::span<const float> l) { all.emplace_back(l.begin(), l.end()); });
    return all;
}

// Prompts of different lengths: a ragged batch.
std::vector<std::vector<int>> ragged(const Config& c, std::vector<int> lengths) {
    std::vector<std::vector<int>> prompts;
    for (std::size_t i = 0; i < lengths.size(); ++i)
        prompts.push_back(fixed_prompt(lengths[i], c.vocab_size, 40 + i));
    return prompts;
}

}  // namespace

TEST_CASE("batched decoding equals one-at-a-time decoding for ragged lengths") {
    const double tolerance = 0.0;
    const int steps = 10;
    for (const Config& c : test::shapes_to_check()) {
        Transformer model(c, 31);
        const auto prompts = ragged(c, {1, 9, 4, 17, 2, 6});
        std::vector<std::vector<Logits>> alone;
        for (const auto& p : prompts) alone.push_back(decode_alone(model, p, steps));

        // The same sequences, prefilled one by one, then decoded together.
        std::vector<KVCache> caches;
        std::vector<int> tokens;
        for (const auto& p : prompts) {
            caches.emplace_back(c, static_cast<int>(p.size()) + steps);
            tokens.push_back(argmax(prefill(model, p, caches.back())));
        }
        std::vector<KVCache*> batch;
        for (KVCache& cache : caches) batch.push_back(&cache);

        double worst = 0;
        std::set<int> seen;
        bool same_tokens = true;
        for (int step = 1; step <= steps; ++step) {
            const Matrix& logits = decode_batch(model, tokens, batch);
            REQUIRE(logits.rows == static_cast<int>(prompts.size()));
            for (int i = 0; i < logits.rows; ++i) {
                worst = larger_difference(worst,
                                          largest_difference(logits.row_span(i), alone[i][step]));
                tokens[i] = argmax(logits.row_span(i));
                same_tokens = same_tokens && tokens[i] == argmax(alone[i][step]);
                seen.insert(tokens[i]);
            }
        }
        INFO(c.describe() << ": largest logit difference " << worst << " (tolerance " << tolerance
                          << ")");
        CHECK(worst <= tolerance);
        CHECK(same_tokens);
        CHECK(seen.size() >= 4);  // the comparison means something only if tokens vary
        for (std::size_t i = 0; i < prompts.size(); ++i)
            CHECK(caches[i].length() == static_cast<int>(prompts[i].size()) + steps);
    }
}

TEST_CASE("a batch of one equals chapter 02's decode_step") {
    for (const Config& c : test::shapes_to_check()) {
        Transformer model(c, 5);
        const std::vector<int> prompt = fixed_prompt(7, c.vocab_size, 5);
        KVCache batched(c, 20), single(c, 20);
        int a = argmax(prefill(model, prompt, batched));
        int b = argmax(prefill(model, prompt, single));
        for (int step = 0; step < 8; ++step) {
            KVCache* one[] = {&batched};
            const Matrix& m = decode_batch(model, std::span(&a, 1), one);
            REQUIRE(m.rows == 1);
            const Logits from_batch(m.row(0), m.row(0) + m.cols);
            const std::span<const float> from_step = decode_step(model, b, single);
            CHECK(largest_difference(from_batch, from_step) == 0.0);
            a = argmax(from_batch);
            b = argmax(from_step);
            CHECK(a == b);
        }
        // And the caches hold the same keys and values, to the last bit.
        REQUIRE(batched.length() == single.length());
        for (int l = 0; l < c.n_layers; ++l)
            for (int pos = 0; pos < batched.length(); ++pos) {
                CHECK(std::equal(batched.key(l, pos), batched.key(l, pos) + c.kv_dim(),
                                 single.key(l, pos)));
                CHECK(std::equal(batched.value(l, pos), batched.value(l, pos) + c.kv_dim(),
                                 single.value(l, pos)));
            }
    }
}

TEST_CASE("sequences join and leave between steps and the others are unaffected bit for bit") {
    // Continuous batching on decode_batch: a sequence joins with its own
    // prefill, every step decodes whoever is in the batch, and one that
    // leaves simply drops out of the next step's lists.
    const Config c = test::tiny_config();
    Transformer model(c, 17);
    const auto prompts = ragged(c, {5, 11, 2, 8});  // sequences 0..3
    const int steps = 9;
    std::vector<std::vector<Logits>> alone;
    for (const auto& p : prompts) alone.push_back(decode_alone(model, p, steps));

    std::vector<KVCache> caches;
    for (const auto& p : prompts) caches.emplace_back(c, static_cast<int>(p.size()) + steps);
    std::vector<int> members;                         // ids in the batch, in join order
    std::vector<int> steps_taken(prompts.size(), 0);  // decode steps each sequence has had
    std::vector<std::vector<int>> answers(prompts.size());
    double worst = 0;
    auto join = [&](int id) {
        const int first = argmax(prefill(model, prompts[id], caches[id]));
        CHECK(first == argmax(alone[id][0]));
        answers[id] = {first};
        members.push_back(id);
    };
    auto step = [&] {
        std::vector<int> tokens;
        std::vector<KVCache*> batch;
        for (int id : members) {
            tokens.push_back(answers[id].back());
            batch.push_back(&caches[id]);
        }
        const Matrix& logits = decode_batch(model, tokens, batch);
        REQUIRE(logits.rows == static_cast<int>(members.size()));
        for (std::size_t i = 0; i < members.size(); ++i) {
            const int id = members[i];
            const int s = ++steps_taken[id];
            worst =
                larger_difference(worst, largest_difference(logits.row_span(int(i)), alone[id][s]));
            answers[id].push_back(argmax(logits.row_span(int(i))));
        }
    };
    auto leave = [&](int id) { std::erase(members, id); };

    join(0);
    join(1);
    for (int s = 0; s < 3; ++s) step();
    join(2);  // joins late, at a step where the others are already 3 tokens in
    CHECK(members.size() == 3);
    for (int s = 0; s < 2; ++s) step();
    leave(1);  // leaves early
    join(3);
    for (int s = 0; s < 4; ++s) step();

    INFO("largest logit difference over every step of every sequence: " << worst);
    CHECK(worst == 0.0);
    CHECK(steps_taken == std::vector<int>{9, 5, 6, 4});
    // Each answer is exactly what the sequence alone produces in as many steps.
    for (std::size_t id = 0; id < prompts.size(); ++id) {
        const std::vector<int> expected = generate_cached(model, prompts[id], steps_taken[id] + 1);
        CHECK(answers[id] == expected);
    }
}

TEST_CASE("a ragged batch puts each sequence's new keys at its own position") {
    const Config c = test::tiny_config();
    Transformer model(c, 3);
    const auto prompts = ragged(c, {3, 14, 1, 7});
    std::vector<KVCache> batched, single;
    std::vector<int> tokens;
    for (const auto& p : prompts) {
        batched.emplace_back(c, 20);
        single.emplace_back(c, 20);
        tokens.push_back(argmax(prefill(model, p, batched.back())));
        prefill(model, p, single.back());
    }
    std::vector<KVCache*> members;
    for (KVCache& cache : batched) members.push_back(&cache);
    const std::uint64_t before = model.positions_processed();
    decode_batch(model, tokens, members);
    CHECK(model.positions_processed() - before == prompts.size());  // one position per sequence
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        decode_step(model, tokens[i], single[i]);
        const int pos = static_cast<int>(prompts[i].size());  // the new token's position
        REQUIRE(batched[i].length() == pos + 1);
        for (int l = 0; l < c.n_layers; ++l)
            CHECK(std::equal(batched[i].key(l, pos), batched[i].key(l, pos) + c.kv_dim(),
                             single[i].key(l, pos)));
    }
}

TEST_CASE("bad batch arguments are errors and leave every cache as it was") {
    const Config c = test::tiny_config();
    Transformer model(c, 2);
    KVCache a(c, 4), b(c, 4);
    prefill(model, std::vector<int>{1, 2}, a);
    prefill(model, std::vector<int>{3, 4, 5}, b);

    SUBCASE("token and cache counts differ") {
        const std::vector<int> tokens = {1, 2, 3};
        KVCache* caches[] = {&a, &b};
        CHECK_THROWS_AS(decode_batch(model, tokens, caches), std::invalid_argument);
    }
    SUBCASE("an empty batch") {
        CHECK_THROWS_AS(decode_batch(model, {}, {}), std::invalid_argument);
    }
    SUBCASE("the same cache twice") {
        const std::vector<int> tokens = {1, 2};
        KVCache* caches[] = {&a, &a};
        CHECK_THROWS_AS(decode_batch(model, tokens, caches), std::invalid_argument);
    }
    SUBCASE("a token outside the vocabulary") {
        const std::vector<int> tokens = {1, c.vocab_size};
        KVCache* caches[] = {&a, &b};
        CHECK_THROWS_AS(decode_batch(model, tokens, caches), std::out_of_range);
    }
    SUBCASE("one full cache stops the whole step before anything is written") {
        const std::vector<int> tokens = {1, 2};
        KVCache* caches[] = {&a, &b};
        decode_batch(model, tokens, caches);  // a: 3 of 4, b: 4 of 4
        CHECK_THROWS_AS(decode_batch(model, tokens, caches), std::length_error);
        CHECK(a.length() == 3);  // a did not move either
        CHECK(b.length() == 4);
        return;
    }
    CHECK(a.length() == 2);
    CHECK(b.length() == 3);
}

TEST_CASE("multiplied parameters are every weight but the embedding and the norms") {
    for (Config c : test::shapes_to_check()) {
        // Matrix by matrix: wq, wo (d x d), wk, wv (kv_dim x d), w1, w2, w3
        // (ffn x d) in every layer, then the output projection (vocab x d).
        const std::uint64_t d = c.dim, kvd = c.kv_dim(), f = c.ffn_dim;
        const std::uint64_t by_hand =
            c.n_layers * (2 * d * d + 2 * kvd * d + 3 * f * d) + std::uint64_t(c.vocab_size) * d;
        CHECK(c.multiplied_parameters() == by_hand);
        CHECK(weight_bytes_per_step(c) == 4 * by_hand);
        // Sharing the embedding with the output projection multiplies the same.
        c.shared_output = true;
        CHECK(c.multiplied_parameters() == by_hand);
    }
    // By hand, the demo model: 6 x (2 x 256^2 + 2 x 64 x 256 + 3 x 768 x 256) + 4096 x 256.
    CHECK(Config{}.multiplied_parameters() == 5'570'560);
}

TEST_CASE("a step's arithmetic: B/2 FLOPs per weight byte plus attention per sequence") {
    const Config c = test::tiny_config();  // 2 layers, dim 24, kv_dim 12
    KVCache a(c, 10), b(c, 10);
    a.commit(3);  // the step attends to 4 positions
    b.commit(6);  // and to 7
    const KVCache* caches[] = {&a, &b};
    const StepArithmetic s = step_arithmetic(c, caches);
    const double p = double(c.multiplied_parameters());
    CHECK(s.weight_bytes == 4 * p);
    CHECK(s.weight_flops == 2 * p * 2);
    CHECK(s.weight_flops / s.weight_bytes == 1.0);  // B/2 with B = 2
    CHECK(s.attention_flops == 4.0 * 2 * 24 * (4 + 7));
    CHECK(s.kv_bytes == 2.0 * 2 * 12 * (4 + 7) * 4);
    CHECK(s.flops_per_byte() == doctest::Approx((4 * p + 4.0 * 2 * 24 * 11) / (4 * p + 2112)));
}

TEST_CASE("ragged prompts are seeded and really ragged") {
    const auto prompts = ragged_prompts(40, 12, 97, 3);
    REQUIRE(prompts.size() == 40);
    std::set<std::size_t> lengths;
    for (const auto& p : prompts) {
        CHECK(p.size() >= 1);
        CHECK(p.size() <= 12);
        lengths.insert(p.size());
        for (int t : p) CHECK((t >= 0 && t < 97));
    }
    CHECK(lengths.size() >= 6);
    CHECK(ragged_prompts(40, 12, 97, 3) == prompts);
    CHECK(ragged_prompts(40, 12, 97, 4) != prompts);
}

TEST_CASE("batch sizes are powers of two up to the largest") {
    CHECK(batch_sizes_up_to(1) == std::vector<int>{1});
    CHECK(batch_sizes_up_to(64) == std::vector<int>{1, 2, 4, 8, 16, 32, 64});
    CHECK(batch_sizes_up_to(5) == std::vector<int>{1, 2, 4, 5});
}

TEST_CASE("the bench decodes every batch like the sequences alone") {
    const Config c = test::tiny_config();
    Transformer model(c, 6);
    const auto prompts = ragged_prompts(8, 10, c.vocab_size, 6);
    const StepSampling sampling{.rounds = 2, .repeats = 3, .round_seconds = 1.0};
    // The checked steps and the timed one, each compared with alone.
    AloneReference alone(model, prompts, kDecodeSteps);
    DecodeBench bench(model, prompts, sampling);
    int calls = 0;
    std::vector<int> after;
    const std::vector<BatchTiming> timings = bench.run(
        {1, 3, 8},
        [&](int step, const Matrix& logits) {
            alone.compare(step, logits);
            ++calls;
        },
        {}, [&](int k) { after.push_back(k); });
    REQUIRE(timings.size() == 3);
    CHECK(calls == 3 * kDecodeSteps);
    CHECK(alone.rows_compared() == (1 + 3 + 8) * kDecodeSteps);
    CHECK(alone.same_tokens());
    CHECK(alone.largest_difference() == 0.0);
    // After each batch's timed steps in each round, in the sizes' order.
    CHECK(after == std::vector<int>{0, 1, 2, 0, 1, 2});
    const int sizes[] = {1, 3, 8};
    for (std::size_t k = 0; k < timings.size(); ++k) {
        const BatchTiming& t = timings[k];
        CHECK(t.batch == sizes[k]);
        CHECK(t.step_seconds > 0);
        CHECK(t.arithmetic.weight_flops == 2.0 * double(c.multiplied_parameters()) * t.batch);
        // The timed step: each sequence attends to its prompt, the checked
        // steps' positions and its own.
        double attention = 0;
        for (int i = 0; i < t.batch; ++i)
            attention += 4.0 * c.n_layers * c.dim * double(prompts[i].size() + kDecodeSteps);
        CHECK(t.arithmetic.attention_flops == attention);
    }
    // Measured again: one more round of one batch, the others as they were.
    bench.sample_again(1);
    CHECK(bench.timings()[1].step_seconds <= timings[1].step_seconds);
    CHECK(bench.timings()[0].step_seconds == timings[0].step_seconds);
    CHECK_THROWS_AS(bench.run({9}), std::invalid_argument);  // only 8 sequences
    CHECK_THROWS_AS(bench.run({0}), std::invalid_argument);
    // The rounds are told as they begin, for a progress line.
    std::vector<int> rounds_seen;
    bench.run({1}, {}, [&](int round, int rounds) {
        CHECK(rounds == sampling.rounds);
        rounds_seen.push_back(round);
    });
    CHECK(rounds_seen == std::vector<int>{0, 1});
    CHECK_THROWS_AS(alone.compare(kDecodeSteps, Matrix(1, c.vocab_size)), std::out_of_range);
    CHECK_THROWS_AS(alone.compare(0, Matrix(9, c.vocab_size)), std::out_of_range);
    // A wrong batch is caught: the reference notices a changed logit.
    Matrix wrong(1, c.vocab_size);
    AloneReference fresh(model, prompts, kDecodeSteps);
    fresh.compare(0, wrong);
    CHECK(fresh.largest_difference() > 0);
}

TEST_CASE("the ridge point divides the best arithmetic rate by batch 1's weight rate") {
    std::vector<BatchTiming> timings(3);
    for (int i = 0; i < 3; ++i) {
        timings[i].batch = 1 << (2 * i);  // 1, 4, 16
        timings[i].arithmetic.weight_bytes = 1e9;
        timings[i].arithmetic.weight_flops = 0.5e9 * timings[i].batch;
    }
    timings[0].step_seconds = 0.1;  // 10 GB/s of weights, 5 GFLOP/s
    timings[1].step_seconds = 0.1;  // 20 GFLOP/s
    timings[2].step_seconds = 0.2;  // 40 GFLOP/s
    const Ridge r = ridge_point(timings);
    CHECK(r.bytes_per_second == doctest::Approx(1e10));
    CHECK(r.flops_per_second == doctest::Approx(4e10));
    CHECK(r.at_batch == 16);
    CHECK(r.flops_per_byte() == doctest::Approx(4.0));
    CHECK(r.batch() == doctest::Approx(8.0));
    CHECK(best_throughput(timings).batch == 16);
}

TEST_CASE("the roofline is the lower of the peak and intensity times the memory roof") {
    Roofline roofs;
    roofs.peak_flops = 100e9;
    roofs.dram_bytes_per_second = 10e9;
    const double last_level = 25e9;  // a cache's read rate
    CHECK(roofs.attainable(0.5, roofs.dram_bytes_per_second) == doctest::Approx(5e9));
    CHECK(roofs.attainable(2.0, last_level) == doctest::Approx(50e9));
    CHECK(roofs.attainable(64.0, roofs.dram_bytes_per_second) == doctest::Approx(100e9));
    CHECK(roofs.ridge(last_level) == doctest::Approx(4.0));
    CHECK(roofs.ridge(roofs.dram_bytes_per_second) == doctest::Approx(10.0));
    // float32 weights: B/2 FLOPs per byte, so 4 FLOPs per byte is batch 8;
    // 16-bit weights: B FLOPs per byte, batch 4.
    CHECK(batch_at_intensity(4.0, 4) == doctest::Approx(8.0));
    CHECK(batch_at_intensity(4.0, 2) == doctest::Approx(4.0));
}

// A planted fault: one row of one batched step moved to another token. The
// comparison the chapter prints as "same tokens" then says no.
TEST_CASE("a batch whose one row chose another token is seen to differ from alone") {
    const Config c = test::tiny_config();
    Transformer model(c, 6);
    const auto prompts = ragged_prompts(3, 10, c.vocab_size, 6);
    const int steps = kDecodeSteps;
    AloneReference alone(model, prompts, steps);
    DecodeBench bench(model, prompts, {.rounds = 1, .repeats = 1, .round_seconds = 1.0});
    bench.run({3}, [&](int step, const Matrix& logits) {
        Matrix planted = logits;
        if (step == steps / 2) {
            const std::span<const float> row = logits.row_span(2);
            const int other = (argmax(row) + 1) % c.vocab_size;
            planted.data[std::size_t(2) * std::size_t(planted.cols) + std::size_t(other)] += 1000;
        }
        alone.compare(step, planted);
    });
    CHECK_FALSE(alone.same_tokens());
    CHECK(alone.largest_difference() >= 999);
}
