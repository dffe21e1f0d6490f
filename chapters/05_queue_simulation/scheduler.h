// Chapter 05: the scheduler, who runs when.
//
// One loop serves every policy. It keeps a clock, a queue (first come,
// first served unless the policy gives a priority)
// and a batch of running requests, and at each turn it
//   1. lets waiting requests join the batch, if the policy allows it now,
//      there is a free slot and the memory budget has room; each one joins
//      with its prefill, which produces its first answer token;
//   2. runs one decode step: every running request produces one more token;
//   3. lets finished requests leave, freeing their slot and their cache.
// Static batching differs in two ways: requests join only an empty batch,
// and a finished request's row stays in the batch as padding, still
// computed at every step and still holding its cache (which no longer
// grows), until the batch's longest answer is done: the batch is one block
// of B rows from start to end. Continuous batching lets the finished leave
// and the waiting join at every step.
// It never does any work itself: it asks an Executor to, and the executor
// says how many seconds that took. The simulated executor answers from the
// cost model; the real one (real_executor.h) runs the transformer and reads
// the wall clock. Same loop, so the two compare like with like.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <queue>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../../common/kit/flags.h"
#include "cost_model.h"
#include "memory_budget.h"
#include "workload.h"

namespace kv {

// Which waiting request goes next: the lowest priority value first, ties
// in arrival order. The book's policies leave it empty: first come, first
// served. The exercises try others.
using QueuePriority = double (*)(const Request&);

struct Policy {
    std::string name;  // as printed: "continuous, cache"
    int batch = 1;     // most requests running at once; 1 is serial
    bool continuous =
        false;          // join at every step (continuous) or only into an empty batch (static)
    bool cache = true;  // keep each request's KV cache, or recompute every step from token 0
    QueuePriority priority = nullptr;  // none: first come, first served
};

// The book's six policies: serial, static and continuous batching, each
// without and with the KV cache. Serial is a batch of one. The headline
// compares three of them, at these places in the list:
inline constexpr int kSerialNoCache = 0, kSerialCache = 3, kStaticCache = 4, kContinuousCache = 5;
inline std::vector<Policy> book_policies(int batch) {
    if (batch < 1) throw UsageError("--batch must be at least 1, got " + std::to_string(batch));
    return {{"serial, no cache", 1, false, false},        {"static, no cache", batch, false, false},
            {"continuous, no cache", batch, true, false}, {"serial, cache", 1, false, true},
            {"static, cache", batch, false, true},        {"continuous, cache", batch, true, true}};
}

// One row of the batch.
struct Running {
    int request = 0;       // index into the workload
    int held = 0;          // positions in its KV cache: prompt + answer so far - 1
    bool padding = false;  // static batching: answered, but its row runs until the batch ends
};

// What a decode step must compute, summed over the batch.
struct StepShape {
    int sequences = 0;     // B: one new token each
    double context = 0;    // positions already cached, all sequences (with the cache)
    double tokens = 0;     // whole sequences, all rows (without the cache: recompute all)
    double tokens_sq = 0;  // sum of squared sequence lengths (attention without the cache)
};

// The work the scheduler asks for. Each call returns the seconds it took.
class Executor {
  public:
    virtual ~Executor() = default;
    // Runs the first `tokens` positions of r (its prompt; after a preemption,
    // its prompt and its answer so far) and produces its next answer token.
    virtual double prefill(const Request& r, int tokens, bool cache) = 0;
    // One decode step: every running request produces its next token.
    virtual double decode_step(std::span<const Running> batch, const StepShape& shape,
                               bool cache) = 0;
    // r left the batch, finished or preempted: free what it holds.
    virtual void release(const Request&) {}
};

// Prices work with the cost model and does none of it.
class SimulatedExecutor : public Executor {
  public:
    explicit SimulatedExecutor(const CostModel& cost) : cost_(cost) {}
    double prefill(const Request&, int tokens, bool) override {
        return cost_.prefill_seconds(tokens);
    }
    double decode_step(std::span<const Running>, const StepShape& s, bool cache) override {
        return cache ? cost_.decode_seconds(s.sequences, s.context)
                     : cost_.pass_seconds(s.tokens, s.tokens_sq);
    }

  private:
    const CostModel& cost_;
};

// ----------------------------------------------------------- the record

struct RequestTimes {
    double admitted_s = -1;     // its first prefill began
    double first_token_s = -1;  // its first answer token came out
    double finished_s = -1;     // its last answer token came out
    int tokens = 0;             // answer tokens it has received
};

struct Schedule {
    std::vector<RequestTimes> requests;  // (requests) indexed like the workload
    double end_s = 0;                    // the clock when the last request finished
    std::int64_t prefills = 0;           // including prefills again after a preemption
    std::int64_t decode_steps = 0;
    std::int64_t decode_rows = 0;   // rows that produced a wanted token, over all steps
    std::int64_t padding_rows = 0;  // rows computed for nothing (static batching)
    std::int64_t preemptions = 0;   // requests sent back to the queue to make room
};

// For tests and traces: what happened, and the memory right after it.
struct ScheduleEvent {
    enum Kind { admit, decode, finish, preempt } kind;
    double time;            // the clock after the event
    int request;            // the request concerned; -1 for a decode step
    int running;            // requests in the batch still receiving tokens, after the event
    std::uint64_t held;     // positions held by all caches
    std::uint64_t charged;  // positions charged against the budget
};
using ScheduleObserver = std::function<void(const ScheduleEvent&)>;

inline void check_schedule_inputs(std::span<const Request> requests, const Policy& policy,
                                  const MemoryBudget& budget) {
    if (requests.empty()) throw UsageError("--requests must be at least 1, got 0");
    if (policy.batch < 1)
        throw UsageError("--batch must be at least 1, got " + std::to_string(policy.batch));
    for (std::size_t i = 0; i < requests.size(); ++i) {
        const Request& r = requests[i];
        if (r.id != int(i) || !std::isfinite(r.arrival_s) || r.arrival_s < 0 ||
            (i > 0 && r.arrival_s < requests[i - 1].arrival_s) || r.prompt_len < 1 ||
            r.answer_len < 1 || r.answer_cap < r.answer_len)
            throw std::invalid_argument("run_schedule: request " + std::to_string(i) +
                                        " is malformed or out of arrival order");
    }
    check_every_request_fits(requests, budget);
}

// ------------------------------------------------------------- the loop

inline Schedule run_schedule(std::span<const Request> requests, const Policy& policy,
                             const MemoryBudget& budget, Executor& executor,
                             const ScheduleObserver& observe = {}) {
    check_schedule_inputs(requests, policy, budget);
    const bool full = budget.reserve == Reservation::whole_context;
    const std::size_t n = requests.size();
    Schedule s;
    s.requests.assign(n, {});
    std::vector<Running> batch;  // in the order they joined: the newest is at the back
    batch.reserve(std::min(std::size_t(policy.batch), n));
    // The waiting: arrived requests, and preempted ones sent back. Lowest
    // (priority, id) first; without a priority, id (arrival order) alone,
    // so a preempted request goes back to the head of the queue.
    using Waiting = std::pair<double, int>;
    std::priority_queue<Waiting, std::vector<Waiting>, std::greater<Waiting>> waiting;
    auto wait = [&](int id) {
        waiting.push({policy.priority ? policy.priority(requests[id]) : double(id), id});
    };
    std::size_t next = 0;  // the first request that has not arrived yet
    std::size_t done = 0;
    double now = 0;
    std::uint64_t held = 0;      // positions in all running caches
    std::uint64_t reserved = 0;  // sum of the running requests' longest contexts
    int answering = 0;           // requests in the batch still receiving tokens
    // The others are static batching's padding rows: answered, they no longer grow.
    auto growing = [&] { return std::uint64_t(answering); };
    auto padding = [&] { return batch.size() - std::size_t(answering); };
    auto charged = [&] { return full ? reserved : held; };
    auto note = [&](ScheduleEvent::Kind kind, int request) {
        if (observe) observe({kind, now, request, answering, held, charged()});
    };
    auto leave = [&](const Running& r) {  // frees its slot's memory
        held -= std::uint64_t(r.held);
        reserved -= longest_context(requests[r.request]);
        executor.release(requests[r.request]);
    };
    auto finish = [&](Running& r) {  // its last token is out; static keeps the row as padding
        s.requests[r.request].finished_s = now;
        r.padding = true;
        --answering;
        ++done;
        if (policy.continuous) leave(r);
        note(ScheduleEvent::finish, r.request);
    };

    auto is_padding = [](const Running& r) { return r.padding; };
    auto end_static_batch_if_answered = [&] {
        if (!std::all_of(batch.begin(), batch.end(), is_padding)) return;
        for (const Running& r : batch) leave(r);
        batch.clear();
    };

    while (done < n) {
        // Nobody running or waiting: the server idles until the next arrival.
        if (batch.empty() && waiting.empty() && requests[next].arrival_s > now)
            now = requests[next].arrival_s;

        // 1. Join. Static batching fills only an empty batch; continuous
        //    batching fills free slots at every step.
        const std::int64_t prefills_before = s.prefills;
        const bool may_join = policy.continuous || batch.empty();
        while (may_join && int(batch.size()) < policy.batch) {
            while (next < n && requests[next].arrival_s <= now) wait(int(next++));
            if (waiting.empty()) break;
            const int id = waiting.top().second;
            const Request& r = requests[id];
            RequestTimes& t = s.requests[id];
            const int tokens = r.prompt_len + t.tokens;  // the prompt and the answer so far
            // full: its longest context must fit beside the others'. held:
            // its cache must fit, and the next step, where every cache grows
            // by one position. The first in the queue is never overtaken.
            const bool fits = full ? reserved + longest_context(r) <= budget.tokens
                                   : held + growing() + std::uint64_t(tokens) + 1 <= budget.tokens;
            if (!fits && !batch.empty()) break;
            waiting.pop();

            if (t.admitted_s < 0) t.admitted_s = now;
            now += executor.prefill(r, tokens, policy.cache);
            ++s.prefills;
            if (t.tokens == 0) t.first_token_s = now;
            ++t.tokens;
            held += std::uint64_t(tokens);
            reserved += longest_context(r);
            batch.push_back({id, tokens, false});
            ++answering;
            note(ScheduleEvent::admit, id);
            if (t.tokens == r.answer_len) {
                finish(batch.back());
                if (policy.continuous) batch.pop_back();
            }
        }
        if (!policy.continuous) end_static_batch_if_answered();  // every answer was one token
        if (batch.empty()) {
            if (s.prefills == prefills_before && done < n)
                throw std::logic_error("run_schedule: no request could join an empty batch");
            continue;
        }

        // 2. Room to grow (held): the next step adds one position to every
        //    cache. Until that fits, drop a padding row (its request is
        //    already answered) or else send the newest request back to the
        //    queue. The oldest is never sent back, so it always finishes.
        while (!full && held + growing() > budget.tokens && batch.size() > 1) {
            auto pad = std::find_if(batch.rbegin(), batch.rend(), is_padding);
            const auto victim_at = pad != batch.rend() ? std::prev(pad.base()) : batch.end() - 1;
            const Running victim = *victim_at;
            batch.erase(victim_at);
            leave(victim);
            if (victim.padding) continue;
            wait(victim.request);
            --answering;
            ++s.preemptions;
            note(ScheduleEvent::preempt, victim.request);
        }

        // 3. One decode step for the whole batch.
        StepShape shape;
        shape.sequences = int(batch.size());
        for (const Running& r : batch) {
            const double length = r.held + 1.0;  // the sequence including its newest token
            shape.context += r.held;
            shape.tokens += length;
            shape.tokens_sq += length * length;
        }
        now += executor.decode_step(batch, shape, policy.cache);
        ++s.decode_steps;
        held += growing();
        s.padding_rows += std::int64_t(padding());
        s.decode_rows += std::int64_t(growing());
        for (Running& r : batch)
            if (!r.padding) {
                ++r.held;
                ++s.requests[r.request].tokens;
            }
        note(ScheduleEvent::decode, -1);
        for (Running& r : batch)
            if (!r.padding && s.requests[r.request].tokens == requests[r.request].answer_len)
                finish(r);

        // 4. Leave. Continuous: the finished go, the others keep their join
        //    order. Static: the whole batch goes once every row is padding.
        if (policy.continuous)
            batch.erase(std::remove_if(batch.begin(), batch.end(), is_padding), batch.end());
        else
            end_static_batch_if_answered();
    }
    s.end_s = now;
    return s;
}

}  // namespace kv
