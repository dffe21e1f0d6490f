// Chapter 05's report: the experiment's results as tables, plots and JSON.
// Each fact is built once (a table, a line, the headline) and goes out as
// text or as JSON from the same values.
#pragma once

#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/kit/svg_plot.h"
#include "../../common/lab/calibration.h"
#include "../../common/lab/rate_sweep.h"
#include "../../common/lab/validation.h"
#include "../../common/serving/cost_model.h"
#include "../../common/serving/memory_budget.h"
#include "../../common/serving/metrics.h"
#include "../../common/serving/scheduler.h"
#include "../../common/serving/workload.h"
#include "experiment.h"
#include "timeline_plot.h"

namespace kv::ch05 {

// "452 s", "23.9 s", "1.25 s": three significant figures or whole seconds.
inline std::string seconds_text(double s) {
    return fixed(s, s >= 100 ? 0 : s >= 10 ? 1 : 2) + " s";
}

// "+4.2%" for an error with its sign; "4.2%" without.
inline std::string percent(double fraction, bool with_sign = true) {
    const double p = 100 * fraction;
    std::string text = with_sign && !std::signbit(p) ? "+" : "";
    text += fixed(p, 1);
    text += '%';
    return text;
}

inline std::string describe_workload(const WorkloadOptions& w, std::span<const Request> requests) {
    double prompt = 0, answer = 0;
    int longest = 0;
    for (const Request& r : requests) {
        prompt += r.prompt_len;
        answer += r.answer_len;
        longest = std::max(longest, r.answer_len);
    }
    const double n = double(requests.size());
    return "workload: " + with_commas(requests.size()) + " requests " +
           (w.rate > 0 ? "arriving at " + json_number(w.rate) + " per second (Poisson)"
                       : std::string("all at time 0")) +
           " (seed " + std::to_string(w.seed) + "); prompts uniform in " +
           std::to_string(w.prompt_min) + ".." + std::to_string(w.prompt_max) + " tokens (mean " +
           fixed(prompt / n, 1) + "); answers " + w.answer_dist + " around " +
           std::to_string(w.answer_len) + ", capped at " + std::to_string(w.answer_max) +
           " (mean " + fixed(answer / n, 1) + ", longest " + std::to_string(longest) + ")";
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

inline void print_cost_model(std::ostream& out, const CostModel& m, const Calibration* cal) {
    auto ms = [](double s) {  // attention's coefficients are fractions of a microsecond
        return s > 0 && s < 1e-6 ? fixed(s * 1e9, 1) + " ns" : format_duration(s);
    };
    out << "cost model: " << m.source;
    if (cal) {
        const CalibrationPoint* worst = nullptr;
        for (const auto* points : {&cal->passes, &cal->steps})
            for (const CalibrationPoint& p : *points)
                if (!worst || std::fabs(p.fitted / p.seconds - 1) >
                                  std::fabs(worst->fitted / worst->seconds - 1))
                    worst = &p;
        out << " in " << format_duration(cal->seconds) << " (its probes, and the real queues run "
            << kRealRuns << " times between their rounds), "
            << cal->passes.size() + cal->steps.size() << " points; largest fit error "
            << percent(m.fit_error, false) << " (" << worst->what << ": measured "
            << ms(worst->seconds) << ", model " << ms(worst->fitted) << ")";
    }
    if (cal && !cal->queue.empty()) {
        out << "\n  a short real queue (" << kLevelingRequests
            << " requests, another sample, each step the fastest of " << kRealRuns
            << " runs) ran each kind of step with the cache at:";
        for (std::size_t i = 0; i < cal->queue.size(); ++i) {
            const QueueLevel& q = cal->queue[i];
            out << (i ? "; " : " ") << q.what << " x"
                << fixed(q.priced > 0 ? q.measured / q.priced : 1.0, 3) << " (" << q.steps << ")";
        }
    }
    out << "\n  pass over whole sequences (prefill; every step without the cache):\n"
        << "      " << ms(m.pass_fixed) << " + " << ms(m.pass_per_token) << " x rows + "
        << ms(m.pass_per_token_sq) << " x sum(length^2)\n"
        << "  decode step with the cache, B sequences:\n"
        << "      " << ms(m.step_fixed) << " + " << ms(m.step_per_sequence) << " x B + "
        << ms(m.step_per_context) << " x sum(context)\n";
}

inline Json cost_model_json(const CostModel& m, const Calibration* cal) {
    Json j;
    j.add("source", m.source);
    for (const CostNumber& n : kCostNumbers) j.add(n.json_key, m.*n.value);
    if (cal) {
        Table points({"point", "x1", "x2", "measured s", "model s"});
        for (const auto* list : {&cal->passes, &cal->steps})
            for (const CalibrationPoint& p : *list)
                points.add_row(
                    {p.what, Cell(p.x1, 0), Cell(p.x2, 0), Cell(p.seconds, 6), Cell(p.fitted, 6)});
        j.add("calibration_seconds", cal->seconds).add("calibration_points", points);
    }
    return j;
}

// The distribution of time to first token, one line per run, on a log2
// axis: the runs may differ by a factor of forty. At most 400 points each.
// The axis starts at the shortest wait (with arrivals over time, a policy
// that keeps up waits only milliseconds), but never below a millionth of
// the longest: waits shorter than that are drawn at the left edge.
// Chapter 07 draws its memory managers with it too.
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

inline std::string write_ttft_cdf(const std::string& dir, const std::vector<Policy>& policies,
                                  const std::vector<std::vector<double>>& sorted_ttfts) {
    std::vector<std::string> names;
    for (const Policy& p : policies) names.push_back(p.name);
    return ttft_cdf_plot("Time to first token: who waits how long", names, sorted_ttfts)
        .write(dir + "/05_ttft_cdf.svg");
}

inline Table sweep_table(const RateSweep& sweep) {
    std::vector<std::string> columns = {"requests/s"};
    for (const std::string& p : sweep.policies) columns.push_back(p);
    columns.push_back("serial mean wait");
    columns.push_back("M/G/1 mean wait");
    Table t(columns);
    for (std::size_t r = 0; r < sweep.rates.size(); ++r) {
        std::vector<Cell> row = {Cell(sweep.rates[r], 1)};
        for (const auto& ttft : sweep.median_ttft) row.push_back(Cell(ttft[r], 2));
        row.push_back(Cell(sweep.serial_mean_wait[r], 2));
        row.push_back(std::isfinite(sweep.mg1_wait[r]) ? Cell(sweep.mg1_wait[r], 2)
                                                       : Cell("unstable"));
        t.add_row(row);
    }
    return t;
}

inline std::string write_rate_plot(const std::string& dir, const RateSweep& sweep) {
    SvgPlot plot("Median time to first token against arrival rate", "arrival rate (requests/s)",
                 "median time to first token (s)");
    for (std::size_t p = 0; p < sweep.policies.size(); ++p)
        plot.add_series(sweep.policies[p], sweep.rates, sweep.median_ttft[p]);
    return plot.write(dir + "/05_ttft_vs_rate.svg");
}

inline Table validation_table(const std::vector<ValidationRow>& rows) {
    Table t({"policy", "requests", "batch", "real p50", "sim p50", "error p50", "real total",
             "sim total", "error total", "same order", "runs spread"});
    for (const ValidationRow& r : rows)
        t.add_row({r.policy, Cell(r.real_requests), Cell(r.batch), Cell(r.real.ttft_median, 3),
                   Cell(r.simulated.ttft_median, 3),
                   percent(relative_error(r.simulated.ttft_median, r.real.ttft_median)),
                   Cell(r.real.total_s, 3), Cell(r.simulated.total_s, 3),
                   percent(relative_error(r.simulated.total_s, r.real.total_s)),
                   r.same_order ? "yes" : "no", percent(r.run_spread, false)});
    return t;
}

// The same rows as numbers, for a program that reads the JSON: seconds,
// and errors and spreads as fractions (0.05 is 5 %).
inline std::vector<Json> validation_json(const std::vector<ValidationRow>& rows) {
    std::vector<Json> out;
    for (const ValidationRow& r : rows)
        out.push_back(Json()
                          .add("policy", r.policy)
                          .add("requests", r.real_requests)
                          .add("batch", r.batch)
                          .add("real_ttft_median_s", r.real.ttft_median)
                          .add("simulated_ttft_median_s", r.simulated.ttft_median)
                          .add("error_ttft_median",
                               relative_error(r.simulated.ttft_median, r.real.ttft_median))
                          .add("real_total_s", r.real.total_s)
                          .add("simulated_total_s", r.simulated.total_s)
                          .add("error_total", relative_error(r.simulated.total_s, r.real.total_s))
                          .add("same_order", r.same_order)
                          .add("run_spread", r.run_spread));
    return out;
}

// ---------------------------------------------------------- one run

// What a reader should not trust without a second look: a cost model that
// fits its own points badly, a simulator that misses the real engine.
inline constexpr double kFitErrorWarning = 0.25, kValidationErrorWarning = 0.05;
inline std::vector<std::string> warnings(const Results& run) {
    std::vector<std::string> w;
    if (run.cost.fit_error > kFitErrorWarning)
        w.push_back("warning: the cost model's largest fit error is " +
                    percent(run.cost.fit_error, false) + ", above " +
                    percent(kFitErrorWarning, false) +
                    ": its formulas miss some of the shapes it timed; check the validation, or "
                    "calibrate again on a quieter machine");
    for (const ValidationRow& r : run.validation)
        for (const auto& [what, sim, real] :
             {std::tuple{"median time to first token", r.simulated.ttft_median, r.real.ttft_median},
              std::tuple{"total time", r.simulated.total_s, r.real.total_s}})
            if (std::fabs(relative_error(sim, real)) > kValidationErrorWarning)
                w.push_back(
                    "warning: " + r.policy + ": the simulated " + what + " is " +
                    percent(relative_error(sim, real)) + " off the real engine's (more than " +
                    percent(kValidationErrorWarning, false) + "; its slowest real run took " +
                    percent(r.run_spread, false) + " longer than its fastest)");
    return w;
}

// The first requests of the queue under static and continuous batching
// (Results::timeline), one row each, on one time axis.
inline std::string write_batching_timeline(const std::string& dir, const Results& run) {
    const std::size_t n = run.timeline.empty() ? 0 : run.timeline[0].requests.size();
    const std::string charged = run.budget.reserve == Reservation::whole_context
                                    ? "each charged its longest context"
                                    : "each charged what its cache holds";
    const std::string queue_words =
        "The first " + std::to_string(n) + " requests of this run's queue (seed " +
        std::to_string(run.work.seed) + "), at most " + std::to_string(kTimelineBatch) +
        " at once, " + charged + " in a KV budget of " + format_bytes(run.budget.bytes) +
        "; each prefill runs alone.";
    return batching_timeline_plot(run.timeline, queue_words)
        .write(dir + "/05_batching_timeline.svg");
}

// Where the plots went.
struct Plots {
    std::string ttft_cdf;  // every policy's distribution of time to first token
    std::string timeline;  // the first requests, static against continuous batching
    std::string rate;      // with a rate: median time to first token against the rate
};

inline Plots write_plots(const Results& run, const std::string& dir) {
    Plots plots;
    plots.ttft_cdf = write_ttft_cdf(dir, run.policies, run.ttfts);
    plots.timeline = write_batching_timeline(dir, run);
    if (run.sweep) plots.rate = write_rate_plot(dir, *run.sweep);
    return plots;
}

inline std::string headline(const Results& run) {
    return "median time to first token, " + with_commas(std::uint64_t(run.work.requests)) +
           " requests: " + seconds_text(run.summaries[kSerialNoCache].ttft_median) +
           " without the cache -> " + seconds_text(run.summaries[kSerialCache].ttft_median) +
           " with it -> " + seconds_text(run.summaries[kContinuousCache].ttft_median) +
           " with continuous batching";
}

// Static batching computes answered requests' rows until the batch ends;
// with --reserve held, caches can outgrow the budget and requests are sent
// back to the queue. Say how much of each, or nothing.
inline std::string preemption_line(const Results& run) {
    std::string pad;
    for (std::size_t i = 0; i < run.policies.size(); ++i)
        if (run.summaries[i].padding_share > 0)
            pad += (pad.empty() ? "padding (answered requests' rows still computed): " : "; ") +
                   run.policies[i].name + ": " + percent(run.summaries[i].padding_share, false) +
                   " of rows";
    std::string line;
    for (std::size_t i = 0; i < run.policies.size(); ++i)
        if (run.summaries[i].preemptions > 0)
            line += (line.empty() ? "sent back to the queue when the caches outgrew the budget: "
                                  : "; ") +
                    run.policies[i].name + ": " +
                    with_commas(std::uint64_t(run.summaries[i].preemptions)) + " times";
    return (pad.empty() ? pad : pad + "\n") + (line.empty() ? line : line + "\n");
}

inline Json to_json(const Results& run, const Plots& plots) {
    Json json;
    json.add("chapter", "05_queue_simulation")
        .add("model", run.config.describe())
        .add("requests", run.work.requests)
        .add("rate", run.work.rate)
        .add("batch", run.batch)
        .add("kv_budget_bytes", run.budget.bytes)
        .add("kv_bytes_per_token", run.budget.bytes_per_token)
        .add("kv_budget_tokens", run.budget.tokens)
        .add("reserve", run.budget.reserve == Reservation::whole_context ? "full" : "held")
        .add("fewest_requests_that_fit", run.fit.fewest)
        .add("average_requests_that_fit", run.fit.average)
        .add("cost_model", cost_model_json(run.cost, run.calibration ? &*run.calibration : nullptr))
        .add("policies", policy_table(run.policies, run.summaries))
        .add("simulation_seconds", run.simulation_seconds)
        .add("median_ttft_no_cache_s", run.summaries[kSerialNoCache].ttft_median)
        .add("median_ttft_cache_s", run.summaries[kSerialCache].ttft_median)
        .add("median_ttft_static_s", run.summaries[kStaticCache].ttft_median)
        .add("median_ttft_continuous_s", run.summaries[kContinuousCache].ttft_median)
        .add("ttft_cdf_plot", plots.ttft_cdf)
        .add("timeline_plot", plots.timeline);
    Json preempted;  // with --reserve held: times requests were sent back to the queue
    for (std::size_t i = 0; i < run.policies.size(); ++i)
        preempted.add(run.policies[i].name, run.summaries[i].preemptions);
    json.add("preemptions", preempted);
    Json padding;  // static batching: share of decode rows computed for nothing
    for (std::size_t i = 0; i < run.policies.size(); ++i)
        padding.add(run.policies[i].name, run.summaries[i].padding_share);
    json.add("padding_share", padding);
    if (run.sweep)
        json.add("rate_sweep", sweep_table(*run.sweep))
            .add("serial_service_mean_s", run.sweep->service.mean)
            .add("serial_service_mean_square_s2", run.sweep->service.mean_square)
            .add("rate_plot", plots.rate);
    if (!run.validation.empty())
        json.add("validation_batch", run.validation_batch)
            .add("validation", validation_table(run.validation))
            .add("validation_rows", validation_json(run.validation));
    if (!run.saved_workload.empty()) json.add("saved_workload", run.saved_workload);
    Table warned({"warning"});
    for (const std::string& w : warnings(run)) warned.add_row({w});
    json.add("warnings", warned);
    return json.add("headline", headline(run));
}

inline void print_report(std::ostream& out, const Results& run, const Plots& plots) {
    const std::string count = with_commas(std::uint64_t(run.work.requests));
    out << "Chapter 05: a queue of " << count << " requests\n\n"
        << "model: " << run.config.describe() << "\n"
        << describe_workload(run.work, run.queue) << "\n"
        << describe_budget(run.budget, run.fit, run.batch) << "\n";
    print_cost_model(out, run.cost, run.calibration ? &*run.calibration : nullptr);
    out << "\n";
    policy_table(run.policies, run.summaries).print(out);
    out << "times in seconds; ttft: time to first token; e2e: arrival to last token; "
           "batch: mean requests per decode step\n"
        << preemption_line(run) << "simulated " << run.policies.size() << " policies x " << count
        << " requests in " << format_duration(run.simulation_seconds) << "\n"
        << "plot: " << plots.ttft_cdf << "\n"
        << "plot: " << plots.timeline << "\n";
    if (run.sweep) {
        out << "\nmedian time to first token (s) against arrival rate; capacity (requests/s with "
               "everyone queued at once):";
        for (std::size_t p = 0; p < run.sweep->policies.size(); ++p)
            out << (p ? "; " : " ") << run.sweep->policies[p] << ": "
                << Cell(run.sweep->capacity[p], 1).text;
        out << "\n";
        sweep_table(*run.sweep).print(out);
        out << "serial mean wait: arrival to the start of service, simulated; M/G/1: "
               "Pollaczek-Khinchine, lambda E[S^2] / (2 (1 - rho)), with E[S] = "
            << format_duration(run.sweep->service.mean) << " and E[S^2] = " <<
            [&] {
                char buf[32];
                std::snprintf(buf, sizeof buf, "%.4g", run.sweep->service.mean_square);
                return std::string(buf);
            }()
            << " s^2 for one request served "
            << "alone with the cache\n"
            << "plot: " << plots.rate << "\n";
    }
    if (!run.validation.empty()) {
        out << "\nvalidation: the first requests of the queue on the real engine against the "
               "simulator, both timed in the thread's CPU time, each real step the fastest of "
            << kRealRuns << " runs; seconds\n";
        validation_table(run.validation).print(out);
        out << "runs spread: how much longer the slowest real run of a queue took than its "
               "fastest, how much\nthe machine's speed changed while they ran; the real "
               "columns take each step at its fastest run\n";
    }
    if (!run.saved_workload.empty())
        out << "\nworkload saved for vllm bench serve: " << run.saved_workload << "\n";
    const std::vector<std::string> warned = warnings(run);
    if (!warned.empty()) out << "\n";
    for (const std::string& w : warned) out << w << "\n";
    out << "\n" << headline(run) << "\n";
}

// The plots, then the JSON (with --json) or the text. Returns the exit status.
inline int report(const Results& run, const OutputOptions& options) {
    const Plots plots = write_plots(run, options.plot_dir);
    if (!emit(options, to_json(run, plots))) print_report(std::cout, run, plots);
    return 0;
}

}  // namespace kv::ch05
