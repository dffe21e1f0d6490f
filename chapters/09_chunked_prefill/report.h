// What chapter 09 prints: the step cost, each workload under each step
// rule with its time to first token and time between tokens, the
// trade-off plots and the headline; or all of it as one JSON object.
#pragma once

#include <iostream>
#include <string>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/kit/svg_plot.h"
#include "../../common/lab/queue_flags.h"  // describe_workload, step_cost_text
#include "experiment.h"

namespace kv::ch09 {

inline Table queue_table(const Results& r, const std::string& workload) {
    Table t({"steps", "ttft p50", "ttft p99", "tbt p50", "tbt p90", "tbt p99", "tbt max",
             "tokens/s", "batch", "mixed steps", "most prompt"});
    for (const QueueRun& q : r.runs) {
        if (q.workload != workload) continue;
        const Summary& m = q.summary;
        t.add_row({q.rule.name, Cell(m.ttft_median, 2), Cell(m.ttft_p99, 2),
                   Cell(m.tbt_median * 1e3, 1), Cell(m.tbt_p90 * 1e3, 1), Cell(m.tbt_p99 * 1e3, 1),
                   Cell(m.tbt_max * 1e3, 1), Cell(m.tokens_per_second, 0), Cell(m.mean_batch, 1),
                   Cell(q.mixed), Cell(q.most_prompt)});
    }
    return t;
}

// One plot per workload (09_tradeoff_1: the short prompts): p99 time
// between tokens against the median time to first token, a point per rule.
// Returns their paths, separated by spaces.
inline std::string tradeoff_plots(const Results& r, const std::string& dir) {
    std::string paths;
    int n = 0;
    for (const std::string& workload : {kShortPrompts, long_prompts(r.setup.long_prompt)}) {
        SvgPlot plot(
            "The trade, " + workload + ", " + std::to_string(r.work.requests) + " requests",
            "median time to first token (s)", "p99 time between tokens (ms)");
        std::vector<double> x, y;
        for (const QueueRun& q : r.runs)
            if (q.workload == workload && q.rule.chunk > 0) {
                x.push_back(q.summary.ttft_median);
                y.push_back(q.summary.tbt_p99 * 1e3);
            }
        plot.add_series("chunked", x, y);
        for (const StepRule& rule : {kPrefillFirst, kBatchedPrefill}) {
            const Summary& m = r.run(workload, rule.name).summary;
            plot.add_series(rule.name, {m.ttft_median}, {m.tbt_p99 * 1e3});
        }
        paths += (paths.empty() ? "" : " ") +
                 plot.write(dir + "/09_tradeoff_" + std::to_string(++n) + ".svg");
    }
    return paths;
}

inline Json run_json(const QueueRun& q) {
    const Summary& m = q.summary;
    return Json()
        .add("workload", q.workload)
        .add("steps", q.rule.name)
        .add("chunk", q.rule.chunk)
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
}

inline int report(const Results& r, const OutputOptions& out) {
    const Setup& s = r.setup;
    const std::string workload = long_prompts(s.long_prompt);
    const Summary& before = r.run(workload, kPrefillFirst.name).summary;
    const Summary& after = r.run(workload, chunked(s.chunk).name).summary;
    const std::string plot = tradeoff_plots(r, out.plot_dir);
    const std::string headline = "chunked prefill (chunk " + std::to_string(s.chunk) +
                                 "): p99 time between tokens " + fixed(before.tbt_p99 * 1e3, 1) +
                                 " ms -> " + fixed(after.tbt_p99 * 1e3, 1) +
                                 " ms; median time to first token " + fixed(before.ttft_median, 1) +
                                 " s -> " + fixed(after.ttft_median, 1) + " s";

    Json json = Json()
                    .add("model", s.model.describe())
                    .add("step_cost", step_cost_json(r.prices))
                    .add("kv_budget_mib", s.queue.kv_budget_mib)
                    .add("block_size", s.block_size)
                    .add("blocks", r.blocks)
                    .add("batch", s.queue.batch)
                    .add("long_prompt", s.long_prompt)
                    .add("chunk", s.chunk)
                    .add_each("queue_runs", r.runs, run_json)
                    .add("headline_workload", workload)
                    .add("headline_side", "simulator")
                    .add("tbt_p99_prefill_first_s", before.tbt_p99)
                    .add("tbt_p99_chunked_s", after.tbt_p99)
                    .add("ttft_median_prefill_first_s", before.ttft_median)
                    .add("ttft_median_chunked_s", after.ttft_median)
                    .add("plot", plot)
                    .add("headline", headline);
    if (emit(out, json)) return 0;

    std::cout << "Chapter 09: prefill and decode in one step\n\n"
              << "model: " << s.model.describe() << "\n"
              << describe_workload(r.work, make_workload(r.work)) << "\n"
              << "  and the same queue with every prompt " << s.long_prompt << " tokens long\n"
              << "memory: " << s.queue.kv_budget_mib << " MiB of KV cache in " << r.blocks
              << " blocks of " << s.block_size
              << " positions (chapter 07); continuous batching with the cache, batch "
              << s.queue.batch << "\n"
              << step_cost_text(r.prices)
              << "\nShort prompts, in the simulator (times to first token in s, between tokens "
              << "in ms):\n";
    queue_table(r, kShortPrompts).print(std::cout);
    std::cout << "\n" << workload << ":\n";
    queue_table(r, workload).print(std::cout);
    std::cout << "tbt: time between two tokens of one answer, over every gap; batch: mean\n"
              << "requests answered per decode step; mixed steps: steps with decode rows and\n"
              << "prompt tokens both; most prompt: the most prompt tokens one step carried\n"
              << "plot: " << visible(plot) << "\n\n"
              << "the waits below: the simulator's, " << workload << ", prefill first -> chunked "
              << s.chunk << "\n"
              << headline << "\n";
    return 0;
}

}  // namespace kv::ch09
