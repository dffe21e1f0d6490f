// Chapter 05's report: the experiment's results as tables, plots and JSON,
// each fact built once and printed as text or JSON from the same values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/kit/svg_parts.h"
#include "../../common/kit/svg_plot.h"
#include "../../common/kit/svg_timeline.h"
#include "../../common/lab/queue_flags.h"
#include "../../common/serving/memory_budget.h"
#include "../../common/serving/metrics.h"
#include "../../common/serving/scheduler.h"
#include "../../common/serving/workload.h"
#include "experiment.h"

namespace kv::ch05 {

// "452 s", "23.9 s", "1.25 s": three significant figures or whole seconds.
inline std::string seconds_text(double s) {
    return fixed(s, s >= 100 ? 0 : s >= 10 ? 1 : 2) + " s";
}

inline std::string describe_budget(const MemoryBudget& b, const Concurrency& fit, int batch) {
    const std::string budget =
        "memory: KV budget " + format_bytes(b.bytes) + " = " + with_commas(b.tokens) +
        " positions of " + format_bytes(b.bytes_per_token) + " (chapter 03's bytes per token); ";
    if (b.reserve == Reservation::whole_context)
        return budget + "charging each request its longest context (prompt + cap - 1), " +
               std::to_string(fit.fewest) + " fit at once if all are longest, " +
               fixed(fit.average, 1) + " on average; batch size " + std::to_string(batch);
    return budget + "charging only what each cache holds, " + fixed(fit.average_held, 1) +
           " average requests fit at their last step, more before it (the newest is preempted "
           "when the next step would not fit); batch size " +
           std::to_string(batch);
}

inline Table policy_table(const std::vector<Policy>& policies, const std::vector<Summary>& rows) {
    Table t({"policy", "ttft p50", "ttft p90", "ttft p99", "ttft max", "ttft mean", "e2e p50",
             "e2e p99", "ms/token", "tbt p50", "tbt p90", "tbt p99", "tbt max", "tokens/s", "total",
             "batch"});
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const Summary& m = rows[i];
        t.add_row({policies[i].name, Cell(m.ttft_median, 2), Cell(m.ttft_p90, 2),
                   Cell(m.ttft_p99, 2), Cell(m.ttft_max, 2), Cell(m.ttft_mean, 2),
                   Cell(m.latency_median, 2), Cell(m.latency_p99, 2),
                   Cell(m.time_per_token * 1e3, 2), Cell(m.tbt_median * 1e3, 2),
                   Cell(m.tbt_p90 * 1e3, 2), Cell(m.tbt_p99 * 1e3, 2), Cell(m.tbt_max * 1e3, 2),
                   Cell(m.tokens_per_second, 0), Cell(m.total_s, 1), Cell(m.mean_batch, 1)});
    }
    return t;
}

// ------------------------------------------------------------- the plots

// The distribution of time to first token, one line per run, at most 400
// points each, on a log2 axis (the runs may differ forty-fold) that starts
// at the shortest wait but never below a millionth of the longest.
inline SvgPlot ttft_cdf_plot(const std::string& title, const std::vector<std::string>& names,
                             const std::vector<std::vector<double>>& sorted_ttfts) {
    SvgPlot plot(title, "time to first token (s, log scale)", "fraction of requests");
    plot.set_log2_x(true);
    plot.set_steps(true);
    double longest = 1e-9, shortest = 1e300;
    for (const std::vector<double>& t : sorted_ttfts)
        for (double v : t)
            if (v > 0) longest = std::max(longest, v), shortest = std::min(shortest, v);
    const double floor = std::max(shortest, longest / (1 << 20));
    for (std::size_t p = 0; p < names.size(); ++p) {
        const std::vector<double>& t = sorted_ttfts[p];
        std::vector<double> x, y;
        const std::size_t points = std::min<std::size_t>(t.size(), 400);
        for (std::size_t k = 0; k < points; ++k) {
            const std::size_t i = points == 1 ? 0 : k * (t.size() - 1) / (points - 1);
            x.push_back(std::max(t[i], floor));
            y.push_back(double(i + 1) / double(t.size()));
        }
        plot.add_series(names[p], x, y);
    }
    return plot;
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

// Where the plots went.
struct Plots {
    std::string ttft_cdf;  // every policy's distribution of time to first token
    std::string timeline;  // the first requests, static against continuous batching
};

inline Plots write_plots(const Results& run, const std::string& dir) {
    Plots plots;
    std::vector<std::string> names;
    for (const Policy& p : run.policies) names.push_back(p.name);
    plots.ttft_cdf = ttft_cdf_plot("Time to first token: who waits how long", names, run.ttfts)
                         .write(dir + "/05_ttft_cdf.svg");
    const std::size_t n = run.timeline.empty() ? 0 : run.timeline[0].requests.size();
    const std::string queue_words =
        "The first " + std::to_string(n) + " requests of this run's queue (seed " +
        std::to_string(run.work.seed) + "), at most " + std::to_string(kTimelineBatch) +
        " at once, " +
        (run.budget.reserve == Reservation::whole_context ? "each charged its longest context"
                                                          : "each charged what its cache holds") +
        " in a KV budget of " + format_bytes(run.budget.bytes) + "; each prefill runs alone.";
    plots.timeline =
        batching_timeline_plot(run.timeline, queue_words).write(dir + "/05_batching_timeline.svg");
    return plots;
}

// ---------------------------------------------------------- one run

// A step cost that fits its own steps this badly deserves a second look.
inline constexpr double kFitErrorWarning = 0.25;
inline std::string fit_warning(const Results& run) {
    if (!(run.pricing.cost.fit_error > kFitErrorWarning)) return "";
    return "warning: the step cost's largest fit error is " +
           fixed(100 * run.pricing.cost.fit_error, 1) + "%, above " +
           fixed(100 * kFitErrorWarning, 0) +
           "%: its five prices miss some of the steps it timed (if the machine was busy, "
           "measure again with --calibrate); make validate shows the error on whole queues";
}

inline std::string headline(const Results& run) {
    return "median time to first token, " + with_commas(std::uint64_t(run.work.requests)) +
           " requests: " + seconds_text(run.summaries[kSerialNoCache].ttft_median) +
           " without the cache -> " + seconds_text(run.summaries[kSerialCache].ttft_median) +
           " with it -> " + seconds_text(run.summaries[kContinuousCache].ttft_median) +
           " with continuous batching";
}

// How much padding static batching computed, and how often requests were
// sent back (--reserve held), or nothing.
inline std::string preemption_line(const Results& run) {
    auto line = [&](const char* opening, auto share) {
        std::string out;
        for (std::size_t i = 0; i < run.policies.size(); ++i)
            if (const std::string said = share(run.summaries[i]); !said.empty())
                out += (out.empty() ? opening : "; ") + run.policies[i].name + ": " + said;
        return out.empty() ? out : out + "\n";
    };
    return line("padding (answered requests' rows still computed): ",
                [](const Summary& m) {
                    return m.padding_share > 0 ? fixed(100 * m.padding_share, 1) + "% of rows" : "";
                }) +
           line("sent back to the queue when the caches outgrew the budget: ",
                [](const Summary& m) {
                    return m.preemptions > 0 ? with_commas(std::uint64_t(m.preemptions)) + " times"
                                             : "";
                });
}

inline Json to_json(const Results& run, const Plots& plots) {
    Json json;
    json.add("model", run.config.describe())
        .add("requests", run.work.requests)
        .add("rate", run.work.rate)
        .add("batch", run.batch)
        .add("kv_budget_bytes", run.budget.bytes)
        .add("kv_bytes_per_token", run.budget.bytes_per_token)
        .add("kv_budget_tokens", run.budget.tokens)
        .add("reserve", run.budget.reserve == Reservation::whole_context ? "full" : "held")
        .add("fewest_requests_that_fit", run.fit.fewest)
        .add("average_requests_that_fit", run.fit.average)
        .add("step_cost", step_cost_json(run.pricing))
        .add("policies", policy_table(run.policies, run.summaries))
        .add("simulation_seconds", run.simulation_seconds)
        .add("median_ttft_no_cache_s", run.summaries[kSerialNoCache].ttft_median)
        .add("median_ttft_cache_s", run.summaries[kSerialCache].ttft_median)
        .add("median_ttft_static_s", run.summaries[kStaticCache].ttft_median)
        .add("median_ttft_continuous_s", run.summaries[kContinuousCache].ttft_median)
        .add("ttft_cdf_plot", plots.ttft_cdf)
        .add("timeline_plot", plots.timeline);
    Json preempted;  // with --reserve held: times requests were sent back to the queue
    Json padding;    // static batching: share of decode rows computed for nothing
    for (std::size_t i = 0; i < run.policies.size(); ++i) {
        preempted.add(run.policies[i].name, run.summaries[i].preemptions);
        padding.add(run.policies[i].name, run.summaries[i].padding_share);
    }
    json.add("preemptions", preempted).add("padding_share", padding);
    Table warned({"warning"});
    if (const std::string w = fit_warning(run); !w.empty()) warned.add_row({w});
    json.add("warnings", warned);
    return json.add("headline", headline(run));
}

inline void print_report(std::ostream& out, const Results& run, const Plots& plots) {
    const std::string count = with_commas(std::uint64_t(run.work.requests));
    out << "Chapter 05: a queue of " << count << " requests\n\n"
        << "model: " << run.config.describe() << "\n"
        << describe_workload(run.work, run.queue) << "\n"
        << describe_budget(run.budget, run.fit, run.batch) << "\n"
        << step_cost_text(run.pricing)
        << "  rows: tokens through the weights; sequences: rows of logits; pairs: (token, "
           "position) pairs attention visits;\n  positions: cached keys and values each "
           "sequence reads\n\n";
    policy_table(run.policies, run.summaries).print(out);
    out << "times in seconds; ttft: time to first token; e2e: arrival to last token; "
           "batch: mean requests per decode step\n"
        << preemption_line(run) << "simulated " << run.policies.size() << " policies x " << count
        << " requests in " << format_duration(run.simulation_seconds) << "\n"
        << "plot: " << visible(plots.ttft_cdf) << "\n"
        << "plot: " << visible(plots.timeline) << "\n";
    if (const std::string w = fit_warning(run); !w.empty()) out << "\n" << w << "\n";
    out << "\n" << headline(run) << "\n";
}

// The plots, then the JSON or the text.
inline int report(const Results& run, const OutputOptions& options) {
    const Plots plots = write_plots(run, options.plot_dir);
    if (!emit(options, to_json(run, plots))) print_report(std::cout, run, plots);
    return 0;
}

}  // namespace kv::ch05
