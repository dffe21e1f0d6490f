// Chapter 05's two seams, filled from outside the chapter: a memory manager
// and a step composition written here, in the test, change the schedule as
// they should while the scheduler's code stays as it is. Chapters 07 to 09
// plug in the same way.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "../common/core/block_pool.h"  // blocks_for
#include "../common/core/cached_decoding.h"
#include "../common/serving/memory_manager.h"
#include "../common/serving/real_executor.h"
#include "../common/serving/scheduler.h"
#include "../common/serving/step_plan.h"
#include "../common/serving/workload.h"
#include "tiny_models.h"

using namespace kv;

namespace {

const Config kDemo;

// Prompts of 4 to 40 tokens, answers around 12 capped at 48.
WorkloadOptions small_workload(int requests) {
    WorkloadOptions w;
    w.requests = requests;
    w.prompt_min = 4, w.prompt_max = 40;
    w.answer_len = 12, w.answer_max = 48;
    return w;
}

// Paged memory in miniature (chapter 07's idea): positions are handed out
// in blocks of `block`, a request holds whole blocks, and admission keeps
// `watermark` blocks free.
class PagedMemory : public MemoryManager {
  public:
    PagedMemory(int block, int blocks, int watermark)
        : block_(block), blocks_(blocks), watermark_(watermark) {}
    int blocks_for(int positions) const { return kv::blocks_for(positions, block_); }
    bool fits_alone(const Request& r) const override {
        return blocks_for(int(longest_context(r))) <= blocks_;
    }
    bool can_admit(const Request& r, std::span<Request* const>) const override {
        return used_ + blocks_for(r.length()) + watermark_ <= blocks_;
    }
    void admit(Request& r) override {
        MemoryManager::admit(r);
        used_ += blocks_for(r.held);
    }
    bool can_grow(const StepPlan& plan) const override {
        return used_ + new_blocks(plan) <= blocks_;
    }
    void grow(const StepPlan& plan) override {
        used_ += new_blocks(plan);
        MemoryManager::grow(plan);
        most_used = std::max(most_used, used_);
    }
    void release(Request& r) override {
        used_ -= blocks_for(r.held);
        MemoryManager::release(r);
    }
    std::uint64_t charged() const override { return std::uint64_t(used_) * std::uint64_t(block_); }
    int most_used = 0;  // blocks

  private:
    int new_blocks(const StepPlan& plan) const {
        int n = 0;
        for (const StepRow& row : plan.rows)
            n +=
                blocks_for(row.request->held + row.new_positions()) - blocks_for(row.request->held);
        return n;
    }
    int block_, blocks_, watermark_, used_ = 0;
};

// Prefix sharing in miniature (chapter 08's idea): the first `shared`
// positions of every prompt are already cached.
class SharedPrefixMemory : public TokensHeld {
  public:
    SharedPrefixMemory(std::uint64_t tokens, int shared) : TokensHeld(tokens), shared_(shared) {}
    int cached_prefix(const Request& r) const override {
        return std::min(shared_, r.prompt_len - 1);
    }

  private:
    int shared_;
};

// Chapter 09's ideas: every newcomer's prompt in one pass (batched prefill),
// or decode rows and prompt chunks together under a token budget (chunked
// prefill: running requests decode first, then prompts fill what is left).
class BatchedPrefill : public StepComposition {
  public:
    void compose(std::span<Request* const> batch, bool cache, StepPlan& plan) const override {
        plan.cache = cache;
        plan.rows.clear();
        const auto newcomer = [](const Request* r) {
            return r->status == RequestStatus::prefilling;
        };
        const bool prefill = std::any_of(batch.begin(), batch.end(), newcomer);
        for (Request* r : batch)
            if (!prefill)
                plan.rows.push_back(decode_row(*r, cache));
            else if (newcomer(r))
                plan.rows.push_back(prefill_row(*r, cache));
    }
};

class ChunkedPrefill : public StepComposition {
  public:
    explicit ChunkedPrefill(int budget) : budget_(budget) {}
    void compose(std::span<Request* const> batch, bool cache, StepPlan& plan) const override {
        plan.rows.clear();
        plan.cache = cache;
        int left = budget_;
        for (Request* r : batch)
            if (r->status != RequestStatus::prefilling && left > 0) {
                plan.rows.push_back(decode_row(*r, cache));
                --left;
            }
        for (Request* r : batch)
            if (r->status == RequestStatus::prefilling && left > 0) {
                StepRow row = prefill_row(*r, cache);
                row.tokens = std::min(row.tokens, left);
                left -= row.tokens;
                plan.rows.push_back(row);
            }
    }

  private:
    int budget_;  // tokens one step may carry
};

// Records every plan the scheduler hands over, and prices it as the simulator does.
struct PlanRecorder : Executor {
    struct Row {
        int request, first, tokens;
        RequestStatus status;
    };
    std::vector<std::vector<Row>> plans;
    SimulatedExecutor simulated{analytic_step_cost(kDemo)};
    double run(const StepPlan& plan) override {
        std::vector<Row> rows;
        for (const StepRow& row : plan.rows)
            rows.push_back({row.request->id, row.first, row.tokens, row.request->status});
        plans.push_back(rows);
        return simulated.run(plan);
    }
};

void check_every_answer_complete(const std::vector<Request>& queue, const Schedule& s) {
    for (const Request& r : queue) {
        CHECK(s.requests[std::size_t(r.id)].received == r.answer_len);
        CHECK(s.requests[std::size_t(r.id)].status == RequestStatus::finished);
    }
}

}  // namespace

TEST_CASE("a paged memory manager plugged in holds whole blocks and preempts to make room") {
    const std::vector<Request> queue = make_workload(small_workload(80));
    const int block = 8, blocks = 40, watermark = 2;  // 320 positions
    PagedMemory paged(block, blocks, watermark);
    PlanRecorder executor;
    std::uint64_t worst = 0;
    int preemptions = 0;
    const Schedule s = run_schedule(queue, Policy{"continuous", 16, true, true}, paged,
                                    PrefillFirst{}, executor, [&](const ScheduleEvent& e) {
                                        worst = std::max(worst, e.charged);
                                        CHECK(e.charged % block == 0);  // whole blocks
                                        CHECK(e.held <= e.charged);
                                        preemptions += e.kind == ScheduleEvent::preempt;
                                    });
    check_every_answer_complete(queue, s);
    CHECK(worst <= std::uint64_t(blocks * block));
    CHECK(paged.most_used <= blocks);
    CHECK(preemptions > 0);  // growth by a block at a time ran out and made room
    CHECK(s.preemptions == preemptions);
    CHECK(paged.held() == 0);  // every block came back
    CHECK(paged.charged() == 0);

    // The same queue charged position by position fits more at once than
    // blocks with a watermark: the manager, not the scheduler, made the difference.
    TokensHeld held(blocks * block);
    PlanRecorder by_position;
    const Schedule t = run_schedule(queue, Policy{"continuous", 16, true, true}, held,
                                    PrefillFirst{}, by_position);
    check_every_answer_complete(queue, t);
    CHECK(t.preemptions != s.preemptions);
}

TEST_CASE("a memory manager that caches a shared prefix shortens every prefill") {
    Request r;
    r.prompt_len = 30;
    r.answer_len = 3;
    r.answer_cap = 3;
    const std::vector<Request> one = {r};
    const StepCost cost = analytic_step_cost(kDemo);
    SimulatedExecutor executor(cost);
    SharedPrefixMemory shared(1000, 20);
    const Schedule s =
        run_schedule(one, Policy{"serial", 1, false, true}, shared, PrefillFirst{}, executor);
    // 10 tokens after 20 cached ones: 10 rows, 1 sequence, 10 x 20 + 10 x 11 / 2
    // pairs, 30 positions read.
    StepWork after_prefix;
    after_prefix.rows = 10;
    after_prefix.sequences = 1;
    after_prefix.pairs = 200 + 55;
    after_prefix.positions = 30;
    CHECK(s.requests[0].first_token_s == cost.seconds(after_prefix));
    CHECK(s.requests[0].first_token_s < cost.prefill_seconds(30));
    CHECK(s.requests[0].received == 3);
}

TEST_CASE("a batched prefill composition plugged in runs every newcomer's prompt in one step") {
    const std::vector<Request> queue = make_workload(small_workload(20));
    PlanRecorder executor;
    const MemoryBudget roomy{.bytes = 0, .bytes_per_token = 0, .tokens = 1 << 20};
    const std::unique_ptr<MemoryManager> memory = make_memory_manager(roomy);
    const Schedule s = run_schedule(queue, Policy{"continuous", 5, true, true}, *memory,
                                    BatchedPrefill{}, executor);
    check_every_answer_complete(queue, s);
    // Everyone waits at time 0: the first step carries the first five prompts.
    REQUIRE(!executor.plans.empty());
    REQUIRE(executor.plans[0].size() == 5);
    for (int i = 0; i < 5; ++i) {
        CHECK(executor.plans[0][std::size_t(i)].request == i);
        CHECK(executor.plans[0][std::size_t(i)].tokens == queue[std::size_t(i)].prompt_len);
        CHECK(s.requests[std::size_t(i)].first_token_s == s.requests[0].first_token_s);
    }
    // Chapter 05's own composition gives the five first tokens one after another.
    PlanRecorder one_by_one;
    const Schedule t = run_schedule(queue, Policy{"continuous", 5, true, true}, *memory,
                                    PrefillFirst{}, one_by_one);
    CHECK(t.requests[1].first_token_s > t.requests[0].first_token_s);
    CHECK(executor.plans.size() < one_by_one.plans.size());
}

TEST_CASE("a chunked prefill composition keeps its token budget and runs each prompt in order") {
    const std::vector<Request> queue = make_workload(small_workload(30));
    const int budget = 16;
    PlanRecorder executor;
    TokensHeld memory(1 << 20);
    const Schedule s = run_schedule(queue, Policy{"continuous", 6, true, true}, memory,
                                    ChunkedPrefill(budget), executor);
    check_every_answer_complete(queue, s);
    std::vector<int> next_position(queue.size(), 0);  // where each prompt's next chunk starts
    bool mixed = false;
    for (const auto& plan : executor.plans) {
        int tokens = 0;
        bool decode = false, prefill = false;
        for (const PlanRecorder::Row& row : plan) {
            tokens += row.tokens;
            if (row.status == RequestStatus::prefilling) {
                CHECK(row.first == next_position[std::size_t(row.request)]);  // in order, once
                next_position[std::size_t(row.request)] = row.first + row.tokens;
                prefill = true;
            } else {
                decode = true;
            }
        }
        CHECK(tokens <= budget);
        mixed = mixed || (decode && prefill);
    }
    CHECK(mixed);  // some steps carried decode rows and a prompt chunk together
    for (const Request& r : queue) CHECK(next_position[std::size_t(r.id)] == r.prompt_len);
}

TEST_CASE("the real engine runs mixed step plans and still gives chapter 02's answers") {
    // Decode rows and prompt chunks in one forward pass change when tokens
    // come out, never which tokens.
    const Config c = test::tiny_config();
    Transformer model(c, 5);
    WorkloadOptions w;  // six requests, prompts of 3 to 20 tokens, answers around 6 capped at 12
    w.requests = 6, w.seed = 9;
    w.prompt_min = 3, w.prompt_max = 20;
    w.answer_len = 6, w.answer_max = 12;
    const std::vector<Request> queue = make_workload(w);
    const std::uint64_t seed = 4;
    for (int budget : {1, 5, 64}) {
        RealExecutor real(model, seed);
        TokensHeld memory(1000);
        const Schedule s = run_schedule(queue, Policy{"continuous", 3, true, true}, memory,
                                        ChunkedPrefill(budget), real);
        INFO("token budget " << budget);
        for (const Request& r : queue) {
            const std::vector<int> prompt = request_prompt(r, c.vocab_size, seed);
            std::vector<int> expected = prompt;
            const std::vector<int> answer = generate_cached(model, prompt, r.answer_len);
            expected.insert(expected.end(), answer.begin(), answer.end());
            CHECK(s.requests[std::size_t(r.id)].token_ids == expected);
        }
    }
}
