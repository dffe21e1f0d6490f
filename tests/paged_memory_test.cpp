// Chapter 07: the block manager (paged_memory.h), on the simulator and on
// the real engine's block pool (paged_executor.h), and how many
// conversations fit (conversations_that_fit.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "../chapters/07_paged_kv_cache/conversations_that_fit.h"
#include "../chapters/07_paged_kv_cache/swap_priced_executor.h"
#include "../common/core/cached_decoding.h"
#include "../common/serving/paged_executor.h"
#include "../common/serving/paged_memory.h"
#include "../common/serving/real_executor.h"
#include "../common/serving/scheduler.h"
#include "../common/serving/step_cost.h"
#include "decode_steps.h"
#include "tiny_models.h"
#include "validate/ch07_queues.h"

using namespace kv;

namespace {

// A tiny model with room for the workload's longest context.
Config small_model() {
    Config c = test::tiny_config();
    c.max_seq = 64;
    return c;
}

// Prompts of 3 to 12 tokens, answers around 8 capped at 24, all at time 0.
std::vector<Request> small_queue(int requests, std::uint64_t seed = 3) {
    WorkloadOptions w;
    w.requests = requests;
    w.prompt_min = 3, w.prompt_max = 12;
    w.answer_len = 8, w.answer_max = 24;
    w.seed = seed;
    return make_workload(w);
}

const Policy kContinuous{"continuous, cache", 6, true, true};

// What one run left behind, step by step.
struct Trace {
    // After every decode step (when every admitted request has run, so the
    // engine holds what the manager charged at admission):
    std::vector<int> used_blocks;              // the manager's count
    std::vector<int> pool_blocks;              // the real pool's, on the engine
    std::vector<std::vector<int>> batch_rows;  // the requests of every step, in order
    Schedule schedule;
};

Trace run(std::span<const Request> queue, PagedMemory& memory, Executor& executor,
          const BlockPool* pool = nullptr) {
    Trace t;
    const PrefillFirst steps;  // the scheduler keeps a reference: it must outlive the run
    Scheduler scheduler(queue, kContinuous, memory, steps, executor);
    while (!scheduler.done()) {
        const StepPlan& plan = scheduler.schedule();
        if (plan.rows.empty()) continue;
        std::vector<int> rows;
        for (const StepRow& row : plan.rows) rows.push_back(row.request->id);
        t.batch_rows.push_back(rows);
        CHECK(memory.free_blocks() >= 0);  // never over the pool
        const bool decode_step = test::is_decode_step(plan);
        scheduler.postprocess(executor.run(plan));
        if (!decode_step) continue;
        t.used_blocks.push_back(memory.used_blocks());
        if (pool) t.pool_blocks.push_back(pool->used_blocks());
    }
    t.schedule = scheduler.result();
    return t;
}

}  // namespace

TEST_CASE("blocks for a number of positions: whole blocks and no overflow") {
    for (int B : {1, 3, 16}) {
        int by_hand = 0;  // blocks grow by one after every B positions
        for (int n = 0; n <= 100; ++n) {
            CHECK(blocks_for(n, B) == by_hand);
            if (n % B == 0) ++by_hand;
        }
    }
    const int most = std::numeric_limits<int>::max();  // (most + B - 1) / B would overflow
    CHECK(blocks_for(most, 16) == most / 16 + 1);
    CHECK(blocks_for(most, 1) == most);
    CHECK(blocks_for(most, most) == 1);
}

TEST_CASE("the simulator's block counts match the real pool's at every step") {
    const Config c = small_model();
    Transformer model(c, 7);
    const std::vector<Request> queue = small_queue(14);
    const StepCost cost = analytic_step_cost(c);
    for (Preemption mode : {Preemption::recompute, Preemption::swap}) {
        // 12 blocks of 4 positions: room for about three sequences, so the
        // batch of six must preempt.
        const PagedMemoryOptions o{
            .blocks = 12, .block_size = 4, .watermark = 0, .preemption = mode};
        PagedMemory simulated_memory(o), real_memory(o);
        SimulatedExecutor simulated(cost);
        BlockPool pool(c, o.block_size, o.blocks);
        PagedExecutor engine(model, 1, pool, mode);
        const Trace sim = run(queue, simulated_memory, simulated);
        const Trace real = run(queue, real_memory, engine, &pool);
        // All at time 0: the decisions do not depend on how long steps take.
        CHECK(sim.batch_rows == real.batch_rows);
        CHECK(sim.used_blocks == real.used_blocks);
        CHECK(real.used_blocks == real.pool_blocks);
        CHECK(real.schedule.preemptions > 0);
        CHECK(real.schedule.preemptions == sim.schedule.preemptions);
        CHECK(pool.used_blocks() == 0);  // every block came back
        CHECK(real_memory.used_blocks() == 0);
        if (mode == Preemption::swap) {
            CHECK(real_memory.blocks_swapped_out() > 0);
            CHECK(real_memory.blocks_swapped_in() == real_memory.blocks_swapped_out());
            CHECK(engine.bytes_swapped() == std::uint64_t(real_memory.blocks_swapped_out() +
                                                          real_memory.blocks_swapped_in()) *
                                                pool.bytes_per_block());
            CHECK(real_memory.positions_recomputed() == 0);
        } else {
            CHECK(real_memory.positions_recomputed() > 0);
            CHECK(engine.bytes_swapped() == 0);
        }
        // Paging and preemption change nothing in the answers: each request
        // gets chapter 02's tokens for its prompt.
        for (const Request& r : real.schedule.requests) {
            const std::vector<int> prompt = request_prompt(r, c.vocab_size, 1);
            const std::vector<int> want = generate_cached(model, prompt, r.answer_len);
            const std::vector<int> got(r.token_ids.begin() + r.prompt_len, r.token_ids.end());
            CHECK(got == want);
        }
    }
}

// The block manager, watched: after every admission beside a running
// batch, the watermark's blocks are still free.
class WatchedPagedMemory : public PagedMemory {
  public:
    explicit WatchedPagedMemory(const PagedMemoryOptions& o)
        : PagedMemory(o), watermark_blocks(int(o.watermark * o.blocks)) {}
    void admit(Request& r) override {
        const bool beside_others = used_blocks() > 0;
        PagedMemory::admit(r);
        if (beside_others) {
            CHECK(free_blocks() >= watermark_blocks);
            ++admissions_beside_others;
        }
    }
    const int watermark_blocks;  // the pool's share kept free
    int admissions_beside_others = 0;
};

TEST_CASE("the watermark keeps its share of the pool free at admission") {
    const std::vector<Request> queue = small_queue(30, 5);
    const StepCost cost = analytic_step_cost(small_model());
    WatchedPagedMemory memory({.blocks = 24, .block_size = 4, .watermark = 0.25});
    CHECK(memory.watermark_blocks == 6);  // a quarter of 24
    SimulatedExecutor executor(cost);
    const Schedule with = run_schedule(queue, kContinuous, memory, PrefillFirst{}, executor);
    CHECK(memory.admissions_beside_others > 0);
    // Without the watermark, newcomers take the blocks the running requests
    // were about to grow into, and the same queue is preempted more often.
    PagedMemory none({.blocks = 24, .block_size = 4, .watermark = 0});
    const Schedule without = run_schedule(queue, kContinuous, none, PrefillFirst{}, executor);
    CHECK(without.preemptions > with.preemptions);
}

TEST_CASE("admission leaves the watermark free beside a running batch") {
    PagedMemory memory({.blocks = 10, .block_size = 4, .watermark = 0.2});  // 2 blocks kept
    std::vector<Request> queue = small_queue(3);
    Request& running = queue[0];
    running.prompt_len = 20;  // 5 blocks
    memory.admit(running);
    std::vector<Request*> batch = {&running};
    Request& next = queue[1];
    next.prompt_len = 12;  // 3 blocks: 5 + 3 + 2 = 10, just fits
    CHECK(memory.can_admit(next, batch));
    next.prompt_len = 13;  // 4 blocks: would eat into the watermark
    CHECK_FALSE(memory.can_admit(next, batch));
}

TEST_CASE("a request that can never fit in the pool is refused; not left waiting") {
    std::vector<Request> queue = small_queue(3);
    queue[1].prompt_len = 30;  // 30 + 24 - 1 = 53 positions: 14 blocks of 4
    PagedMemory memory({.blocks = 13, .block_size = 4});
    CHECK_FALSE(memory.fits_alone(queue[1]));
    SimulatedExecutor executor(analytic_step_cost(small_model()));
    const PrefillFirst steps;
    CHECK_THROWS_AS(Scheduler(queue, kContinuous, memory, steps, executor), std::invalid_argument);
}

TEST_CASE("paging fits more conversations and wastes less than a block each") {
    const Config c = small_model();
    const std::vector<Request> queue = small_queue(200, 11);
    const std::uint64_t budget = c.kv_bytes(300);  // 300 positions
    const FitCount reserved = fit_reserving(queue, 300);
    // Counted by hand from the queue: whole contexts in arrival order.
    auto longest = [&](int i) {  // what a whole-context reservation charges
        return std::uint64_t(queue[std::size_t(i)].prompt_len + queue[std::size_t(i)].answer_cap -
                             1);
    };
    std::uint64_t sum = 0;
    int n = 0;
    while (n < int(queue.size()) && sum + longest(n) <= 300) sum += longest(n++);
    CHECK(reserved.conversations == n);
    CHECK(reserved.positions_charged == sum);
    for (int B : {1, 4, 8, 16}) {
        const FitCount paged = fit_paged(c, budget, B, queue);
        CHECK(paged.block_size == B);
        CHECK(paged.positions_budget == std::uint64_t(300 / B * B));
        CHECK(paged.conversations > reserved.conversations);
        CHECK(paged.unused() < std::uint64_t(paged.conversations) * std::uint64_t(B));
        CHECK(paged.unused() <= paged.unused_bound());
        if (B == 1) CHECK(paged.unused() == 0);
        // Counted by hand: whole blocks of each conversation's last step.
        std::uint64_t blocks = 0;
        for (int i = 0; i < paged.conversations; ++i)
            blocks += std::uint64_t(blocks_for(positions_at_last_step(queue[std::size_t(i)]), B));
        CHECK(paged.positions_charged == blocks * std::uint64_t(B));
    }
}

TEST_CASE("the simulator charges each swapped block's bytes to the step it moves in") {
    const std::vector<Request> queue = small_queue(14);
    const StepCost cost = analytic_step_cost(small_model());
    const PagedMemoryOptions o{.blocks = 12, .block_size = 4, .preemption = Preemption::swap};
    const double rate = 1e6;  // slow enough that every swap shows
    const std::uint64_t per_block = 4096;
    PagedMemory priced_memory(o), free_memory(o);
    SwapPricedExecutor priced(cost, priced_memory, per_block, rate);
    SimulatedExecutor unpriced(cost);
    const Trace with = run(queue, priced_memory, priced);
    const Trace without = run(queue, free_memory, unpriced);
    REQUIRE(priced_memory.blocks_swapped_out() > 0);
    CHECK(with.batch_rows == without.batch_rows);  // time changes, decisions do not
    const double moved =
        double(priced_memory.blocks_swapped_out() + priced_memory.blocks_swapped_in());
    CHECK(with.schedule.end_s - without.schedule.end_s ==
          doctest::Approx(moved * double(per_block) / rate).epsilon(1e-9));
}

TEST_CASE("make validate's chapter 07 queues run the same steps on the pool as in the simulator") {
    ValidateOptions o;
    o.model = small_model();
    o.model.max_seq = 512;  // the chapter's queue: prompts up to 64 tokens, answers up to 192
    o.requests = 12;
    Transformer model(o.model, 5);
    const std::vector<CheckedQueue> queues = ch07_checked_queues(o);
    REQUIRE(queues.size() == 3);
    for (const CheckedQueue& q : queues) {
        CAPTURE(q.name);
        CHECK(q.requests.size() == 12);
        // Each run builds its own bookkeeping and the engine its own pool:
        // a run that reused either would not start from an empty pool.
        const CheckedRow row = check_queue_against_engine(q, model, analytic_step_cost(o.model), 2);
        CHECK(row.same_order);
        CHECK(row.real.answer_tokens == row.simulated.answer_tokens);
        CHECK(row.real.preemptions == row.simulated.preemptions);
    }
    // The swap queue's simulator prices its swaps' copies as the chapter
    // does: the same steps as the step cost alone, each swap added.
    ValidateOptions demo;  // the book's model, whose caches outgrow the tight budget
    demo.requests = 200;
    const CheckedQueue swap = ch07_checked_queues(demo)[2];
    const StepCost cost = analytic_step_cost(demo.model);
    SimulatedExecutor step_cost_alone(cost);
    const Schedule plain = swap.run(step_cost_alone, nullptr);
    const Schedule priced = swap.simulate(cost);
    REQUIRE(priced.preemptions > 0);
    CHECK(priced.preemptions == plain.preemptions);
    CHECK(priced.end_s > plain.end_s);
}
