// Chapter 05's picture, recorded: the queue's first requests, static
// against continuous batching, step by step (report.h draws it). A
// recording executor writes down which rows each step ran; the schedule's
// events say when each step ended and who was sent back; the stretches
// between are what each request was doing.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "../../common/core/config.h"
#include "../../common/serving/memory_budget.h"
#include "../../common/serving/scheduler.h"
#include "../../common/serving/step_cost.h"

namespace kv::ch05 {

// The picture's queue: the first 8 requests, in batches of at most 4.
inline constexpr int kTimelineRequests = 8, kTimelineBatch = 4;

// What a request is doing over one stretch of the clock.
enum class Phase {
    waiting,  // its prefill has not started: in the queue, or sent back to it
    prefill,  // its prompt (and answer so far, after a preemption) in one pass
    decode,   // one more answer token at every step
    stalled,  // in the batch, waiting while another request's prefill runs
    padding,  // answered, its row still in the (static) batch until the batch ends
};

struct Stretch {
    Phase phase;
    double start, end;  // seconds on the schedule's clock
};

struct RequestTimeline {
    int id = 0, prompt_len = 0, answer_len = 0;
    double arrival_s = 0, first_token_s = 0, finished_s = 0;  // as the schedule left them
    std::vector<Stretch> stretches;  // in time order, each starting where the last ended
};

struct PolicyTimeline {
    Policy policy;
    std::vector<RequestTimeline> requests;  // indexed like the queue
    double end_s = 0;                       // the clock when the last request finished
};

// One engine step as the executor saw it: its time and its rows.
struct RecordedStep {
    double seconds = 0;
    double end = -1;                               // the clock after it (from the events)
    std::vector<std::pair<int, Phase>> rows = {};  // (request, what its row did)
};

// Runs each step on `inner` and writes down which rows it ran, and how.
class RecordingExecutor : public Executor {
  public:
    RecordingExecutor(Executor& inner, std::vector<RecordedStep>& steps)
        : inner_(inner), steps_(steps) {}
    double run(const StepPlan& plan) override {
        RecordedStep step{inner_.run(plan)};
        for (const StepRow& row : plan.rows) {
            const RequestStatus s = row.request->status;
            step.rows.emplace_back(row.request->id, s == RequestStatus::prefilling ? Phase::prefill
                                                    : s == RequestStatus::finished ? Phase::padding
                                                                                   : Phase::decode);
        }
        steps_.push_back(std::move(step));
        return steps_.back().seconds;
    }
    void release(const Request& r) override { inner_.release(r); }

  private:
    Executor& inner_;
    std::vector<RecordedStep>& steps_;
};

// `queue` under `policy`, each step priced by `priced`, as stretches: the
// executor says which rows each step ran and for how long, the scheduler's
// events when each step ended and who was sent back.
inline PolicyTimeline record_timeline(std::span<const Request> queue, const Policy& policy,
                                      const MemoryBudget& budget, Executor& priced) {
    std::vector<RecordedStep> steps;
    std::vector<std::pair<int, double>> sent_back;  // (request, when) from preempt events
    RecordingExecutor executor(priced, steps);
    const Schedule schedule =
        run_schedule(queue, policy, budget, executor, [&](const ScheduleEvent& e) {
            if (e.kind == ScheduleEvent::preempt)
                sent_back.emplace_back(e.request, e.time);  // before the next step runs
            else if (!steps.empty() && steps.back().end < 0)
                steps.back().end = e.time;  // the first event after a step: the clock after it
        });

    PolicyTimeline out{policy, {}, schedule.end_s};
    for (const Request& r : schedule.requests)
        out.requests.push_back(
            {r.id, r.prompt_len, r.answer_len, r.arrival_s, r.first_token_s, r.finished_s, {}});
    double clock = 0;  // the end of the step before
    for (const RecordedStep& step : steps) {
        if (step.end < 0) throw std::logic_error("timeline: a step no event followed");
        double start = step.end - step.seconds;
        // end - seconds may miss the step before's end in the last bit.
        if (std::fabs(start - clock) <= 1e-9 * std::max(1.0, step.end)) start = clock;
        for (const auto& [id, phase] : step.rows) {
            RequestTimeline& t = out.requests[std::size_t(id)];
            const double since = t.stretches.empty() ? t.arrival_s : t.stretches.back().end;
            if (start > since) {  // a gap: what was it doing meanwhile?
                // Sent back to the queue during it: stalled in the batch
                // until then (if at all), waiting from then on.
                const auto back =
                    std::find_if(sent_back.begin(), sent_back.end(), [&](const auto& p) {
                        return p.first == id && p.second >= since && p.second <= start;
                    });
                if (back != sent_back.end()) {
                    if (back->second > since)
                        t.stretches.push_back({Phase::stalled, since, back->second});
                    t.stretches.push_back({Phase::waiting, back->second, start});
                } else {
                    const Phase gap = t.stretches.empty() ? Phase::waiting
                                      : t.finished_s >= 0 && t.finished_s <= since
                                          ? Phase::padding  // answered: its row stays (static)
                                          : Phase::stalled;
                    t.stretches.push_back({gap, since, start});
                }
            }
            if (!t.stretches.empty() && t.stretches.back().phase == phase &&
                t.stretches.back().end == start)
                t.stretches.back().end = step.end;
            else
                t.stretches.push_back({phase, start, step.end});
        }
        clock = step.end;
    }
    return out;
}

// The chapter's picture: the first requests of `queue`, static then
// continuous batching with the cache, priced by the analytic step cost so
// that it is the same on every machine.
inline std::vector<PolicyTimeline> batching_timelines(std::span<const Request> queue,
                                                      const MemoryBudget& budget,
                                                      const Config& config) {
    const std::span<const Request> few =
        queue.first(std::min<std::size_t>(queue.size(), kTimelineRequests));
    SimulatedExecutor priced(analytic_step_cost(config));
    const std::vector<Policy> policies = book_policies(kTimelineBatch);
    return {record_timeline(few, policies[kStaticCache], budget, priced),
            record_timeline(few, policies[kContinuousCache], budget, priced)};
}

}  // namespace kv::ch05
