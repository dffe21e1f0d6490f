// What chapter 05 prints: the queue's setup, the policies' table, the
// headline, and two plots: who waits how long, and the batching timeline.
#pragma once

#include <string>
#include <vector>

#include "../../common/kit/output.h"
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

inline std::string timeline_ms(double seconds) {  // "12.3 ms"
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
    SvgTimeline plot(
        concat("Static against continuous batching: the same ",
               policies.empty() ? 0 : policies[0].requests.size(), " requests, step by step"),
        "time since the first arrival (ms)");
    const char* colors[] = {"#d9d9d9", "#ff7f0e", "#1f77b4", "#aec7e8", "#c5b0d5"};  // by Phase
    for (int phase = 0; phase < 5; ++phase) plot.add_kind(phase_name(Phase(phase)), colors[phase]);
    for (const PolicyTimeline& p : policies) {
        plot.add_panel(concat(p.policy.name, ", batch ", p.policy.batch, ": ",
                              p.policy.continuous ? "the waiting join as soon as a slot is free"
                                                  : "requests join only an empty batch",
                              "; all answered at ", timeline_ms(p.end_s)));
        for (const RequestTimeline& r : p.requests) {
            const std::string name = concat("request ", r.id);
            TimelineRow row{concat(name, " (prompt ", r.prompt_len, ", answer ", r.answer_len, ")"),
                            {},
                            "ttft " + timeline_ms(r.first_token_s - r.arrival_s)};
            for (const Stretch& s : r.stretches)
                row.bars.push_back(
                    {s.start * 1e3, s.end * 1e3, int(s.phase),
                     concat(name, ": ", phase_name(s.phase), ", ", timeline_ms(s.end - s.start),
                            " (", timeline_ms(s.start), " to ", timeline_ms(s.end), ")")});
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

inline int report(const Results& run, const OutputOptions& out) {
    const std::string count = with_commas(run.work.requests);
    const MemoryBudget& b = run.budget;
    const bool whole = b.reserve == Reservation::whole_context;
    std::vector<std::string> names;
    Table table({"policy", "ttft p50", "ttft p90", "ttft p99", "ttft max", "e2e p50", "ms/token",
                 "tbt p50", "tbt p99", "tokens/s", "total", "batch"});
    std::string padding, preempted;  // "static, no cache: 72.1% of rows; ..."
    for (std::size_t i = 0; i < run.summaries.size(); ++i) {
        const Summary& m = run.summaries[i];
        const std::string& name = run.policies[i].name;
        names.push_back(name);
        table.add_row({name, Cell(m.ttft_median, 2), Cell(m.ttft_p90, 2), Cell(m.ttft_p99, 2),
                       Cell(m.ttft_max, 2), Cell(m.latency_median, 2),
                       Cell(m.time_per_token * 1e3, 2), Cell(m.tbt_median * 1e3, 2),
                       Cell(m.tbt_p99 * 1e3, 2), Cell(m.tokens_per_second, 0), Cell(m.total_s, 1),
                       Cell(m.mean_batch, 1)});
        if (m.padding_share > 0)
            padding += (padding.empty() ? "" : "; ") + name + ": " +
                       fixed(100 * m.padding_share, 1) + "% of rows";
        if (m.preemptions > 0)
            preempted += concat(preempted.empty() ? "" : "; ", name, ": ",
                                with_commas(m.preemptions), " times");
    }
    const std::size_t shown = std::min<std::size_t>(run.queue.size(), kTimelineRequests);
    const std::string timeline_words =
        concat("The first ", shown, " requests of this run's queue (seed ", run.work.seed,
               "), at most ", kTimelineBatch, " at once, ",
               whole ? "each charged its longest context" : "each charged what its cache holds",
               " in a KV budget of ", format_bytes(b.bytes), "; each prefill runs alone.");
    auto median = [&](int policy) { return run.summaries[std::size_t(policy)].ttft_median; };

    Findings f("Chapter 05: a queue of " + count + " requests");
    f.line("model", "model", run.config.describe())
        .line("workload", "workload", workload_cell(run.work, run.queue))
        .line("memory", "memory",
              concat("KV budget ", format_bytes(b.bytes), " = ", with_commas(b.tokens),
                     " positions of ", format_bytes(b.bytes_per_token),
                     " (chapter 03's bytes per token); ",
                     whole ? concat("charging each request its longest context (prompt + cap - "
                                    "1), ",
                                    run.fit.fewest, " fit at once if all are longest, ",
                                    fixed(run.fit.average, 1), " on average")
                           : concat("charging only what each cache holds, ",
                                    fixed(run.fit.average_held, 1),
                                    " average requests fit at their last step, more before it "
                                    "(the newest is preempted when the next step would not fit)"),
                     "; batch size ", run.batch))
        .line("step_cost", "step cost", step_cost_cell(run.pricing))
        .text(
            "  rows: tokens through the weights; sequences: rows of logits; pairs: (token, "
            "position) pairs attention visits;\n  positions: cached keys and values each "
            "sequence reads\n")
        .table("policies", "", table)
        .text(
            "times in seconds; ttft: time to first token; e2e: arrival to last token; "
            "batch: mean requests per decode step");
    if (!padding.empty())
        f.line("padding", "padding (answered requests' rows still computed)", padding);
    if (!preempted.empty())
        f.line("preemptions", "sent back to the queue when the caches outgrew the budget",
               preempted);
    f.line("ttft_cdf_plot", "plot",
           outside_text(distribution_plot("Time to first token: who waits how long",
                                          "time to first token (s, log scale)",
                                          "fraction of requests", names, run.ttfts)
                            .write(out.plot_dir + "/05_ttft_cdf.svg")))
        .line("timeline_plot", "plot",
              outside_text(batching_timeline_plot(run.timeline, timeline_words)
                               .write(out.plot_dir + "/05_batching_timeline.svg")));
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
