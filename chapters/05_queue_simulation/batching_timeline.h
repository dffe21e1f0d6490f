// Chapter 05's picture: the queue's first requests, static against
// continuous batching, step by step (plots/05_batching_timeline.svg). A
// recording executor writes down which rows each step ran; the schedule's
// events say when each step ended and who was sent back; the stretches
// between are what each request was doing.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../../common/core/config.h"
#include "../../common/kit/report.h"     // format_bytes
#include "../../common/kit/svg_parts.h"  // svg_number
#include "../../common/kit/svg_timeline.h"
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

// ------------------------------------------------------------- the drawing

// The picture's caption: which requests, how many at once, charged how.
inline std::string timeline_words(const std::vector<PolicyTimeline>& policies, std::uint64_t seed,
                                  const MemoryBudget& budget) {
    const std::size_t n = policies.empty() ? 0 : policies[0].requests.size();
    return "The first " + std::to_string(n) + " requests of this run's queue (seed " +
           std::to_string(seed) + "), at most " + std::to_string(kTimelineBatch) + " at once, " +
           (budget.reserve == Reservation::whole_context ? "each charged its longest context"
                                                         : "each charged what its cache holds") +
           " in a KV budget of " + format_bytes(budget.bytes) + "; each prefill runs alone.";
}

// "12.3 ms"
inline std::string timeline_ms(double seconds) {
    return svg_number(seconds * 1e3) + " ms";
}

inline const char* phase_name(Phase p) {  // indexed by Phase
    const char* const names[] = {"waiting for its prefill", "prefill", "decode steps",
                                 "stalled: another request's prefill runs alone",
                                 "answered, still in the batch (padding)"};
    return names[int(p)];
}

// The batching timeline: one panel per policy, one row per request, on one
// time axis; a row ends with the request's time to first token.
inline SvgTimeline batching_timeline_plot(const std::vector<PolicyTimeline>& policies,
                                          const std::string& queue_words) {
    SvgTimeline plot("Static against continuous batching: the same " +
                         std::to_string(policies.empty() ? 0 : policies[0].requests.size()) +
                         " requests, step by step",
                     "time since the first arrival (ms)");
    const char* colors[] = {"#d9d9d9", "#ff7f0e", "#1f77b4", "#aec7e8", "#c5b0d5"};  // by Phase
    for (int phase = 0; phase < 5; ++phase) plot.add_kind(phase_name(Phase(phase)), colors[phase]);
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
        "Priced by the analytic step cost (operation counts at 40 GFLOP/s and 40 GB/s): the "
        "same picture on every machine.");
    return plot;
}

}  // namespace kv::ch05
