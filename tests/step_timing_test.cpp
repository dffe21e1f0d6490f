// The book's one way to time a step (common/core/timing.h), which make
// bench, chapter 02's decode step and chapter 04's batches share: a
// warm-up, then timed runs each after an untimed preparation, the thread
// kept on its core while it runs and let go after; and chapter 02's speed-up
// predicted from two rates. What is checked is the counting and the
// arithmetic, never how long anything took.
#include <doctest/doctest.h>

#include <sched.h>

#include <string>
#include <vector>

#include "../chapters/02_kv_cache/experiment.h"
#include "../common/core/timing.h"

using namespace kv;

namespace {

// The cores this thread may run on.
cpu_set_t allowed_cores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    return set;
}

}  // namespace

TEST_CASE("a round warms up once then times each run after its untimed preparation") {
    std::vector<std::string> calls;
    StepSamples samples;
    sample_round(
        samples, 3, 1e9, [&] { calls.push_back("prepare"); }, [&] { calls.push_back("step"); });
    CHECK(calls == std::vector<std::string>{"prepare", "step", "prepare", "step", "prepare", "step",
                                            "prepare", "step"});
    CHECK(samples.seconds.size() == 3);  // the warm-up is not a sample
}

TEST_CASE("a round stops short once its runs take its budget but times at least one") {
    int steps = 0;
    StepSamples samples;
    sample_round(
        samples, 10, 0.0, [] {}, [&] { ++steps; });
    CHECK(steps == 2);  // the warm-up and one timed run
    CHECK(samples.seconds.size() == 1);
}

TEST_CASE("the samples give their fastest and their median") {
    const StepSamples s{{0.5, 0.2, 0.9, 0.3}};
    CHECK(s.fastest() == 0.2);
    CHECK(s.median() == doctest::Approx(0.4));
    CHECK(StepSamples{}.fastest() == 0.0);
}

TEST_CASE("a timed step keeps its thread on one core and lets it go after") {
    const cpu_set_t before = allowed_cores();
    {
        const KeptOnThisCore kept;
        if (kept.core() >= 0) {
            const cpu_set_t now = allowed_cores();
            CHECK(CPU_COUNT(&now) == 1);
            CHECK(CPU_ISSET(kept.core(), &now));
        }
    }
    cpu_set_t after = allowed_cores();
    CHECK(CPU_EQUAL(&before, &after));
    // And the same around every round.
    int cores_in_round = 0;
    StepSamples samples;
    sample_round(
        samples, 1, 1e9, [] {},
        [&] {
            const cpu_set_t now = allowed_cores();
            cores_in_round = CPU_COUNT(&now);
        });
    after = allowed_cores();
    CHECK(CPU_EQUAL(&before, &after));
    CHECK((cores_in_round == 1 || cores_in_round == CPU_COUNT(&before)));
}

TEST_CASE("chapter 02 predicts its speed-up from a naive row and the one-row step") {
    // A naive answer of 1,896 rows in 189.6 ms is 0.1 ms a row; a one-row
    // step of 0.4 ms is 4 rows' worth. The cached answer is 16 prompt rows
    // and 47 one-row steps: 1,896 / (16 + 47 x 4) = 9.29 x.
    CHECK(ch02::predicted_cache_speedup(1896, 16, 48, 0.0004 / 0.0001) ==
          doctest::Approx(1896.0 / (16 + 47 * 4.0)));
    CHECK(ch02::predicted_cache_speedup(1896, 16, 48, 4.0) ==
          doctest::Approx(9.2941).epsilon(1e-4));
    // A one-row step as cheap as a row of a pass: the ratio of rows, 30 x.
    CHECK(ch02::predicted_cache_speedup(1896, 16, 48, 1.0) == doctest::Approx(1896.0 / 63));
}

TEST_CASE("timed runs take turns with an untimed measurement after each timed run") {
    std::vector<std::string> calls;
    const std::vector<double> times = timed_runs(
        3, [&](bool timed) { calls.push_back(timed ? "timed" : "warm-up"); },
        [&] { calls.push_back("after"); });
    CHECK(times.size() == 3);
    CHECK(calls == std::vector<std::string>{"warm-up", "timed", "after", "timed", "after", "timed",
                                            "after"});
    // Without one, the runs alone.
    int runs = 0;
    CHECK(timed_runs(2, [&](bool) { ++runs; }).size() == 2);
    CHECK(runs == 3);
}

TEST_CASE("chapter 02's one-row step alone is the answer's last step and its logits") {
    // A tiny model: the step timed alone decodes the answer's last fed token
    // at the answer's last context, so its logits are the answer's last step's.
    ch02::Experiment e;
    e.model.config = Config{.n_layers = 1,
                            .dim = 16,
                            .n_heads = 2,
                            .n_kv_heads = 1,
                            .ffn_dim = 16,
                            .vocab_size = 32,
                            .max_seq = 32};
    e.prompt_len = 3;
    e.answer_len = 4;
    e.repeats = 2;
    const ch02::Results r = e.run();
    CHECK(r.one_row_context == 3 + 4 - 2);
    CHECK(r.one_row.seconds.size() == 2u * StepSampling{}.repeats);  // a round per timed answer
    CHECK(r.argmax.seconds.size() == 2u * StepSampling{}.repeats);
    CHECK(r.naive.step_seconds.size() == 4);
    CHECK(r.cached.step_seconds.size() == 4);
    CHECK(r.speedup() == doctest::Approx(r.naive_answer_seconds() / r.cached_answer_seconds()));
    CHECK(r.naive.tokens == r.cached.tokens);
}
