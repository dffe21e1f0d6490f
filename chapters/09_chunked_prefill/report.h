// What chapter 09 prints: the step cost, each workload under each step
// rule (simulator and real engine side by side) with its time to first
// token and time between tokens, the simulator's error at the operating
// point, the trade-off plot and the headline; or all of it as one JSON
// object.
#pragma once

#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/kit/svg_plot.h"
#include "../05_queue_simulation/report.h"
#include "experiment.h"

namespace kv::ch09 {

inline Table queue_table(const Results& r, const std::string& workload) {
    Table t({"steps", "side", "requests", "ttft p50", "ttft p99", "tbt p50", "tbt p90", "tbt p99",
             "tbt max", "tokens/s", "batch", "mixed steps", "most prompt"});
    for (const QueueRun& q : r.runs) {
        if (q.workload != workload) continue;
        const Summary& m = q.summary;
        t.add_row({q.rule.name, q.engine ? "engine" : "simulator", q.requests,
                   Cell(m.ttft_median, 2), Cell(m.ttft_p99, 2), Cell(m.tbt_median * 1e3, 1),
                   Cell(m.tbt_p90 * 1e3, 1), Cell(m.tbt_p99 * 1e3, 1), Cell(m.tbt_max * 1e3, 1),
                   Cell(m.tokens_per_second, 0), Cell(m.mean_batch, 1), Cell(q.mixed),
                   Cell(q.most_prompt)});
    }
    return t;
}

// The simulator against the engine on the same requests, for one rule.
struct Agreement {
    double ttft = 0, tbt_median = 0, tbt_p99 = 0, total = 0;  // (simulator / engine) - 1
};
inline Agreement agreement(const QueueRun& sim, const QueueRun& engine) {
    auto off = [](double s, double e) { return e > 0 ? s / e - 1 : 0; };
    return {off(sim.summary.ttft_median, engine.summary.ttft_median),
            off(sim.summary.tbt_median, engine.summary.tbt_median),
            off(sim.summary.tbt_p99, engine.summary.tbt_p99),
            off(sim.summary.total_s, engine.summary.total_s)};
}

inline Table agreement_table(const Results& r) {
    Table t({"workload", "steps", "requests", "ttft p50", "tbt p50", "tbt p99", "total",
             "runs spread"});
    for (const QueueRun& e : r.runs) {
        if (!e.engine) continue;
        const Agreement a = agreement(r.run(e.workload, e.rule.name, false, e.requests), e);
        auto pct = [](double x) { return Cell(100 * x, 1); };
        t.add_row({e.workload, e.rule.name, e.requests, pct(a.ttft), pct(a.tbt_median),
                   pct(a.tbt_p99), pct(a.total), pct(e.run_spread)});
    }
    return t;
}

// The book's target for the simulator at the operating point: the long
// prompts at the headline's chunk size, on the engine's requests.
inline constexpr double kAgreementTarget = 0.05;

// The simulator against the engine at the operating point, if the engine ran it.
struct OperatingPoint {
    int requests = 0;
    Agreement errors;
    // Each error as the table prints it (to 0.1 %) against the target, so
    // that a row never reads 5.0 % and is called more than 5.0 %.
    static bool within(double x) {
        return std::round(1000 * std::fabs(x)) <= 1000 * kAgreementTarget;
    }
    bool all_within() const {
        return within(errors.ttft) && within(errors.tbt_median) && within(errors.tbt_p99) &&
               within(errors.total);
    }
};
inline std::optional<OperatingPoint> operating_point(const Results& r) {
    const std::string workload = long_prompts(r.long_prompt), rule = chunked(r.chunk);
    for (const QueueRun& e : r.runs)
        if (e.engine && e.workload == workload && e.rule.name == rule)
            return OperatingPoint{e.requests,
                                  agreement(r.run(workload, rule, false, e.requests), e)};
    return std::nullopt;
}

// The operating point's four errors against the target: "" when there is no
// engine run of it, else one line that says whether all four are within.
inline std::string operating_point_check(const Results& r) {
    const std::optional<OperatingPoint> op = operating_point(r);
    if (!op) return "";
    const Agreement& a = op->errors;
    std::string off;
    for (const auto& [what, x] :
         {std::pair{"median wait", a.ttft}, std::pair{"median gap", a.tbt_median},
          std::pair{"p99 gap", a.tbt_p99}, std::pair{"total", a.total}})
        if (!OperatingPoint::within(x))
            off += (off.empty() ? "" : ", ") + std::string(what) + " " + ch05::percent(x);
    const std::string where = "the operating point (" + long_prompts(r.long_prompt) + ", " +
                              chunked(r.chunk) + ", " + std::to_string(op->requests) + " requests)";
    return off.empty() ? "at " + where + " the simulator is within " +
                             ch05::percent(kAgreementTarget, false) + " of the engine on all four"
                       : "warning: at " + where + " the simulator is more than " +
                             ch05::percent(kAgreementTarget, false) + " off the engine: " + off;
}

// The same as numbers, for a program that reads the JSON.
inline Json operating_point_json(const Results& r) {
    const std::optional<OperatingPoint> op = operating_point(r);
    Json json;
    if (!op) return json;
    json.add("workload", long_prompts(r.long_prompt))
        .add("steps", chunked(r.chunk))
        .add("requests", op->requests)
        .add("error_ttft_median", op->errors.ttft)
        .add("error_tbt_median", op->errors.tbt_median)
        .add("error_tbt_p99", op->errors.tbt_p99)
        .add("error_total", op->errors.total)
        .add("target", kAgreementTarget)
        .add("within_target", op->all_within());
    return json;
}

inline Table probe_table(const Results& r) {
    Table t({"step", "rows", "sequences", "pairs", "positions", "measured", "model", "error (%)"});
    for (const StepProbe& p : r.probes)
        t.add_row({p.what, Cell(p.work.rows, 0), Cell(p.work.sequences, 0), Cell(p.work.pairs, 0),
                   Cell(p.work.positions, 0), format_duration(p.seconds), format_duration(p.fitted),
                   Cell(100 * (p.fitted / p.seconds - 1), 1)});
    return t;
}

// One point per chunk size: p99 time between tokens against the median
// time to first token, prefill first and batched prefill as single points;
// one plot per workload and number of requests, so that the points on one
// plot are comparable (the simulator on the whole queue; the simulator and
// the engine on its first requests), numbered in that order: when the
// engine runs the first requests, 09_tradeoff_1 is the short prompts'
// whole queue, _2 their first requests, _3 and _4 the same for the long
// prompts; without engine runs, _1 and _2 are the two whole queues.
inline std::vector<std::string> tradeoff_plots(const Results& r, const std::string& dir) {
    std::vector<std::string> paths;
    std::vector<int> counts = {r.work.requests};
    for (const QueueRun& q : r.runs)
        if (q.engine && q.requests != r.work.requests) counts = {r.work.requests, q.requests};
    int file = 0;
    for (const std::string& workload : {kShortPrompts, long_prompts(r.long_prompt)})
        for (int requests : counts) {
            SvgPlot plot("The trade, " + workload + ", " + std::to_string(requests) + " requests",
                         "median time to first token (s)", "p99 time between tokens (ms)");
            for (bool engine : {false, true}) {
                std::vector<double> x, y;
                for (const QueueRun& q : r.runs)
                    if (q.workload == workload && q.engine == engine && q.requests == requests &&
                        q.rule.chunk > 0) {
                        x.push_back(q.summary.ttft_median);
                        y.push_back(q.summary.tbt_p99 * 1e3);
                    }
                if (x.empty()) continue;
                const std::string side = engine ? "engine" : "simulator";
                plot.add_series("chunked, " + side, x, y);
                for (const std::string& rule : {kPrefillFirst, kBatchedPrefill}) {
                    const QueueRun& q = r.run(workload, rule, engine, requests);
                    plot.add_series(rule + ", " + side, {q.summary.ttft_median},
                                    {q.summary.tbt_p99 * 1e3});
                }
            }
            paths.push_back(plot.write(dir + "/09_tradeoff_" + std::to_string(++file) + ".svg"));
        }
    return paths;
}

// Probes the fitted step cost prices within `share` of their measured time.
inline int within(const Results& r, double share) {
    int n = 0;
    for (const StepProbe& p : r.probes) n += std::fabs(p.fitted / p.seconds - 1) <= share;
    return n;
}

inline Json run_json(const QueueRun& q) {
    const Summary& m = q.summary;
    Json json;
    json.add("workload", q.workload)
        .add("steps", q.rule.name)
        .add("chunk", q.rule.chunk)
        .add("side", q.engine ? "engine" : "simulator")
        .add("requests", q.requests)
        .add("ttft_median_s", m.ttft_median)
        .add("ttft_p99_s", m.ttft_p99)
        .add("tbt_median_s", m.tbt_median)
        .add("tbt_p90_s", m.tbt_p90)
        .add("tbt_p99_s", m.tbt_p99)
        .add("tbt_max_s", m.tbt_max)
        .add("tokens_per_second", m.tokens_per_second)
        .add("total_s", m.total_s)
        .add("decode_steps", q.steps)
        .add("mixed_steps", q.mixed)
        .add("most_prompt_tokens_in_a_step", q.most_prompt)
        .add("preemptions", m.preemptions);
    if (q.engine) json.add("run_spread", q.run_spread);  // the slowest run against the fastest
    return json;
}

inline int report(const Results& r, const OutputOptions& out) {
    const std::string workload = long_prompts(r.long_prompt);
    const bool engine_all =
        r.work.requests > 0 && std::any_of(r.runs.begin(), r.runs.end(), [&](const QueueRun& q) {
            return q.engine && q.requests == r.work.requests;
        });
    const QueueRun& before = r.run(workload, kPrefillFirst, engine_all, r.work.requests);
    const QueueRun& after = r.run(workload, chunked(r.chunk), engine_all, r.work.requests);
    const Table short_table = queue_table(r, kShortPrompts), long_table = queue_table(r, workload);
    const Table agree = agreement_table(r), probes = probe_table(r);
    const std::vector<std::string> plots = tradeoff_plots(r, out.plot_dir);
    std::string plot;
    for (const std::string& p : plots) plot += (plot.empty() ? "" : " ") + p;
    const std::string headline =
        "chunked prefill (chunk " + std::to_string(r.chunk) + "): p99 time between tokens " +
        fixed(before.summary.tbt_p99 * 1e3, 1) + " ms -> " + fixed(after.summary.tbt_p99 * 1e3, 1) +
        " ms; median time to first token " + fixed(before.summary.ttft_median, 1) + " s -> " +
        fixed(after.summary.ttft_median, 1) + " s";

    std::vector<Json> each;
    for (const QueueRun& q : r.runs) each.push_back(run_json(q));
    Json json = Json()
                    .add("chapter", "09_chunked_prefill")
                    .add("model", r.config.describe())
                    .add("step_cost_source", r.cost.source)
                    .add("step_fixed_s", r.cost.fixed)
                    .add("step_per_row_s", r.cost.per_row)
                    .add("step_per_sequence_s", r.cost.per_sequence)
                    .add("step_per_pair_s", r.cost.per_pair)
                    .add("step_per_position_s", r.cost.per_position)
                    .add("step_fit_error", r.cost.fit_error)
                    .add("prompt_step_scale", r.cost.prompt_scale)
                    .add("decode_step_scale", r.cost.decode_scale)
                    .add("mixed_step_scale", r.cost.mixed_scale)
                    .add("probes", probes)
                    .add("kv_budget_mib", r.kv_budget_mib)
                    .add("block_size", r.block_size)
                    .add("batch", r.batch)
                    .add("long_prompt", r.long_prompt)
                    .add("chunk", r.chunk)
                    .add("queue_runs", each)
                    .add("agreement", agree)
                    .add("operating_point_check", operating_point_check(r))
                    .add("operating_point", operating_point_json(r))
                    .add("headline_workload", workload)
                    .add("headline_side", engine_all ? "engine" : "simulator")
                    .add("tbt_p99_prefill_first_s", before.summary.tbt_p99)
                    .add("tbt_p99_chunked_s", after.summary.tbt_p99)
                    .add("ttft_median_prefill_first_s", before.summary.ttft_median)
                    .add("ttft_median_chunked_s", after.summary.ttft_median)
                    .add("plot", plot)
                    .add("headline", headline);
    if (emit(out, json)) return 0;

    std::cout << "Chapter 09: prefill and decode in one step\n\n"
              << "model: " << r.config.describe() << "\n"
              << ch05::describe_workload(r.work, make_workload(r.work)) << "\n"
              << "  and the same queue with every prompt " << r.long_prompt << " tokens long\n"
              << "memory: " << r.kv_budget_mib << " MiB of KV cache in " << r.blocks
              << " blocks of " << r.block_size
              << " positions (chapter 07); continuous batching with the cache, batch " << r.batch
              << "\n"
              << "step cost (" << r.cost.source << "):\n"
              << "  step = " << fixed(r.cost.fixed * 1e6, 1) << " us + "
              << fixed(r.cost.per_row * 1e6, 2) << " us x rows + "
              << fixed(r.cost.per_sequence * 1e6, 2) << " us x sequences + "
              << fixed(r.cost.per_pair * 1e9, 1) << " ns x attention pairs + "
              << fixed(r.cost.per_position * 1e9, 1) << " ns x positions read\n";
    if (!r.probes.empty()) {
        std::cout << "  fitted to " << r.probes.size() << " steps of every mix, timed in "
                  << fixed(r.calibration_seconds, 1)
                  << " s with the real queues run between the rounds (thread CPU time, the "
                     "fastest of the rounds); "
                  << within(r, 0.03) << " of them within 3 %, the largest error "
                  << fixed(100 * r.cost.fit_error, 1) << "%\n";
    }
    if (std::any_of(r.levels.begin(), r.levels.end(), [](const StepLevel& l) { return l.steps; })) {
        std::cout << "  short real queues (" << kLevelingRequests << " requests of "
                  << r.long_prompt << "-token prompts, another sample; chunked " << r.chunk
                  << " and prefill first; each step the fastest of " << kRealRuns
                  << " runs) ran each kind of step at:";
        for (std::size_t i = 0; i < r.levels.size(); ++i) {
            const StepLevel& l = r.levels[i];
            std::cout << (i ? "; " : " ") << l.what << " x"
                      << fixed(l.priced > 0 && l.measured > 0 ? l.measured / l.priced : 1.0, 3)
                      << " (" << l.steps << ")";
        }
        std::cout << "\n";
    }
    std::cout << "\nShort prompts (times to first token in s, between tokens in ms):\n";
    short_table.print(std::cout);
    std::cout << "\n" << r.long_prompt << "-token prompts:\n";
    long_table.print(std::cout);
    std::cout << "tbt: time between two tokens of one answer, over every gap; batch: mean\n"
              << "requests answered per decode step; mixed steps: steps\n"
              << "with decode rows and prompt tokens both; most prompt: the most prompt tokens\n"
              << "one step carried; the engine's steps are timed by the thread's CPU time, each\n"
              << "the fastest of " << kRealRuns << " runs\n";
    if (std::any_of(r.runs.begin(), r.runs.end(), [](const QueueRun& q) { return q.engine; })) {
        std::cout << "\nThe simulator against the engine on the same requests (simulator / engine "
                     "- 1, %):\n";
        agree.print(std::cout);
        std::cout << "runs spread: how much longer the slowest engine run of a queue took than "
                     "its fastest (%),\nhow much the machine's speed changed while they ran; the "
                     "engine's columns take each step\nat its fastest run\n"
                  << operating_point_check(r) << "\n";
    }
    std::cout << "plot: " << plot << "\n\n"
              << "the waits below: " << (engine_all ? "the real engine's" : "the simulator's")
              << ", " << workload << ", prefill first -> chunked " << r.chunk << "\n"
              << headline << "\n";
    return 0;
}

}  // namespace kv::ch09
