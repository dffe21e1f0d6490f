// Chapter 08's block manager on the queue: prompts that share their start
// are prefilled once, the engine's tokens do not change, and the simulator
// and the engine find the same blocks in the cache.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "../chapters/08_prefix_caching/shared_workload.h"
#include "../common/core/block_pool.h"
#include "../common/core/narrow_kv_cache.h"
#include "../common/core/transformer.h"
#include "../common/serving/prefix_sharing_memory.h"
#include "../common/serving/scheduler.h"
#include "../common/serving/shared_blocks_executor.h"
#include "../common/serving/step_cost.h"
#include "tiny_models.h"
#include "validate/ch08_queues.h"

using namespace kv;

namespace {

Config queue_config() {
    Config c = test::tiny_config();
    c.max_seq = 128;
    return c;
}

// Twenty requests at once with a system prompt of 20 tokens, follow-ups,
// answers of up to 12 tokens.
std::vector<Request> shared_queue(const Config& c, const SharingOptions& s) {
    WorkloadOptions w;
    w.requests = 20;
    w.prompt_min = 2;
    w.prompt_max = 9;
    w.answer_len = 4;
    w.answer_max = 12;
    w.seed = 5;
    return make_shared_workload(w, s, c.vocab_size, c.max_seq);
}

struct Run {
    Schedule schedule;
    std::int64_t prompt_tokens = 0, from_cache = 0, recomputed = 0;
    int entries_left = 0, used_left = 0;
    std::int64_t evictions = 0;
};

// The queue by continuous batching on `blocks` blocks of 4 positions; on
// the real engine when `model` is given, else in the simulator.
Run run_queue(const std::vector<Request>& queue, int blocks, bool share, Transformer* model,
              int batch = 8) {
    const Config c = queue_config();
    const Policy policy{"continuous, cache", batch, true, true};
    const PrefillFirst steps;
    Run run;
    auto tally = [&](const PrefixSharingMemory& memory, const BlockLedger& ledger) {
        run.prompt_tokens = memory.prompt_tokens();
        run.from_cache = memory.prompt_tokens_from_cache();
        run.recomputed = memory.positions_recomputed();
        run.entries_left = memory.prefix_cache() ? memory.prefix_cache()->entries() : 0;
        run.used_left = ledger.used_blocks();
        run.evictions = memory.prefix_cache() ? memory.prefix_cache()->evictions() : 0;
    };
    if (model) {
        BlockPool pool(c, 4, blocks);
        PrefixSharingMemory memory(pool, {.watermark = 0.05, .share = share});
        SharedBlocksExecutor executor(*model, 3, pool, memory);
        run.schedule = run_schedule(queue, policy, memory, steps, executor);
        tally(memory, pool);
    } else {
        BlockLedger ledger(4, blocks);
        PrefixSharingMemory memory(ledger, {.watermark = 0.05, .share = share});
        const StepCost cost = analytic_step_cost(c);
        SimulatedExecutor executor(cost);
        run.schedule = run_schedule(queue, policy, memory, steps, executor);
        tally(memory, ledger);
    }
    return run;
}

}  // namespace

TEST_CASE("the shared workload: one system prompt; follow-ups that resend an earlier prompt") {
    const Config c = queue_config();
    const SharingOptions s{.system_prompt = 20, .follow_ups = 0.5, .look_back = 4};
    const std::vector<Request> q = shared_queue(c, s);
    int follow_ups = 0;
    for (const Request& r : q) {
        REQUIRE(int(r.token_ids.size()) == r.prompt_len);
        CHECK(r.prompt_len + r.answer_cap - 1 <= c.max_seq);
        CHECK(std::equal(q[0].token_ids.begin(), q[0].token_ids.begin() + 20,
                         r.token_ids.begin()));  // the system prompt
        for (const Request& earlier : q) {
            if (earlier.id >= r.id) break;
            if (r.prompt_len > earlier.prompt_len + earlier.answer_len &&
                std::equal(earlier.token_ids.begin(), earlier.token_ids.end(),
                           r.token_ids.begin())) {
                ++follow_ups;
                break;
            }
        }
    }
    CHECK(follow_ups > 3);
    CHECK(shared_queue(c, s)[17].token_ids == q[17].token_ids);  // the same draw every time
}

TEST_CASE("a cache hit changes nothing but time: the engine's tokens with and without sharing") {
    const Config c = queue_config();
    Transformer model(c, 11);
    const std::vector<Request> q =
        shared_queue(c, {.system_prompt = 20, .follow_ups = 0.5, .look_back = 4});
    for (int blocks : {200, 20}) {  // with room, and evicting and preempting
        CAPTURE(blocks);
        const Run with = run_queue(q, blocks, true, &model),
                  without = run_queue(q, blocks, false, &model);
        CHECK(with.from_cache > 0);
        CHECK(without.from_cache == 0);
        for (std::size_t i = 0; i < q.size(); ++i) {
            CAPTURE(i);
            CHECK(with.schedule.requests[i].token_ids == without.schedule.requests[i].token_ids);
        }
    }
}

TEST_CASE("the simulator finds in the cache what the engine finds; on the same queue") {
    const Config c = queue_config();
    Transformer model(c, 11);
    const std::vector<Request> q =
        shared_queue(c, {.system_prompt = 20, .follow_ups = 0.5, .look_back = 4});
    for (int blocks : {200, 20}) {  // ample, and tight enough to evict and preempt
        CAPTURE(blocks);
        const Run engine = run_queue(q, blocks, true, &model),
                  sim = run_queue(q, blocks, true, nullptr);
        CHECK(engine.from_cache == sim.from_cache);
        CHECK(engine.prompt_tokens == sim.prompt_tokens);
        CHECK(engine.recomputed == sim.recomputed);
        CHECK(engine.schedule.preemptions == sim.schedule.preemptions);
        CHECK(engine.evictions == sim.evictions);
        if (blocks == 20) {  // the tight pool did evict and preempt
            CHECK(engine.evictions > 0);
            CHECK(engine.schedule.preemptions > 0);
        }
        // At the end only the cache holds blocks, one reference each.
        CHECK(engine.used_left == engine.entries_left);
        CHECK(sim.used_left == sim.entries_left);
    }
}

TEST_CASE("an owner count never goes below zero and a block is free only at zero") {
    BlockLedger ledger(4, 3);
    const int b = ledger.allocate();
    ledger.share(b);
    ledger.release(b);
    CHECK(ledger.owners(b) == 1);
    CHECK(ledger.free_blocks() == 2);  // still held by its other owner
    ledger.release(b);
    CHECK(ledger.free_blocks() == 3);
    CHECK_THROWS_AS(ledger.release(b), std::logic_error);  // a free block has no owner to lose
    CHECK_THROWS_AS(ledger.share(b), std::logic_error);
}

TEST_CASE("eviction never takes a block a request holds") {
    const Config c = queue_config();
    const std::vector<Request> q =
        shared_queue(c, {.system_prompt = 20, .follow_ups = 0.5, .look_back = 4});
    BlockLedger ledger(4, 20);
    PrefixSharingMemory memory(ledger, {.watermark = 0.05, .share = true});
    const StepCost cost = analytic_step_cost(c);
    SimulatedExecutor executor(cost);
    int checks = 0;
    // After every event: each block is owned at least once by every table
    // naming it, and once more while the prefix cache names it.
    auto check_owners = [&](const ScheduleEvent&) {
        std::vector<int> named(std::size_t(ledger.blocks()), 0);
        for (const Request& r : q)
            for (int b : memory.table(r.id)) ++named[std::size_t(b)];
        for (int b = 0; b < ledger.blocks(); ++b)
            if (named[std::size_t(b)] > 0) {
                REQUIRE(ledger.owners(b) >= named[std::size_t(b)]);
                ++checks;
            }
    };
    const Policy policy{"continuous, cache", 8, true, true};
    const Schedule s = run_schedule(q, policy, memory, PrefillFirst{}, executor, check_owners);
    CHECK(memory.prefix_cache()->evictions() > 0);
    CHECK(s.preemptions > 0);
    CHECK(checks > 100);
}

namespace {

Request asking(int id, std::vector<int> prompt, int answer = 3) {
    Request r;
    r.id = id;
    r.prompt_len = int(prompt.size());
    r.token_ids = std::move(prompt);
    r.answer_len = r.answer_cap = answer;
    return r;
}

std::vector<int> tokens_from(int first, int n) {
    std::vector<int> t;
    for (int i = 0; i < n; ++i) t.push_back((first + 7 * i) % 97);
    return t;
}

std::vector<int> joined(std::vector<int> a, const std::vector<int>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace

TEST_CASE("a newcomer joins after the prefill before it and finds its blocks") {
    // Two requests at time 0 with the same 20-token system prompt (5 blocks
    // of 4). Admitted in one turn, the second would find nothing cached and
    // compute the system prompt again; the admission rule makes it wait for
    // the first prefill, and then all 20 tokens come from the cache.
    const std::vector<int> system = tokens_from(1, 20);
    const std::vector<Request> q = {asking(0, joined(system, tokens_from(50, 3))),
                                    asking(1, joined(system, tokens_from(60, 6)))};
    BlockLedger ledger(4, 100);
    PrefixSharingMemory memory(ledger, {.watermark = 0, .share = true});
    SimulatedExecutor executor(analytic_step_cost(queue_config()));
    const Schedule s =
        run_schedule(q, {"continuous, cache", 8, true, true}, memory, PrefillFirst{}, executor);
    CHECK(memory.prompt_tokens_from_cache() == 20);
    CHECK(memory.prompt_tokens() == 23 + 26);
    CHECK(memory.positions_admitted() - memory.positions_from_cache() == 23 + 6);
    CHECK(s.requests[1].admitted_s > s.requests[0].admitted_s);  // after the first prefill
}

TEST_CASE("a prompt found whole in the cache still computes its last block") {
    // The same 12-token prompt (3 whole blocks of 4) twice: the second may
    // take only 2 blocks, (12 - 1) / 4, and prefills the last 4 tokens, so
    // that its last token's logits give it a first answer token.
    const std::vector<int> prompt = tokens_from(3, 12);
    const std::vector<Request> q = {asking(0, prompt), asking(1, prompt)};
    BlockLedger ledger(4, 100);
    PrefixSharingMemory memory(ledger, {.watermark = 0, .share = true});
    SimulatedExecutor executor(analytic_step_cost(queue_config()));
    const Schedule s =
        run_schedule(q, {"continuous, cache", 8, true, true}, memory, PrefillFirst{}, executor);
    CHECK(memory.prompt_tokens_from_cache() == 8);
    CHECK(memory.positions_admitted() - memory.positions_from_cache() == 12 + 4);
    CHECK(s.requests[1].received == 3);
}

namespace {

// The engine, counting the prompt positions each step's rows have it prefill.
struct CountingPrefills : SharedBlocksExecutor {
    using SharedBlocksExecutor::SharedBlocksExecutor;
    std::int64_t prefilled = 0;
    double run(const StepPlan& plan) override {
        for (const StepRow& row : plan.rows)
            if (row.request->status == RequestStatus::prefilling) prefilled += row.tokens;
        return SharedBlocksExecutor::run(plan);
    }
};

}  // namespace

TEST_CASE("the engine computes exactly the prefill positions the simulator counts") {
    // Counted on the engine from the rows its forward passes ran, not by the
    // block manager both sides share.
    const Config c = queue_config();
    Transformer model(c, 11);
    const std::vector<Request> q =
        shared_queue(c, {.system_prompt = 20, .follow_ups = 0.5, .look_back = 4});
    for (int blocks : {200, 20}) {
        CAPTURE(blocks);
        BlockPool pool(c, 4, blocks);
        PrefixSharingMemory memory(pool, {.watermark = 0.05, .share = true});
        CountingPrefills executor(model, 3, pool, memory);
        run_schedule(q, {"continuous, cache", 8, true, true}, memory, PrefillFirst{}, executor);
        const Run sim = run_queue(q, blocks, true, nullptr);
        BlockLedger ledger(4, blocks);
        PrefixSharingMemory simulated(ledger, {.watermark = 0.05, .share = true});
        SimulatedExecutor priced(analytic_step_cost(c));
        run_schedule(q, {"continuous, cache", 8, true, true}, simulated, PrefillFirst{}, priced);
        CHECK(executor.prefilled ==
              simulated.positions_admitted() - simulated.positions_from_cache());
        CHECK(executor.prefilled < memory.positions_admitted());  // it did share
        CHECK(sim.from_cache == memory.prompt_tokens_from_cache());
    }
}

TEST_CASE("through the block manager's tables; a cache hit gives the logits of a fresh prefill") {
    const Config c = queue_config();
    Transformer model(c, 23);
    for (NumberFormat format : {NumberFormat::float32, NumberFormat::bfloat16,
                                NumberFormat::float16, NumberFormat::int8}) {
        CAPTURE(std::string(format_name(format)));
        BlockPool pool(c, 4, 64, format);
        PrefixSharingMemory memory(pool, {.watermark = 0, .share = true});
        const std::vector<int> system = tokens_from(5, 14);  // 3 whole blocks and 2 tokens
        Request a = asking(0, joined(system, tokens_from(40, 5)), 6);
        Request b = asking(1, joined(system, tokens_from(70, 4)), 6);
        // What the scheduler does for one request: admit, plan its prefill,
        // grow, run it through a view of its table; then decode steps.
        auto serve = [&](Request& r) {
            r.status = RequestStatus::prefilling;
            r.cached = memory.cached_prefix(r);
            memory.admit(r);
            StepPlan plan;
            plan.rows = {prefill_row(r, true)};
            memory.grow(plan);
            BlockTableView view(pool, memory, r);
            std::vector<std::vector<float>> logits;
            std::span<const float> l =
                model.forward(std::span(r.token_ids).subspan(std::size_t(r.cached)), view);
            logits.emplace_back(l.begin(), l.end());
            r.status = RequestStatus::decoding;
            for (int step = 0; step < 4; ++step) {
                r.cached = view.length();
                r.token_ids.push_back(argmax(logits.back()));
                ++r.received;
                plan.rows = {decode_row(r, true)};
                memory.grow(plan);
                l = model.forward(std::span(r.token_ids).subspan(std::size_t(r.cached)), view);
                logits.emplace_back(l.begin(), l.end());
            }
            return logits;
        };
        serve(a);
        const std::vector<std::vector<float>> served = serve(b);
        CHECK(memory.positions_from_cache() == 12);  // b found the system prompt's 3 whole blocks
        NarrowKVCache fresh(c, 64, format);
        std::vector<int> seq(b.token_ids.begin(), b.token_ids.begin() + b.prompt_len);
        std::span<const float> l = model.forward(seq, fresh);
        CHECK(std::vector<float>(l.begin(), l.end()) == served[0]);
        for (std::size_t step = 1; step < served.size(); ++step) {
            const int token = b.token_ids[std::size_t(b.prompt_len) + step - 1];
            l = model.forward(std::span(&token, 1), fresh);
            CHECK(std::vector<float>(l.begin(), l.end()) == served[step]);  // bit for bit
        }
    }
}

TEST_CASE("make validate's chapter 08 queues share blocks on the engine as in the simulator") {
    ValidateOptions o;
    o.model = queue_config();
    o.model.max_seq = 512;  // the chapter's queue: S = 256, questions up to 64, answers up to 192
    o.requests = 12;
    Transformer model(o.model, 5);
    const std::vector<CheckedQueue> queues = ch08_checked_queues(o);
    REQUIRE(queues.size() == 2);
    for (const CheckedQueue& q : queues) {
        CAPTURE(q.name);
        // On the engine the run takes the block manager made with the
        // engine's pool: the engine reads its tables, and would refuse a
        // step whose blocks another manager handed out.
        const CheckedRow row = check_queue_against_engine(q, model, analytic_step_cost(o.model), 2);
        CHECK(row.same_order);
        CHECK(row.real.answer_tokens == row.simulated.answer_tokens);
    }
    // With the prefix cache the same queue computes less: its prefills are shorter.
    SimulatedExecutor priced(analytic_step_cost(o.model));
    const Schedule off = queues[0].run(priced, nullptr), on = queues[1].run(priced, nullptr);
    CHECK(summarize(on).ttft_median < summarize(off).ttft_median);
}
