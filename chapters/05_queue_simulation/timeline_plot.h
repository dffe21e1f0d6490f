// Chapter 05's timeline of a small schedule (plots/05_batching_timeline.svg):
// the first requests of the queue, few enough to follow one by one, run
// through the real scheduler under static and under continuous batching,
// priced by the analytic cost model so that the picture is the same on
// every machine. Each request is a row of what it was doing at each moment:
// waiting for its prefill, its prefill, its decode steps, stalled in the
// batch while another request's prefill runs alone (PrefillFirst), and,
// under static batching, answered but still in the batch as padding.
//
// Nothing here decides anything: record_timeline() runs run_schedule() as
// the chapter does and writes down what happened. The executor is wrapped
// to see which rows each step ran (a row's status says prefill, decode or
// padding) and how long it took; the scheduler's events say when each step
// ended and who was sent back to the queue. report.h writes the picture.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../../common/core/config.h"
#include "../../common/kit/svg_parts.h"
#include "../../common/kit/svg_timeline.h"
#include "../../common/serving/cost_model.h"
#include "../../common/serving/memory_budget.h"
#include "../../common/serving/scheduler.h"
#include "../../common/serving/workload.h"

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

// ------------------------------------------------------------ recording

// One engine step as the executor saw it: its time and its rows.
struct RecordedStep {
    double seconds = 0;
    double end = -1;                               // the clock after it (from the events)
    std::vector<std::pair<int, Phase>> rows = {};  // (request, what its row did)
};

// Runs each step on `inner` and writes it down.
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

// `queue` under `policy`, each step priced by `cost`, as stretches.
inline PolicyTimeline record_timeline(std::span<const Request> queue, const Policy& policy,
                                      const MemoryBudget& budget, const CostModel& cost) {
    std::vector<RecordedStep> steps;
    std::vector<std::pair<int, double>> sent_back;  // (request, when) from preempt events
    SimulatedExecutor priced(cost);
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

// The chapter's picture: the first kTimelineRequests requests of `queue`,
// static then continuous batching with the cache at kTimelineBatch, memory
// charged as `budget` says, priced by the analytic cost model of `config`.
inline std::vector<PolicyTimeline> batching_timelines(std::span<const Request> queue,
                                                      const MemoryBudget& budget,
                                                      const Config& config) {
    const std::span<const Request> few =
        queue.first(std::min<std::size_t>(queue.size(), kTimelineRequests));
    const CostModel cost = analytic_cost_model(config);
    const std::vector<Policy> policies = book_policies(kTimelineBatch);
    return {record_timeline(few, policies[kStaticCache], budget, cost),
            record_timeline(few, policies[kContinuousCache], budget, cost)};
}

// -------------------------------------------------------------- drawing

// "12.3 ms"
inline std::string timeline_ms(double seconds) {
    return svg_number(seconds * 1e3) + " ms";
}

inline const char* phase_name(Phase p) {
    switch (p) {
        case Phase::waiting:
            return "waiting for its prefill";
        case Phase::prefill:
            return "prefill";
        case Phase::decode:
            return "decode steps";
        case Phase::stalled:
            return "stalled: another request's prefill runs alone";
        case Phase::padding:
            return "answered, still in the batch (padding)";
    }
    return "";
}

// One panel per policy, one row per request, every panel on one time axis
// (milliseconds). A row ends with the request's time to first token.
inline SvgTimeline batching_timeline_plot(const std::vector<PolicyTimeline>& policies,
                                          const std::string& queue_words) {
    SvgTimeline plot("Static against continuous batching: the same " +
                         std::to_string(policies.empty() ? 0 : policies[0].requests.size()) +
                         " requests, step by step",
                     "time since the first arrival (ms)");
    const Phase phases[] = {Phase::waiting, Phase::prefill, Phase::decode, Phase::stalled,
                            Phase::padding};
    const char* colors[] = {"#d9d9d9", "#ff7f0e", "#1f77b4", "#aec7e8", "#c5b0d5"};
    for (std::size_t i = 0; i < std::size(phases); ++i)
        plot.add_kind(phase_name(phases[i]), colors[i]);
    for (const PolicyTimeline& p : policies) {
        plot.add_panel(p.policy.name + ", batch " + std::to_string(p.policy.batch) + ": " +
                       (p.policy.continuous ? "the waiting join as soon as a slot is free"
                                            : "requests join only an empty batch") +
                       "; all answered at " + timeline_ms(p.end_s));
        for (const RequestTimeline& r : p.requests) {
            TimelineRow row{"request " + std::to_string(r.id) + " (prompt " +
                                std::to_string(r.prompt_len) + ", answer " +
                                std::to_string(r.answer_len) + ")",
                            {},
                            "ttft " + timeline_ms(r.first_token_s - r.arrival_s)};
            for (const Stretch& s : r.stretches)
                row.bars.push_back({s.start * 1e3, s.end * 1e3, int(s.phase),
                                    "request " + std::to_string(r.id) + ": " + phase_name(s.phase) +
                                        ", " + timeline_ms(s.end - s.start) + " (" +
                                        timeline_ms(s.start) + " to " + timeline_ms(s.end) + ")"});
            plot.add_row(std::move(row));
        }
    }
    plot.add_caption(queue_words);
    plot.add_caption(
        "Priced by the analytic cost model (operation counts at 40 GFLOP/s and 40 GB/s): the "
        "same picture on every machine.");
    return plot;
}

}  // namespace kv::ch05
