// Checks that say "same", shown to bite: a fault planted where a wrong
// implementation would put it makes each say no (chapters 03 and 04 plant
// theirs beside their own tests). Chapter 02's same tokens and same logits;
// chapter 11's same logits of one request (its same tokens with the tier:
// tests/second_tier_test.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "../chapters/02_kv_cache/experiment.h"
#include "../chapters/02_kv_cache/report.h"
#include "../chapters/11_second_tier/one_request.h"
#include "../common/core/cached_decoding.h"
#include "../common/core/generation.h"
#include "../common/core/naive_decoding.h"
#include "run_captured.h"
#include "test_files.h"
#include "tiny_models.h"

using namespace kv;

namespace {

// Chapter 02's run on a tiny model, its results passed through `plant` before
// the report; the report's --json.
test::Ran chapter_02(const std::function<void(ch02::Results&)>& plant) {
    const test::TempDir dir;
    ch02::Experiment experiment;
    return test::run_captured("02_kv_cache", {"--layers",     "1",
                                              "--dim",        "16",
                                              "--heads",      "2",
                                              "--kv-heads",   "1",
                                              "--ffn",        "16",
                                              "--vocab",      "32",
                                              "--max-seq",    "32",
                                              "--prompt-len", "3",
                                              "--answer-len", "6",
                                              "--repeats",    "1",
                                              "--plot-dir",   dir.file("plots"),
                                              "--json"},
                              experiment, [&](ch02::Results r, const OutputOptions& out) {
                                  plant(r);
                                  return ch02::report(r, out);
                              });
}

}  // namespace

TEST_CASE("chapter 02: a cached answer with one token changed is not the same and the run fails") {
    const test::Ran clean = chapter_02([](ch02::Results&) {});
    CHECK(clean.status == 0);
    CHECK(clean.out.find("\"same_tokens\": true") != std::string::npos);
    const test::Ran planted = chapter_02([](ch02::Results& r) {
        REQUIRE(r.cached.tokens.size() > 2);
        r.cached.tokens[2] = (r.cached.tokens[2] + 1) % 32;
    });
    CHECK(planted.status == 1);
    CHECK(planted.out.find("\"same_tokens\": false") != std::string::npos);
}

// What chapter 02's run compares (its own compare_logits): every step's
// logits, naive against cached, and their digest (check_same_tokens.sh
// compares it across builds).
TEST_CASE("chapter 02: one logit one bit off is a difference and another digest") {
    const Config c = test::tiny_config();
    Transformer model(c, 3);
    const std::vector<int> prompt = fixed_prompt(5, c.vocab_size, 4);
    std::vector<int> tokens;
    const std::vector<std::vector<float>> naive = logits_per_step(
        [&](const StepCallback& on_step) { return generate_naive(model, prompt, 6, on_step); },
        tokens);
    std::vector<std::vector<float>> cached = logits_per_step(
        [&](const StepCallback& on_step) { return generate_cached(model, prompt, 6, on_step); },
        tokens);
    const ch02::LogitsCompared clean = ch02::compare_logits(naive, cached);
    REQUIRE(clean.max_difference == 0);
    CHECK(ch02::compare_logits(cached, naive).digest == clean.digest);  // the same bits
    float& planted = cached[3][7];
    planted = std::nextafter(planted, INFINITY);
    const ch02::LogitsCompared wrong = ch02::compare_logits(naive, cached);
    CHECK(wrong.max_difference > 0);
    CHECK(wrong.digest != clean.digest);
}

// A tier that keeps nothing (its folder cannot be made): every read says no,
// and so does one request's "same logits".
TEST_CASE("chapter 11: one request served from a tier that keeps nothing is not the same") {
    const Config c = test::tiny_config();
    Transformer model(c, 4);
    const std::vector<int> prompt = fixed_prompt(24 + 5, c.vocab_size, 9);
    BlockPool pool(c, 4, 20);
    TierFile file(pool, 8, "/nonexistent/kv-book");
    REQUIRE(!file.warning().empty());
    CHECK_FALSE(serve_one(model, pool, file, prompt, 24, 2, 2).same_logits);
}
