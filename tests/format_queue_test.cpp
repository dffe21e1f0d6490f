// Chapter 10's queue at each width on the engine (common/lab/side_by_side.h):
// the engine's pool stores the format it is given, its queue at float32 is
// chapter 07's, and at a narrower width each request gets the answer that
// width's cache gives it alone, finishing in the order the simulator
// finishes them.
#include <doctest/doctest.h>

#include <numeric>
#include <span>
#include <vector>

#include "../common/core/memory_arithmetic.h"
#include "../common/core/narrow_kv_cache.h"
#include "../common/lab/side_by_side.h"
#include "../common/serving/paged_executor.h"
#include "../common/serving/real_executor.h"  // request_prompt
#include "tiny_models.h"

using namespace kv;

namespace {

constexpr std::uint64_t kSeed = 3;

std::vector<Request> small_queue() {
    return make_workload({.requests = 12,
                          .prompt_min = 3,
                          .prompt_max = 10,
                          .answer_len = 10,
                          .answer_max = 24,
                          .answer_dist = "uniform",
                          .rate = 0,
                          .seed = 5});
}

// 14 blocks of 4 positions: room for a few of the 12 at once in float32.
const PagedMemoryOptions kPool{.blocks = 14, .block_size = 4, .watermark = 0};
const Policy kContinuous{"continuous, cache", 8, true, true};

// The request's answer alone, greedy, in a contiguous cache of `format`.
std::vector<int> alone(Transformer& model, const Request& r, NumberFormat format) {
    const std::vector<int> prompt = request_prompt(r, model.config().vocab_size, kSeed);
    NarrowKVCache cache(model.config(), r.prompt_len + r.answer_len - 1, format);
    std::vector<int> answer;
    std::span<const float> logits = model.forward(prompt, cache);
    for (int s = 0; s < r.answer_len; ++s) {
        answer.push_back(argmax(logits));
        if (s + 1 < r.answer_len) logits = model.forward(std::span(&answer.back(), 1), cache);
    }
    return answer;
}

std::vector<int> answer_of(const Request& r) {
    return {r.token_ids.begin() + r.prompt_len, r.token_ids.end()};
}

}  // namespace

TEST_CASE("the engine's pool holds each position at the width it is given") {
    const Config c = test::tiny_config();
    Transformer model(c, kSeed);
    for (const NumberFormat f : all_formats()) {
        const std::unique_ptr<PoolEngine> engine = paged_engine(model, kSeed, kPool, f);
        INFO(format_name(f));
        CHECK(engine->pool.row_format().format == f);
        CHECK(engine->pool.bytes_per_block() ==
              std::uint64_t(kPool.block_size) * bytes_per_token(cache_shape_of(c, f)));
    }
}

TEST_CASE("the queue at float32 on the engine's pool gives chapter 07's tokens") {
    const Config c = test::tiny_config();
    Transformer model(c, kSeed);
    const std::vector<Request> queue = small_queue();
    const SideBySide s =
        run_side_by_side(model, kSeed, queue, kContinuous, kPool, analytic_step_cost(c));
    PagedMemory memory(kPool);
    BlockPool pool(c, kPool.block_size, kPool.blocks);
    PagedExecutor chapter07(model, kSeed, pool, Preemption::recompute);
    const Schedule want = run_schedule(queue, kContinuous, memory, PrefillFirst{}, chapter07);
    CHECK(s.engine.preemptions > 0);  // the pool runs short: preemption is tested too
    CHECK(s.engine.preemptions == want.preemptions);
    for (const Request& r : want.requests)
        CHECK(answer_of(s.engine.requests[std::size_t(r.id)]) == answer_of(r));
}

TEST_CASE("the order of finishing is a check that can fail, the order of first tokens is not") {
    const Config c = test::tiny_config();
    Transformer model(c, kSeed);
    const std::vector<Request> queue = small_queue();
    SideBySide s = run_side_by_side(model, kSeed, queue, kContinuous, kPool, analytic_step_cost(c));
    REQUIRE(s.same_order());
    std::vector<int> in_request_order(queue.size());
    std::iota(in_request_order.begin(), in_request_order.end(), 0);
    // First come, first served, the newest preempted first: first tokens in
    // request order on both sides, whatever the steps cost. A check on them
    // could only say yes.
    CHECK(first_token_order(s.simulated) == in_request_order);
    CHECK(first_token_order(s.engine) == in_request_order);
    // The order of finishing is not request order, so it says something.
    CHECK(finish_order(s.engine) != in_request_order);
    // A planted fault: the engine's first and last finishers swap their times.
    const std::vector<int> order = finish_order(s.engine);
    Request &a = s.engine.requests[std::size_t(order[0])],
            &b = s.engine.requests[std::size_t(order.back())];
    std::swap(a.finished_s, b.finished_s);
    CHECK_FALSE(s.same_order());
}

TEST_CASE("at each width the engine's queue keeps the simulator's order and each answer alone") {
    const Config c = test::tiny_config();
    Transformer model(c, kSeed);
    const std::vector<Request> queue = small_queue();
    const StepCost cost = analytic_step_cost(c);
    const SideBySide wide = run_side_by_side(model, kSeed, queue, kContinuous, kPool, cost);
    int changed = 0;  // answers a narrower width changed against float32
    for (const NumberFormat f : all_formats()) {
        INFO(format_name(f));
        const SideBySide s = run_side_by_side(model, kSeed, queue, kContinuous, kPool, cost, f);
        CHECK(s.same_order());
        CHECK(s.engine.preemptions == s.simulated.preemptions);
        for (const Request& r : s.engine.requests) {
            const std::vector<int> got = answer_of(r);
            CHECK(got == alone(model, r, f));
            changed += got != answer_of(wide.engine.requests[std::size_t(r.id)]);
        }
    }
    CHECK(changed > 0);  // else a pool that ignored the width would pass
}
