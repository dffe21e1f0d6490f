// What chapter 05 prints: the queue's setup, the policies' table, the two plots.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/kit/svg_parts.h"  // svg_number
#include "../../common/kit/svg_plot.h"
#include "../../common/kit/svg_timeline.h"
#include "../../common/lab/queue_flags.h"
#include "batching_timeline.h"
#include "experiment.h"

namespace kv::ch05 {

// "452 s", "23.9 s", "1.25 s": three significant figures or whole seconds.
inline std::string seconds_text(double s) {
    return fixed(s, s >= 100 ? 0 : s >= 10 ? 1 : 2) + " s";
}

inline std::string describe_budget(const MemoryBudget& b, const Concurrency& fit, int batch) {
    const std::string held =
        b.reserve == Reservation::whole_context
            ? "charging each request its longest context (prompt + cap - 1), " +
                  std::to_string(fit.fewest) + " fit at once if all are longest, " +
                  fixed(fit.average, 1) + " on average"
            : "charging only what each cache holds, " + fixed(fit.average_held, 1) +
                  " average requests fit at their last step, more before it (the newest is "
                  "preempted when the next step would not fit)";
    return "KV budget " + format_bytes(b.bytes) + " = " + with_commas(b.tokens) + " positions of " +
           format_bytes(b.bytes_per_token) + " (chapter 03's bytes per token); " + held +
           "; batch size " + std::to_string(batch);
}

inline Table policy_table(const Results& run) {
    Table t({"policy", "ttft p50", "ttft p90", "ttft p99", "ttft max", "e2e p50", "ms/token",
             "tbt p50", "tbt p99", "tokens/s", "total", "batch"});
    for (std::size_t i = 0; i < run.summaries.size(); ++i) {
        const Summary& m = run.summaries[i];
        t.add_row({run.policies[i].name, Cell(m.ttft_median, 2), Cell(m.ttft_p90, 2),
                   Cell(m.ttft_p99, 2), Cell(m.ttft_max, 2), Cell(m.latency_median, 2),
                   Cell(m.time_per_token * 1e3, 2), Cell(m.tbt_median * 1e3, 2),
                   Cell(m.tbt_p99 * 1e3, 2), Cell(m.tokens_per_second, 0), Cell(m.total_s, 1),
                   Cell(m.mean_batch, 1)});
    }
    return t;
}

// "static, no cache: 72.1% of rows; ...": the policies where `said` says something.
template <class Say>
std::string per_policy(const Results& run, Say said) {
    std::string out;
    for (std::size_t i = 0; i < run.policies.size(); ++i)
        if (const std::string s = said(run.summaries[i]); !s.empty())
            out += (out.empty() ? "" : "; ") + run.policies[i].name + ": " + s;
    return out;
}

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

// A step cost that fits its own steps this badly deserves a second look.
inline constexpr double kFitErrorWarning = 0.25;

// Writes the two plots, then the findings. Returns the exit status.
inline int report(const Results& run, const OutputOptions& out) {
    const std::string count = with_commas(std::uint64_t(run.work.requests));
    std::vector<std::string> names;
    for (const Policy& p : run.policies) names.push_back(p.name);
    const std::string cdf_path = distribution_plot("Time to first token: who waits how long",
                                                   "time to first token (s, log scale)",
                                                   "fraction of requests", names, run.ttfts)
                                     .write(out.plot_dir + "/05_ttft_cdf.svg");
    const std::string timeline_path =
        batching_timeline_plot(run.timeline,
                               timeline_words(run.timeline, run.work.seed, run.budget))
            .write(out.plot_dir + "/05_batching_timeline.svg");
    const std::string padding = per_policy(run, [](const Summary& m) {
        return m.padding_share > 0 ? fixed(100 * m.padding_share, 1) + "% of rows" : "";
    });
    const std::string preempted = per_policy(run, [](const Summary& m) {
        return m.preemptions > 0 ? with_commas(std::uint64_t(m.preemptions)) + " times" : "";
    });
    auto median = [&](int policy) { return run.summaries[std::size_t(policy)].ttft_median; };

    Findings f("Chapter 05: a queue of " + count + " requests");
    f.line("model", "model", run.config.describe())
        .line("workload", "workload", workload_cell(run.work, run.queue))
        .line("memory", "memory", describe_budget(run.budget, run.fit, run.batch))
        .line("step_cost", "step cost", step_cost_cell(run.pricing))
        .text(
            "  rows: tokens through the weights; sequences: rows of logits; pairs: (token, "
            "position) pairs attention visits;\n  positions: cached keys and values each "
            "sequence reads\n")
        .table("policies", "", policy_table(run))
        .text(
            "times in seconds; ttft: time to first token; e2e: arrival to last token; "
            "batch: mean requests per decode step");
    if (!padding.empty())
        f.line("padding", "padding (answered requests' rows still computed)", padding);
    if (!preempted.empty())
        f.line("preemptions", "sent back to the queue when the caches outgrew the budget",
               preempted);
    f.line("ttft_cdf_plot", "plot", outside_text(cdf_path))
        .line("timeline_plot", "plot", outside_text(timeline_path));
    if (run.pricing.cost.fit_error > kFitErrorWarning)
        f.text("").line(
            "warning", "warning",
            "the step cost's largest fit error is " + fixed(100 * run.pricing.cost.fit_error, 1) +
                "%, above " + fixed(100 * kFitErrorWarning, 0) +
                "%: its five prices miss some of the steps it timed (if the machine was busy, "
                "measure again with --calibrate); make validate shows the error on whole queues");
    f.data("median_ttft_no_cache_s", Cell(median(kSerialNoCache), 3))
        .data("median_ttft_cache_s", Cell(median(kSerialCache), 3))
        .data("median_ttft_continuous_s", Cell(median(kContinuousCache), 3))
        .headline("median time to first token, " + count +
                  " requests: " + seconds_text(median(kSerialNoCache)) + " without the cache -> " +
                  seconds_text(median(kSerialCache)) + " with it -> " +
                  seconds_text(median(kContinuousCache)) + " with continuous batching");
    emit(out, f);
    return 0;
}

}  // namespace kv::ch05
