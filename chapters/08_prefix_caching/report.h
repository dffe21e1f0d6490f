// What chapter 08 prints: the queue with a shared system prompt, with and
// without the prefix cache (and its first requests on the real engine's
// shared blocks), how the gain grows with S, the n-sample queue, the blocks
// n parallel samples need, two plots and the headline; or all of it as one
// JSON object.
#pragma once

#include <iostream>
#include <string>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/kit/queue_flags.h"  // describe_workload
#include "../../common/kit/report.h"
#include "../../common/kit/svg_plot.h"
#include "experiment.h"

namespace kv::ch08 {

inline std::string side(const QueueRun& q) {
    return q.engine ? "engine" : "simulator";
}

// One queue's runs: each side, without and with the prefix cache.
inline Table queue_table(const Results& r, const std::string& workload, int s) {
    Table t({"prefix cache", "side", "requests", "from cache (%)", "prefilled", "ttft p50",
             "ttft p99", "tokens/s", "batch", "blocks in tables", "distinct blocks", "preemptions",
             "evictions"});
    for (const QueueRun& q : r.runs) {
        if (q.workload != workload || q.system_prompt != s) continue;
        t.add_row({q.share ? "on" : "off", side(q), q.requests, Cell(100 * q.from_cache_share(), 1),
                   Cell(std::uint64_t(q.positions_admitted - q.positions_from_cache)),
                   Cell(q.summary.ttft_median, 2), Cell(q.summary.ttft_p99, 2),
                   Cell(q.summary.tokens_per_second, 0), Cell(q.summary.mean_batch, 1),
                   Cell(q.mean_named, 1), Cell(q.mean_held, 1), q.preemptions, Cell(q.evictions)});
    }
    return t;
}

// The sweep over S, in the simulator: the median wait without and with the cache.
inline Table sweep_table(const Results& r) {
    Table t({"S", "from cache (%)", "ttft p50 off", "ttft p50 on", "off / on"});
    for (int s : r.system_prompts) {
        const QueueRun &off = r.run(kSystemPromptWorkload, s, false),
                       &on = r.run(kSystemPromptWorkload, s, true);
        t.add_row({s, Cell(100 * on.from_cache_share(), 1), Cell(off.summary.ttft_median, 2),
                   Cell(on.summary.ttft_median, 2),
                   Cell(off.summary.ttft_median / on.summary.ttft_median, 2)});
    }
    return t;
}

inline Table samples_table(const Results& r) {
    Table t({"n", "blocks (engine)", "blocks (counted)", "copying the prompt", "saved (%)",
             "copies on write"});
    for (const SampleRow& s : r.samples)
        t.add_row(
            {s.n, s.blocks_engine, Cell(std::uint64_t(s.blocks_counted)),
             Cell(std::uint64_t(s.blocks_copying)),
             Cell(100.0 * double(s.blocks_copying - s.blocks_engine) / double(s.blocks_copying), 1),
             s.copies_engine});
    return t;
}

inline std::string ttft_plot(const Results& r, const std::string& dir) {
    SvgPlot plot("Median time to first token against the system prompt's length",
                 "system prompt S (tokens)", "median time to first token (s)");
    for (bool share : {false, true}) {
        std::vector<double> x, y;
        for (int s : r.system_prompts) {
            x.push_back(s);
            y.push_back(r.run(kSystemPromptWorkload, s, share).summary.ttft_median);
        }
        plot.add_series(share ? "prefix cache" : "no prefix cache", x, y);
    }
    return plot.write(dir + "/08_ttft_vs_system_prompt.svg");
}

inline std::string memory_plot(const Results& r, const std::string& dir) {
    SvgPlot plot("KV cache for n answers to one prompt", "samples n", "KV cache (MiB)");
    std::vector<double> n, engine, counted, copying;
    const double mib = double(r.bytes_per_block) / double(1 << 20);
    for (const SampleRow& s : r.samples) {
        n.push_back(s.n);
        engine.push_back(s.blocks_engine * mib);
        counted.push_back(double(s.blocks_counted) * mib);
        copying.push_back(double(s.blocks_copying) * mib);
    }
    plot.add_series("copy-on-write (engine)", n, engine);
    plot.add_series("copy-on-write (counted)", n, counted);
    plot.add_series("a copy of the prompt each", n, copying);
    return plot.write(dir + "/08_memory_vs_samples.svg");
}

inline Json queue_json(const QueueRun& q) {
    return Json()
        .add("workload", q.workload)
        .add("system_prompt", q.system_prompt)
        .add("prefix_cache", q.share)
        .add("side", side(q))
        .add("requests", q.requests)
        .add("prompt_tokens", q.prompt_tokens)
        .add("prompt_tokens_from_cache", q.prompt_from_cache)
        .add("positions_admitted", q.positions_admitted)
        .add("positions_from_cache", q.positions_from_cache)
        .add("ttft_median_s", q.summary.ttft_median)
        .add("ttft_p99_s", q.summary.ttft_p99)
        .add("tokens_per_second", q.summary.tokens_per_second)
        .add("mean_batch", q.summary.mean_batch)
        .add("mean_blocks_named", q.mean_named)
        .add("mean_blocks_held", q.mean_held)
        .add("preemptions", q.preemptions)
        .add("positions_recomputed", q.recomputed)
        .add("evictions", q.evictions);
}

inline int report(const Results& r, const OutputOptions& out) {
    const int S = r.sharing.system_prompt;
    const QueueRun &before = r.run(kSystemPromptWorkload, S, false),
                   &after = r.run(kSystemPromptWorkload, S, true);
    const StepCost& cost = r.pricing.cost;
    const Table main = queue_table(r, kSystemPromptWorkload, S), sweep = sweep_table(r);
    const Table n_samples = queue_table(r, kSamplesWorkload, S), samples = samples_table(r);
    // Memory: what the running requests' tables list beyond what they hold.
    const double saved_blocks = after.mean_named - after.mean_held;
    const std::string saved =
        "memory: with the cache the running requests held " + fixed(after.mean_held, 1) +
        " distinct blocks per step for tables listing " + fixed(after.mean_named, 1) + ", " +
        format_bytes(std::uint64_t(saved_blocks * double(r.bytes_per_block))) +
        " of KV cache they did not need to copy (" + side(after) + ", " +
        std::to_string(after.requests) + " requests)";
    const std::string plot_ttft = ttft_plot(r, out.plot_dir);
    const std::string plot_memory = memory_plot(r, out.plot_dir);
    const std::string headline =
        "prefix cache: " + fixed(100 * after.from_cache_share(), 0) +
        "% of prompt tokens served from the cache; median time to first token " +
        fixed(before.summary.ttft_median, 1) + " s -> " + fixed(after.summary.ttft_median, 1) +
        " s";

    std::vector<Json> each;
    for (const QueueRun& q : r.runs) each.push_back(queue_json(q));
    Json json = Json()
                    .add("chapter", "08_prefix_caching")
                    .add("model", r.model.describe())
                    .add("step_cost", Json()
                                          .add("source", cost.source)
                                          .add("fixed_s", cost.fixed)
                                          .add("per_row_s", cost.per_row)
                                          .add("per_sequence_s", cost.per_sequence)
                                          .add("per_pair_s", cost.per_pair)
                                          .add("per_position_s", cost.per_position))
                    .add("kv_budget_mib", r.kv_budget_mib)
                    .add("block_size", r.block_size)
                    .add("blocks", r.blocks)
                    .add("watermark", r.watermark)
                    .add("system_prompt", S)
                    .add("follow_ups", r.sharing.follow_ups)
                    .add("queue_runs", each)
                    .add("sweep", sweep)
                    .add("samples_per_prompt", r.samples_per_prompt)
                    .add("n_sample_queue", n_samples)
                    .add("sample_prompt", r.sample_prompt)
                    .add("sample_answer", r.sample_answer)
                    .add("parallel_samples", samples)
                    .add("headline_side", "simulator")
                    .add("prompt_share_from_cache", after.from_cache_share())
                    .add("memory_not_copied_bytes", saved_blocks * double(r.bytes_per_block))
                    .add("ttft_median_without_s", before.summary.ttft_median)
                    .add("ttft_median_with_s", after.summary.ttft_median)
                    .add("ttft_plot", plot_ttft)
                    .add("memory_plot", plot_memory)
                    .add("headline", headline);
    if (emit(out, json)) return 0;

    std::cout << "Chapter 08: sharing the cache\n\n"
              << "model: " << r.model.describe() << "\n"
              << describe_workload(r.work, make_workload(r.work)) << "\n"
              << "  each prompt: a system prompt of S = " << S << " tokens, then the question; "
              << fixed(100 * r.sharing.follow_ups, 0) << "% follow up one of the previous "
              << r.sharing.look_back << " requests (its prompt and answer, then a new question)\n"
              << "memory: " << r.kv_budget_mib << " MiB of KV cache = " << r.blocks << " blocks of "
              << r.block_size << " positions (" << format_bytes(r.bytes_per_block)
              << " each); continuous batching with the cache, batch " << r.batch << ", watermark "
              << fixed(100 * r.watermark, 0) << "%\n"
              << "step cost: " << format_duration(cost.fixed) << " + "
              << format_duration(cost.per_row) << " x rows + " << format_duration(cost.per_sequence)
              << " x sequences + " << fixed(cost.per_pair * 1e9, 1) << " ns x pairs + "
              << fixed(cost.per_position * 1e9, 1) << " ns x positions (" << cost.source << ")\n"
              << "\nThe queue with a system prompt of " << S << " tokens (times in s):\n";
    main.print(std::cout);
    std::cout << "from cache: share of the prompts' tokens found cached when they arrived;\n"
              << "prefilled: positions computed by prefills (again after a preemption);\n"
              << "tokens/s: answer tokens per second; batch: mean requests per decode step;\n"
              << "blocks in tables / distinct blocks: per step, the blocks the running requests'\n"
              << "tables list (a shared block once per table) and the distinct blocks among them;\n"
              << "evictions: cached blocks given back to make room; the engine's steps are timed\n"
              << "by the thread's CPU time, so other work on the machine does not count\n"
              << saved << "\n\n"
              << "How the gain grows with S (the simulator, "
              << with_commas(std::uint64_t(r.work.requests)) << " requests):\n";
    sweep.print(std::cout);
    std::cout << "plot: " << plot_ttft << "\n\n"
              << "The queue with n-sample requests: groups of n = " << r.samples_per_prompt
              << " asking the same prompt, no follow-ups (times in s):\n";
    n_samples.print(std::cout);
    std::cout << "\n"
              << "n answers to one prompt of " << r.sample_prompt << " tokens, each "
              << r.sample_answer << " tokens long, on the engine:\n";
    samples.print(std::cout);
    std::cout << "plot: " << plot_memory << "\n\n"
              << "the headline's waits: the simulator's, continuous batching, S = " << S << "\n"
              << headline << "\n";
    return 0;
}

}  // namespace kv::ch08
