// What chapter 09 prints: each workload under each step rule, its waits,
// and the trade-off plots.
#pragma once

#include <string>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/kit/svg_plot.h"
#include "../../common/lab/queue_flags.h"  // workload_cell, step_cost_cell
#include "experiment.h"

namespace kv::ch09 {

inline Table queue_table(const Results& r, const std::string& workload) {
    Table t({"steps", "ttft p50", "ttft p99", "tbt p50", "tbt p90", "tbt p99", "tbt max",
             "tokens/s", "batch", "mixed steps", "most prompt"});
    for (const QueueRun& q : r.runs) {
        const Summary& m = q.summary;
        if (q.workload == workload)
            t.add_row({q.rule.name, Cell(m.ttft_median, 2), Cell(m.ttft_p99, 2),
                       Cell(m.tbt_median * 1e3, 1), Cell(m.tbt_p90 * 1e3, 1),
                       Cell(m.tbt_p99 * 1e3, 1), Cell(m.tbt_max * 1e3, 1),
                       Cell(m.tokens_per_second, 0), Cell(m.mean_batch, 1), Cell(q.mixed),
                       Cell(q.most_prompt)});
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
        SvgPlot plot(concat("The trade, ", workload, ", ", r.work.requests, " requests"),
                     "median time to first token (s)", "p99 time between tokens (ms)");
        std::vector<double> x, y;
        std::vector<std::string> rules;
        for (const QueueRun& q : r.runs)
            if (q.workload == workload) {
                x.push_back(q.summary.ttft_median);
                y.push_back(q.summary.tbt_p99 * 1e3);
                rules.push_back(q.rule.name);
            }
        plot.add_cases("step rules", x, y, rules);
        paths +=
            concat(paths.empty() ? "" : " ", plot.write(concat(dir, "/09_tradeoff_", ++n, ".svg")));
    }
    return paths;
}

inline int report(const Results& r, const OutputOptions& out) {
    const Setup& s = r.setup;
    const std::string workload = long_prompts(s.long_prompt);
    const Summary& before = r.run(workload, kPrefillFirst.name).summary;
    const Summary& after = r.run(workload, chunked(s.chunk).name).summary;
    Findings f("Chapter 09: prefill and decode in one step");
    f.line("model", "model", s.model.describe())
        .line("workload", "workload", workload_cell(r.work, make_workload(r.work)))
        .text(concat("  and the same queue with every prompt ", s.long_prompt, " tokens long"))
        .line("memory", "memory",
              concat(s.queue.kv_budget_mib, " MiB of KV cache in ", r.blocks, " blocks of ",
                     s.block_size,
                     " positions (chapter 07); continuous batching with the cache, batch ",
                     s.queue.batch))
        .line("step_cost", "step cost", step_cost_cell(r.prices))
        .text("")
        .table("short_prompts",
               "Short prompts, in the simulator (times to first token in s, between tokens in ms):",
               queue_table(r, kShortPrompts))
        .text("")
        .table("long_prompts", workload + ":", queue_table(r, workload))
        .text(
            "tbt: time between two tokens of one answer, over every gap; batch: mean\n"
            "requests answered per decode step; mixed steps: steps with decode rows and\n"
            "prompt tokens both; most prompt: the most prompt tokens one step carried")
        .line("plot", "plot", outside_text(tradeoff_plots(r, out.plot_dir)))
        .data("long_prompt", s.long_prompt)
        .data("chunk", s.chunk)
        .data("tbt_p99_prefill_first_s", Cell(before.tbt_p99, 4))
        .data("tbt_p99_chunked_s", Cell(after.tbt_p99, 4))
        .data("ttft_median_prefill_first_s", Cell(before.ttft_median, 3))
        .data("ttft_median_chunked_s", Cell(after.ttft_median, 3))
        .headline(concat("chunked prefill (chunk ", s.chunk, "): p99 time between tokens ",
                         fixed(before.tbt_p99 * 1e3, 1), " ms -> ", fixed(after.tbt_p99 * 1e3, 1),
                         " ms; median time to first token ", fixed(before.ttft_median, 1), " s -> ",
                         fixed(after.ttft_median, 1), " s"));
    emit(out, f);
    return 0;
}

}  // namespace kv::ch09
