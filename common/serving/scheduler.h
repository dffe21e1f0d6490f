// Chapter 05: the scheduler, who runs when.
//
// One loop serves every policy. It keeps a clock, a queue (first come,
// first served unless the policy gives a priority) and a batch of admitted
// requests, and its turn is four named steps:
//   1. admit: waiting requests join the batch, if the policy allows it now,
//      there is a free slot and the memory manager has room (a request
//      that follows another, a conversation's next turn, arrives only once
//      that one has finished);
//   2. make room: when the next step would not fit in memory, send the
//      newest request back to the queue;
//   3. decode: the step runs (what it carries is step_plan.h's choice) and
//      its tokens come out;
//   4. retire: finished requests leave, freeing their slot and their cache.
// Static batching lets requests join only an empty batch, and keeps a
// finished request's row as padding, still computed at every step, until
// the batch's longest answer is done. Continuous batching lets the finished
// leave and the waiting join at every step.
// The scheduler never does the work: an Executor runs each step and says how
// many seconds it took, priced by the step cost (the simulator) or timed on
// the real engine (real_executor.h). Same loop, so the two compare like with
// like.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "memory_budget.h"
#include "memory_manager.h"
#include "step_cost.h"
#include "step_plan.h"
#include "workload.h"

namespace kv {

// Which waiting request goes next: the lowest value first, ties by id. The
// book's policies leave it empty (first come, first served); the exercises
// try others.
using QueuePriority = double (*)(const Request&);

struct Policy {
    std::string name;                  // as printed: "continuous, cache"
    int batch = 1;                     // most requests running at once; 1 is serial
    bool continuous = false;           // join at every step, or only into an empty batch (static)
    bool cache = true;                 // keep each request's KV cache, or recompute from token 0
    QueuePriority priority = nullptr;  // none: first come, first served
};

// The book's six policies: serial (a batch of one), static and continuous
// batching, each without and with the KV cache; the headline's three at:
inline constexpr int kSerialNoCache = 0, kSerialCache = 3, kStaticCache = 4, kContinuousCache = 5;
inline std::vector<Policy> book_policies(int batch) {
    return {{"serial, no cache", 1, false, false},        {"static, no cache", batch, false, false},
            {"continuous, no cache", batch, true, false}, {"serial, cache", 1, false, true},
            {"static, cache", batch, false, true},        {"continuous, cache", batch, true, true}};
}

// The work the scheduler asks for: one engine step at a time.
class Executor {
  public:
    virtual ~Executor() = default;
    // Runs one step: each row feeds `tokens` tokens of its sequence from
    // position `first`, and a row whose sequence is then complete produces
    // its next token. Returns the seconds the step took.
    virtual double run(const StepPlan& plan) = 0;
    // r left the batch, finished or sent back: free what it holds.
    virtual void release(const Request&) {}
};

// The simulator: each step priced by the one formula (step_cost.h), none
// of the work done. It keeps its own copy of the prices.
class SimulatedExecutor : public Executor {
  public:
    explicit SimulatedExecutor(StepCost cost) : cost_(std::move(cost)) {}
    double run(const StepPlan& plan) override { return cost_.seconds(plan); }

  private:
    StepCost cost_;
};

// ----------------------------------------------------------- the record

struct Schedule {
    std::vector<Request> requests;  // (requests) every record as the run left it
    double end_s = 0;               // the clock when the last request finished
    std::int64_t prefills = 0;      // including prefills again after a preemption
    std::int64_t decode_steps = 0;
    std::int64_t decode_rows = 0;    // rows that produced a wanted token, over all steps
    std::int64_t padding_rows = 0;   // rows computed for nothing (static batching)
    std::int64_t preemptions = 0;    // requests sent back to the queue to make room
    std::vector<double> token_gaps;  // (answer tokens - requests) each gap between two
                                     // tokens of one answer, as they came out
};

// For tests and traces: what happened, and the memory right after it.
struct ScheduleEvent {
    enum Kind { admit, decode, finish, preempt } kind;  // admit: its prefill is done
    double time;                                        // the clock after the event
    int request;            // the request concerned; -1 for a decode step
    int running;            // requests in the batch still receiving tokens, after the event
    std::uint64_t held;     // positions held by all caches
    std::uint64_t charged;  // positions charged against the budget
};
using ScheduleObserver = std::function<void(const ScheduleEvent&)>;

// ------------------------------------------------------------ the turn

class Scheduler {
  public:
    // Copies the workload into its records; refuses (std::invalid_argument)
    // an empty queue, a batch below 1, a malformed or out-of-order request,
    // and a request the memory manager could never fit.
    Scheduler(std::span<const Request> workload, const Policy& policy, MemoryManager& memory,
              const StepComposition& steps, Executor& executor, ScheduleObserver observe = {})
        : policy_(policy),
          memory_(memory),
          steps_(steps),
          executor_(executor),
          observe_(std::move(observe)) {
        check(workload);
        s_.requests.assign(workload.begin(), workload.end());
        followers_.resize(workload.size());
        for (const Request& r : workload)
            if (r.after >= 0) followers_[std::size_t(r.after)].push_back(r.id);
        batch_.reserve(std::min(std::size_t(policy.batch), workload.size()));
    }

    bool done() const { return finished_ == s_.requests.size(); }

    // The turn up to the engine step: admit, make room, and the step to
    // run. An empty plan: nothing to run this turn (a static batch ended).
    const StepPlan& schedule() {
        plan_.rows.clear();
        idle_until_next_arrival();
        const bool was_empty = batch_.empty();
        admit();
        if (was_empty && batch_.empty())
            throw std::logic_error("run_schedule: no request could join an empty batch");
        if (!policy_.continuous) end_static_batch_if_answered();
        if (batch_.empty()) return plan_;
        steps_.compose(batch_, policy_.cache, plan_);
        make_room();
        memory_.grow(plan_);
        return plan_;
    }

    // The step ran for `seconds`: its tokens come out, then the finished retire.
    void postprocess(double seconds) {
        decode(seconds);
        retire();
    }

    Schedule result() {
        s_.end_s = now_;
        return std::move(s_);
    }

  private:
    // 1. Admit. Rule: continuous batching fills free slots at every turn,
    //    static batching only a batch that has not started decoding. The
    //    head of the queue is never overtaken: when it does not fit, nobody
    //    joins. Into an empty batch it always fits (the constructor checked).
    void admit() {
        if (!policy_.continuous && static_batch_closed_) return;
        while (int(batch_.size()) < policy_.batch) {
            while (next_ < s_.requests.size() && s_.requests[next_].arrival_s <= now_)
                arrive(s_.requests[next_++]);
            if (waiting_.empty()) return;
            Request& r = s_.requests[std::size_t(waiting_.top().second)];
            if (!batch_.empty() && !memory_.can_admit(r, batch_)) return;
            waiting_.pop();
            r.status = RequestStatus::prefilling;
            r.cached = memory_.cached_prefix(r);
            memory_.admit(r);
            batch_.push_back(&r);
        }
    }

    // 2. Make room. Rule: until the step's new positions fit in memory, the
    //    memory manager's victim leaves the batch: a padding row simply
    //    goes; a request goes back to the queue, to be prefilled again. One
    //    row always stays, so the oldest always finishes.
    void make_room() {
        while (!memory_.can_grow(plan_) && batch_.size() > 1) {
            const auto at = batch_.begin() + long(memory_.victim(batch_));
            Request& r = **at;
            batch_.erase(at);
            leave(r);
            if (r.status != RequestStatus::finished) {
                r.status = RequestStatus::waiting;
                r.cached = 0;
                wait(r);
                ++s_.preemptions;
                note(ScheduleEvent::preempt, r.id);
            }
            steps_.compose(batch_, policy_.cache, plan_);
        }
    }

    // 3. Decode (the step has run). Rule: each row's tokens are now cached;
    //    a row whose whole sequence is then cached produces its next token.
    //    A padding row produces nothing.
    void decode(double seconds) {
        const double began = now_;
        now_ += seconds;
        bool decode_step = false;
        for (const StepRow& row : plan_.rows) {
            Request& r = *row.request;
            if (r.admitted_s < 0) r.admitted_s = began;  // its first prefill
            const bool prefill = r.status == RequestStatus::prefilling;
            decode_step = decode_step || !prefill;
            if (r.status == RequestStatus::finished) {
                ++s_.padding_rows;
                continue;
            }
            if (!prefill) ++s_.decode_rows;
            r.cached = row.first + row.tokens;
            if (r.cached < r.length()) continue;  // a chunk of its prompt: more to come
            if (r.received++ == 0)
                r.first_token_s = now_;
            else
                s_.token_gaps.push_back(now_ - r.last_token_s);  // the time between tokens
            r.last_token_s = now_;
            if (prefill) {
                r.status = RequestStatus::decoding;
                ++s_.prefills;
                note(ScheduleEvent::admit, r.id);
            }
        }
        if (decode_step) {
            ++s_.decode_steps;
            static_batch_closed_ = true;
            note(ScheduleEvent::decode, -1);
        }
    }

    // 4. Retire. Rule: a request whose last token is out is finished.
    //    Continuous batching lets it leave now; static batching keeps its
    //    row as padding until the whole batch is answered.
    void retire() {
        bool any = false;
        for (const StepRow& row : plan_.rows) {
            Request& r = *row.request;
            if (r.status != RequestStatus::decoding || r.received < r.answer_len) continue;
            r.status = RequestStatus::finished;
            r.finished_s = now_;
            ++finished_;
            any = true;
            if (policy_.continuous) leave(r);
            note(ScheduleEvent::finish, r.id);
            // What follows it arrives now if its own time has come; if not,
            // arrive() lets it in when it has.
            for (int f : followers_[std::size_t(r.id)])
                if (std::size_t(f) < next_) {
                    s_.requests[std::size_t(f)].arrival_s = now_;
                    wait(s_.requests[std::size_t(f)]);
                }
        }
        if (any && policy_.continuous) std::erase_if(batch_, is_finished);
    }

    // Static batching: the batch leaves together once every row is answered.
    void end_static_batch_if_answered() {
        if (!std::all_of(batch_.begin(), batch_.end(), is_finished)) return;
        for (Request* r : batch_) leave(*r);
        batch_.clear();
        static_batch_closed_ = false;
    }

    // Nobody running or waiting: the server idles until the next arrival.
    void idle_until_next_arrival() {
        if (batch_.empty() && waiting_.empty() && next_ < s_.requests.size() &&
            s_.requests[next_].arrival_s > now_)
            now_ = s_.requests[next_].arrival_s;
    }

    // A request whose time has come joins the queue, unless it follows one
    // not yet finished: retire() brings it when that one finishes, and that
    // moment becomes its arrival (workload.h, `after`).
    void arrive(Request& r) {
        if (r.after >= 0) {
            const Request& before = s_.requests[std::size_t(r.after)];
            if (before.status != RequestStatus::finished) return;
            r.arrival_s = std::max(r.arrival_s, before.finished_s);
        }
        wait(r);
    }

    // Lowest (priority, id) first; without a priority, lowest (arrival, id):
    // first come, first served, so a preempted request goes back to the
    // head of the queue. (Arrivals follow ids, except a turn that waited
    // for the one before it.)
    void wait(const Request& r) {
        waiting_.push({policy_.priority ? policy_.priority(r) : r.arrival_s, r.id});
    }

    void leave(Request& r) {  // frees its memory and its cache
        memory_.release(r);
        executor_.release(r);
    }

    static bool is_finished(const Request* r) { return r->status == RequestStatus::finished; }

    void note(ScheduleEvent::Kind kind, int request) const {
        if (!observe_) return;
        const int running = int(std::count_if(batch_.begin(), batch_.end(),
                                              [](const Request* r) { return !is_finished(r); }));
        observe_({kind, now_, request, running, memory_.held(), memory_.charged()});
    }

    void check(std::span<const Request> workload) const {
        if (workload.empty()) throw std::invalid_argument("run_schedule: no requests");
        if (policy_.batch < 1)
            throw std::invalid_argument("run_schedule: a batch of " +
                                        std::to_string(policy_.batch) + " requests");
        for (std::size_t i = 0; i < workload.size(); ++i) {
            const Request& r = workload[i];
            if (r.id != int(i) || !std::isfinite(r.arrival_s) || r.arrival_s < 0 ||
                (i > 0 && r.arrival_s < workload[i - 1].arrival_s) || r.prompt_len < 1 ||
                r.answer_len < 1 || r.answer_cap < r.answer_len ||
                r.status != RequestStatus::waiting)
                throw std::invalid_argument("run_schedule: request " + std::to_string(i) +
                                            " is malformed or out of arrival order");
            if (r.after < -1 || r.after >= int(i))
                throw std::invalid_argument("run_schedule: request " + std::to_string(i) +
                                            " follows request " + std::to_string(r.after) +
                                            ", not an earlier one");
            if (!memory_.fits_alone(r))
                throw std::invalid_argument("run_schedule: request " + std::to_string(i) +
                                            " could never fit in memory");
        }
    }

    const Policy& policy_;
    MemoryManager& memory_;
    const StepComposition& steps_;
    Executor& executor_;
    ScheduleObserver observe_;
    Schedule s_;                             // the records, and the counts so far
    std::vector<Request*> batch_;            // admitted, in join order: the newest is at the back
    using Waiting = std::pair<double, int>;  // (priority, id)
    std::priority_queue<Waiting, std::vector<Waiting>, std::greater<Waiting>> waiting_;
    std::vector<std::vector<int>> followers_;  // (requests) the requests that follow each one
    StepPlan plan_;                            // the step being run
    std::size_t next_ = 0;                     // the first request whose time has not come yet
    std::size_t finished_ = 0;                 // requests with every answer token out
    double now_ = 0;                           // the clock
    bool static_batch_closed_ = false;         // static: the batch has started decoding
};

// ------------------------------------------------------- the engine loop

// Three calls a turn, as in nano-vllm's engine: the scheduler says what the
// step carries, the executor runs it, the scheduler takes the tokens.
inline Schedule run_schedule(std::span<const Request> workload, const Policy& policy,
                             MemoryManager& memory, const StepComposition& steps,
                             Executor& executor, const ScheduleObserver& observe = {}) {
    Scheduler scheduler(workload, policy, memory, steps, executor, observe);
    while (!scheduler.done()) {
        const StepPlan& plan = scheduler.schedule();
        if (!plan.rows.empty()) scheduler.postprocess(executor.run(plan));
    }
    return scheduler.result();
}

// The book's servers: memory charged as the budget says, prefills first.
inline Schedule run_schedule(std::span<const Request> workload, const Policy& policy,
                             const MemoryBudget& budget, Executor& executor,
                             const ScheduleObserver& observe = {}) {
    const std::unique_ptr<MemoryManager> memory = make_memory_manager(budget);
    return run_schedule(workload, policy, *memory, PrefillFirst{}, executor, observe);
}

}  // namespace kv
