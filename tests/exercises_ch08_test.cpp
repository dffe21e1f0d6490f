// Chapter 08 exercises (see chapters/08_prefix_caching/EXERCISES.md).
// Skipped until you enable them:
//   ./build/book_tests -ts="exercises ch08" --no-skip
// (or remove * doctest::skip() from one case).
#include <doctest/doctest.h>

#include <vector>

#include "../chapters/08_prefix_caching/exercises.h"
#include "../chapters/08_prefix_caching/shared_workload.h"
#include "../common/core/block_pool.h"
#include "../common/serving/prefix_sharing_memory.h"
#include "../common/serving/scheduler.h"
#include "../common/serving/step_cost.h"
#include "tiny_models.h"

using namespace kv;

namespace {

Request with_prompt(int id, std::vector<int> tokens) {
    Request r;
    r.id = id;
    r.prompt_len = int(tokens.size());
    r.token_ids = std::move(tokens);
    return r;
}

}  // namespace

TEST_SUITE("exercises ch08") {
    TEST_CASE("exercise 08.4 the prefill an unbounded prefix cache leaves" * doctest::skip()) {
        // By hand, blocks of 2: the first prompt prefills all 5; the second
        // shares {1, 2} {3, 4} and prefills 3; the third shares only {1, 2}
        // (its second block differs) and prefills 2; the fourth is the
        // first again, but its last token is always computed: it shares
        // 2 blocks and prefills 1.
        const std::vector<Request> q = {
            with_prompt(0, {1, 2, 3, 4, 5}), with_prompt(1, {1, 2, 3, 4, 6, 7, 8}),
            with_prompt(2, {1, 2, 9, 9}), with_prompt(3, {1, 2, 3, 4, 5})};
        CHECK(exercises::prefill_with_unbounded_cache(q, 2) == 5 + 3 + 2 + 1);
        CHECK(exercises::prefill_with_unbounded_cache(q, 1) == 5 + 3 + 2 + 1);
        CHECK(exercises::prefill_with_unbounded_cache(q, 8) == 5 + 7 + 4 + 5);  // no whole block

        // With memory enough that nothing is evicted or preempted, the
        // chapter's block manager prefills exactly that much.
        WorkloadOptions w;
        w.requests = 60, w.prompt_min = 2, w.prompt_max = 9, w.answer_len = 4, w.answer_max = 12;
        const Config c = test::tiny_config();
        const std::vector<Request> queue = make_shared_workload(
            w, {.system_prompt = 10, .follow_ups = 0.5, .look_back = 5}, c.vocab_size, 128);
        BlockLedger ledger(4, 10'000);
        PrefixSharingMemory memory(ledger, {.watermark = 0, .share = true});
        SimulatedExecutor executor(analytic_step_cost(c));
        const Schedule s = run_schedule(queue, {"continuous, cache", 8, true, true}, memory,
                                        PrefillFirst{}, executor);
        REQUIRE(s.preemptions == 0);
        REQUIRE(memory.prefix_cache()->evictions() == 0);
        CHECK(exercises::prefill_with_unbounded_cache(queue, 4) ==
              memory.positions_admitted() - memory.positions_from_cache());
    }
}
