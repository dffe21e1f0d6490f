// Chapter 09's steps: decode rows and prompt chunks in one pass change
// nothing but time; the chunk size bounds every step; each prompt is
// computed once, in order; one step cost prices every mix; the chapter's
// run shows the trade.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "../chapters/09_chunked_prefill/experiment.h"
#include "../chapters/09_chunked_prefill/step_policies.h"
#include "../common/core/block_pool.h"
#include "../common/core/generation.h"
#include "../common/core/kv_cache.h"
#include "../common/core/paged_kv_cache.h"
#include "../common/core/transformer.h"
#include "../common/serving/real_executor.h"
#include "../common/serving/scheduler.h"
#include "../common/serving/step_cost.h"
#include "tiny_models.h"

using namespace kv;

namespace {

std::vector<float> row_of(const Matrix& m, int i) {
    const std::span<const float> r = m.row_span(i);
    return {r.begin(), r.end()};
}

std::vector<Request> small_queue(int n, int prompt_min, int prompt_max) {
    WorkloadOptions w;
    w.requests = n;
    w.prompt_min = prompt_min;
    w.prompt_max = prompt_max;
    w.answer_len = 5;
    w.answer_max = 12;
    w.seed = 9;
    return make_workload(w);
}

// Runs the inner executor and records, per request, every prompt chunk
// (first, tokens) and every step's prompt tokens.
class Recording : public Executor {
  public:
    explicit Recording(Executor& inner) : inner_(inner) {}
    double run(const StepPlan& plan) override {
        int prompt = 0, decodes = 0;
        for (const StepRow& row : plan.rows) {
            if (row.request->status == RequestStatus::prefilling) {
                chunks[row.request->id].push_back({row.first, row.tokens});
                prompt += row.tokens;
            } else {
                ++decodes;
            }
        }
        prompt_per_step.push_back(prompt);
        decode_rows_per_step.push_back(decodes);
        return inner_.run(plan);
    }
    void release(const Request& r) override { inner_.release(r); }
    std::map<int, std::vector<std::pair<int, int>>> chunks;
    std::vector<int> prompt_per_step, decode_rows_per_step;

  private:
    Executor& inner_;
};

const Policy kContinuous{"continuous, cache", 6, true, true};

// Fills each cache with the first lengths[i] of tokens[i], `turn` tokens of
// one sequence, then `turn` of the next, round and round. On paged caches
// with blocks of `turn` positions, the sequences' blocks then alternate in
// the pool: a row that read a neighbour's blocks would read other keys and
// values.
void fill_in_turns(Transformer& model, const std::vector<std::vector<int>>& tokens,
                   const std::vector<int>& lengths, const std::vector<KVStore*>& caches, int turn) {
    for (int done = 0;; done += turn) {
        bool any = false;
        for (std::size_t i = 0; i < caches.size(); ++i) {
            if (done >= lengths[i]) continue;
            const int n = std::min(turn, lengths[i] - done);
            model.forward(std::span(tokens[i]).subspan(std::size_t(done), std::size_t(n)),
                          *caches[i]);
            any = true;
        }
        if (!any) return;
    }
}

}  // namespace

TEST_CASE("a mixed step gives every row the logits of the same rows run as separate steps") {
    const Config c = test::tiny_config();
    Transformer model(c, 17);
    // Two requests decoding (after prompts of 9 and 14 tokens) and one
    // prompt whose second chunk (tokens 5..11) runs beside them.
    const std::vector<int> a = fixed_prompt(9, c.vocab_size, 1),
                           b = fixed_prompt(14, c.vocab_size, 2),
                           p = fixed_prompt(12, c.vocab_size, 3);
    auto filled = [&](const std::vector<int>& tokens, int n) {
        KVCache cache(c, 40);
        model.forward(std::span(tokens).first(std::size_t(n)), cache);
        return cache;
    };
    KVCache a1 = filled(a, 9), b1 = filled(b, 14), p1 = filled(p, 5);
    KVCache a2 = filled(a, 9), b2 = filled(b, 14), p2 = filled(p, 5);
    const int ta = 3, tb = 8;
    const std::vector<SequenceInput> mixed = {
        {std::span(&ta, 1), &a1}, {std::span(p).subspan(5), &p1}, {std::span(&tb, 1), &b1}};
    const Matrix& m = model.forward(mixed);
    const std::vector<std::vector<float>> together = {row_of(m, 0), row_of(m, 1), row_of(m, 2)};
    const std::vector<float> alone_a = [&] {
        const std::span<const float> l = model.forward(std::span(&ta, 1), a2);
        return std::vector<float>(l.begin(), l.end());
    }();
    const std::vector<float> alone_p = [&] {
        const std::span<const float> l = model.forward(std::span(p).subspan(5), p2);
        return std::vector<float>(l.begin(), l.end());
    }();
    const std::vector<float> alone_b = [&] {
        const std::span<const float> l = model.forward(std::span(&tb, 1), b2);
        return std::vector<float>(l.begin(), l.end());
    }();
    CHECK(together[0] == alone_a);
    CHECK(together[1] == alone_p);
    CHECK(together[2] == alone_b);
}

TEST_CASE("a mixed step on paged caches gives every row the logits of separate steps") {
    for (const Config& c : test::shapes_to_check()) {
        Transformer model(c, 23);
        // In join order: a answering after a 9-token prompt, p with 5 of its
        // 12 prompt tokens done (its chunk is the other 7), b answering
        // after 14. Blocks of 4 positions: a spans 3 blocks, p 2, b 4.
        const std::vector<std::vector<int>> tokens = {fixed_prompt(9, c.vocab_size, 1),
                                                      fixed_prompt(12, c.vocab_size, 3),
                                                      fixed_prompt(14, c.vocab_size, 2)};
        const std::vector<int> cached = {9, 5, 14};
        const int ta = 3, tb = 8;
        const std::vector<std::span<const int>> step = {
            std::span(&ta, 1), std::span(tokens[1]).subspan(5), std::span(&tb, 1)};
        const int block = 4;

        // The mixed step: the three rows in one pass, on paged caches.
        BlockPool pool(c, block, 16);
        std::vector<PagedKVCache> mixed;
        mixed.reserve(3);
        for (int i = 0; i < 3; ++i) mixed.emplace_back(pool, 32);
        fill_in_turns(model, tokens, cached, {&mixed[0], &mixed[1], &mixed[2]}, block);
        std::vector<std::set<int>> tables;  // each sequence's blocks are its own
        std::size_t held = 0;
        for (const PagedKVCache& m : mixed) {
            tables.emplace_back(m.block_table().begin(), m.block_table().end());
            held += m.block_table().size();
        }
        std::set<int> all;
        for (const std::set<int>& t : tables) all.insert(t.begin(), t.end());
        CHECK(all.size() == held);
        std::vector<SequenceInput> inputs;
        for (std::size_t i = 0; i < 3; ++i) inputs.push_back({step[i], &mixed[i]});
        const Matrix& m = model.forward(inputs);
        const std::vector<std::vector<float>> together = {row_of(m, 0), row_of(m, 1), row_of(m, 2)};

        // The same rows as three separate steps: on paged caches filled the
        // same way, and on contiguous ones.
        BlockPool alone_pool(c, block, 16);
        std::vector<PagedKVCache> paged;
        paged.reserve(3);
        for (int i = 0; i < 3; ++i) paged.emplace_back(alone_pool, 32);
        std::vector<KVCache> contiguous(3, KVCache(c, 32));
        fill_in_turns(model, tokens, cached, {&paged[0], &paged[1], &paged[2]}, block);
        fill_in_turns(model, tokens, cached, {&contiguous[0], &contiguous[1], &contiguous[2]},
                      block);
        auto alone = [&](std::span<const int> t, KVStore& cache) {
            const std::span<const float> l = model.forward(t, cache);
            return std::vector<float>(l.begin(), l.end());
        };
        for (std::size_t i = 0; i < 3; ++i) {
            CAPTURE(i);
            CHECK(together[i] == alone(step[i], paged[i]));
            CHECK(together[i] == alone(step[i], contiguous[i]));
        }

        // The mixed step wrote each row's keys and values into its own
        // blocks: the next token of each sequence, alone, is the same as on
        // its contiguous cache.
        const int next = 5;
        for (std::size_t i = 0; i < 3; ++i) {
            CAPTURE(i);
            CHECK(mixed[i].length() == contiguous[i].length());
            CHECK(alone(std::span(&next, 1), mixed[i]) ==
                  alone(std::span(&next, 1), contiguous[i]));
        }

        // What the checks above would catch: a's token at a's position, but
        // against b's first 9 keys and values, gives other logits than a's row.
        KVCache b_keys(c, 32);
        model.forward(std::span(tokens[2]).first(9), b_keys);
        CHECK(alone(std::span(&ta, 1), b_keys) != together[0]);
    }
}

TEST_CASE(
    "chunked prefill never carries more prompt tokens than its chunk and carries every decode") {
    const Config c = test::tiny_config();
    const std::vector<Request> q = small_queue(40, 3, 30);
    const StepCost cost = analytic_step_cost(c);
    for (int chunk : {1, 4, 16, 64}) {
        CAPTURE(chunk);
        SimulatedExecutor priced(cost);
        Recording rec(priced);
        TokensHeld memory(1 << 20);
        const ChunkedPrefill steps(chunk);
        const Schedule s = run_schedule(q, kContinuous, memory, steps, rec);
        int carried_full = 0;
        for (std::size_t i = 0; i < rec.prompt_per_step.size(); ++i) {
            CHECK(rec.prompt_per_step[i] <= chunk);
            carried_full += rec.prompt_per_step[i] == chunk;
        }
        if (chunk > 1) CHECK(carried_full > 0);  // the chunk is really used, not a smaller cap
        for (const Request& r : s.requests) CHECK(r.received == r.answer_len);
    }
}

TEST_CASE("each prompt's chunks run once in order from its first token to its last") {
    const Config c = test::tiny_config();
    const std::vector<Request> q = small_queue(30, 3, 40);
    const StepCost cost = analytic_step_cost(c);
    for (int chunk : {5, 16}) {
        CAPTURE(chunk);
        SimulatedExecutor priced(cost);
        Recording rec(priced);
        TokensHeld memory(1 << 20);
        const ChunkedPrefill steps(chunk);
        run_schedule(q, kContinuous, memory, steps, rec);
        for (const Request& r : q) {
            CAPTURE(r.id);
            const auto& chunks = rec.chunks[r.id];
            int next = 0;
            for (const auto& [first, tokens] : chunks) {
                CHECK(first == next);
                CHECK(tokens >= 1);
                CHECK(tokens <= chunk);
                next = first + tokens;
            }
            CHECK(next == r.prompt_len);
        }
    }
}

TEST_CASE("prefill first and batched and chunked prefill give the engine the same tokens") {
    Config c = test::tiny_config();
    c.max_seq = 64;
    Transformer model(c, 5);
    const std::vector<Request> q = small_queue(14, 3, 30);
    std::vector<std::vector<std::vector<int>>> tokens;
    const PrefillFirst first;
    const BatchedPrefill batched;
    const ChunkedPrefill chunked(7);
    for (const StepComposition* steps :
         std::vector<const StepComposition*>{&first, &batched, &chunked}) {
        RealExecutor engine(model, 3);
        TokensHeld memory(1 << 20);
        const Schedule s = run_schedule(q, kContinuous, memory, *steps, engine);
        std::vector<std::vector<int>> t;
        for (const Request& r : s.requests) t.push_back(r.token_ids);
        tokens.push_back(t);
    }
    CHECK(tokens[1] == tokens[0]);
    CHECK(tokens[2] == tokens[0]);
}

TEST_CASE("batched prefill runs every admitted prompt in one pass") {
    const Config c = test::tiny_config();
    const std::vector<Request> q = small_queue(12, 3, 10);
    SimulatedExecutor priced(analytic_step_cost(c));
    Recording rec(priced);
    TokensHeld memory(1 << 20);
    const BatchedPrefill steps;
    run_schedule(q, kContinuous, memory, steps, rec);
    // The first step: the six admitted prompts, whole, and no decode row.
    int first_six = 0;
    for (int i = 0; i < 6; ++i) first_six += q[std::size_t(i)].prompt_len;
    CHECK(rec.prompt_per_step[0] == first_six);
    CHECK(rec.decode_rows_per_step[0] == 0);
    for (std::size_t i = 0; i < rec.prompt_per_step.size(); ++i)
        if (rec.prompt_per_step[i] > 0) CHECK(rec.decode_rows_per_step[i] == 0);
}

TEST_CASE("the step cost prices a prefill and a decode step as its two corners say") {
    // The plans prefill first composes: one newcomer's whole prompt, then
    // one decode row for each of B requests at its own context.
    for (const Config& c : test::shapes_to_check()) {
        const StepCost s = analytic_step_cost(c);
        std::vector<Request> r(3);
        for (int i = 0; i < 3; ++i) {
            r[std::size_t(i)].id = i;
            r[std::size_t(i)].prompt_len = 7 + 10 * i;
            r[std::size_t(i)].answer_len = r[std::size_t(i)].answer_cap = 20;
        }
        std::vector<Request*> batch = {&r[0]};
        StepPlan plan;
        r[0].status = RequestStatus::prefilling;
        PrefillFirst{}.compose(batch, true, plan);
        CHECK(s.seconds(plan) == doctest::Approx(s.prefill_seconds(7)).epsilon(1e-12));
        int context = 0;
        batch.clear();
        for (Request& x : r) {
            x.status = RequestStatus::decoding;
            x.received = 3;
            x.cached = x.prompt_len + 2;
            context += x.cached;
            batch.push_back(&x);
        }
        PrefillFirst{}.compose(batch, true, plan);
        REQUIRE(plan.rows.size() == 3);
        CHECK(s.seconds(plan) == doctest::Approx(s.decode_seconds(3, context)).epsilon(1e-12));
        // A chunk of the same prompt after some of it is cached costs more
        // per token than the first chunk: its rows attend to more pairs.
        StepWork first, second;
        first.add(0, 8);
        second.add(8, 8);
        CHECK(s.seconds(second) > s.seconds(first));
    }
}

TEST_CASE("work_of counts a mixed plan's rows and sequences and attention pairs") {
    std::vector<Request> r(2);
    r[0].status = RequestStatus::decoding;
    r[1].status = RequestStatus::prefilling;
    StepPlan plan;
    plan.rows = {{&r[0], 10, 1}, {&r[1], 4, 3}};  // a decode after 10; a chunk of 3 after 4
    const StepWork w = work_of(plan);
    CHECK(w.rows == 4);
    CHECK(w.sequences == 2);
    CHECK(w.pairs == 11 + (5 + 6 + 7));  // 10 + 1; then 4 + 1, 4 + 2, 4 + 3
    CHECK(w.positions == 11 + 7);        // each sequence's cache, read once
}

TEST_CASE("a chunked step: a decode row for every request answering; then the oldest prompts") {
    std::vector<Request> r(6);
    for (int i = 0; i < 6; ++i) {
        r[std::size_t(i)].id = i;
        r[std::size_t(i)].prompt_len = 9;
        r[std::size_t(i)].answer_len = r[std::size_t(i)].answer_cap = 4;
    }
    // In join order: decoding, prefilling (3 of 9 done), decoding,
    // prefilling (none done), decoding, prefilling.
    for (int i : {0, 2, 4}) {
        r[std::size_t(i)].status = RequestStatus::decoding;
        r[std::size_t(i)].received = 1;
        r[std::size_t(i)].cached = 9;
    }
    for (int i : {1, 3, 5}) r[std::size_t(i)].status = RequestStatus::prefilling;
    r[1].cached = 3;
    std::vector<Request*> batch;
    for (Request& x : r) batch.push_back(&x);
    StepPlan plan;
    ChunkedPrefill(8).compose(batch, true, plan);
    // Every decoding request, one token each; request 1's remaining 6
    // prompt tokens, then 2 of request 3's; request 5 waits.
    REQUIRE(plan.rows.size() == 5);
    CHECK(plan.rows[0].request == &r[0]);
    CHECK(plan.rows[0].tokens == 1);
    CHECK(plan.rows[1].request == &r[1]);
    CHECK(plan.rows[1].first == 3);
    CHECK(plan.rows[1].tokens == 6);
    CHECK(plan.rows[2].request == &r[2]);
    CHECK(plan.rows[3].request == &r[3]);
    CHECK(plan.rows[3].first == 0);
    CHECK(plan.rows[3].tokens == 2);
    CHECK(plan.rows[4].request == &r[4]);
    CHECK(plan.rows[4].tokens == 1);
    CHECK(prompt_tokens(plan) == 8);
    CHECK_THROWS_AS(ChunkedPrefill(8).compose(batch, false, plan), std::invalid_argument);
}

TEST_CASE("a request preempted in the middle of its chunked prefill starts again; same tokens") {
    Config c = test::tiny_config();
    c.max_seq = 64;
    Transformer model(c, 5);
    const std::vector<Request> q = small_queue(16, 10, 30);
    std::vector<std::vector<int>> before;
    {
        RealExecutor engine(model, 3);
        TokensHeld memory(1 << 20);
        const Schedule s = run_schedule(q, kContinuous, memory, PrefillFirst{}, engine);
        for (const Request& r : s.requests) before.push_back(r.token_ids);
    }
    RealExecutor engine(model, 3);
    Recording rec(engine);
    TokensHeld memory(90);  // room for about three: the next steps must preempt
    const ChunkedPrefill steps(6);
    const Schedule s = run_schedule(q, kContinuous, memory, steps, rec);
    CHECK(s.preemptions > 0);
    int restarted = 0;  // requests whose chunks went back to an earlier position
    for (const auto& [id, chunks] : rec.chunks)
        for (std::size_t i = 1; i < chunks.size(); ++i)
            restarted += chunks[i].first < chunks[i - 1].first + chunks[i - 1].second;
    CHECK(restarted > 0);
    std::size_t gaps = 0;
    for (std::size_t i = 0; i < q.size(); ++i) {
        CHECK(s.requests[i].token_ids == before[i]);
        gaps += std::size_t(q[i].answer_len - 1);
    }
    CHECK(s.token_gaps.size() == gaps);  // one gap between each two tokens, preempted or not
}

TEST_CASE("chapter 09's run: every rule on both workloads and the trade its headline names") {
    ch09::Experiment e;
    e.queue.cost_model = "analytic";  // counted prices: nothing measured, the same everywhere
    e.queue.workload.requests = 120;
    e.chunk = 48;  // not one of kChunks: the run adds it in order
    e.check();
    const ch09::Results r = e.run();
    std::vector<std::string> names;
    for (const ch09::StepRule& rule : r.rules) names.push_back(rule.name);
    CHECK(names == std::vector<std::string>{"prefill first", "batched prefill", "chunked 16",
                                            "chunked 32", "chunked 48", "chunked 64", "chunked 128",
                                            "chunked 256", "chunked 512"});
    REQUIRE(r.runs.size() == 2 * r.rules.size());
    for (const ch09::QueueRun& q : r.runs) {
        CAPTURE(q.workload);
        CAPTURE(q.rule.name);
        if (q.rule.chunk > 0)
            CHECK(q.most_prompt <= q.rule.chunk);
        else
            CHECK(q.mixed == 0);  // prefill first and batched prefill never mix
        CHECK(q.summary.answer_tokens > 0);
    }
    // Every prompt of the long workload is 512 tokens: prefill first's
    // largest step carries one, batched prefill's a whole batch of them.
    const std::string longer = ch09::long_prompts(512);
    CHECK(r.run(longer, "prefill first").most_prompt == 512);
    CHECK(r.run(longer, "batched prefill").most_prompt == 512 * r.setup.queue.batch);
    // The trade: chunks shorten the long prompts' p99 gap and lengthen
    // the median wait; the smaller the chunk, the more so.
    const Summary& first = r.run(longer, "prefill first").summary;
    const Summary& c16 = r.run(longer, "chunked 16").summary;
    const Summary& c64 = r.run(longer, "chunked 64").summary;
    CHECK(c64.tbt_p99 < first.tbt_p99 / 4);
    CHECK(c16.tbt_p99 < c64.tbt_p99);
    CHECK(c64.ttft_median > first.ttft_median);
    CHECK(c16.ttft_median > c64.ttft_median);
    // The same flags give the same simulated queues.
    const ch09::Results again = e.run();
    for (std::size_t i = 0; i < r.runs.size(); ++i) {
        CHECK(again.runs[i].summary.tbt_p99 == r.runs[i].summary.tbt_p99);
        CHECK(again.runs[i].summary.total_s == r.runs[i].summary.total_s);
    }
}
