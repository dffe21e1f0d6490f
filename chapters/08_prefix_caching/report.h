// What chapter 08 prints: the queue without and with the prefix cache, the
// blocks n parallel samples need, and the headline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/lab/queue_flags.h"  // workload_cell, step_cost_cell
#include "experiment.h"

namespace kv::ch08 {

inline int report(const Results& r, const OutputOptions& out) {
    const Setup& s = r.setup;
    const WorkloadOptions work = workload_of(s.queue, s.seed);
    const QueueRun &before = r.without, &after = r.with;
    // Memory: what the running requests' tables list beyond what they hold.
    const double not_copied = (after.mean_named - after.mean_held) * double(r.bytes_per_block);
    Table queue({"prefix cache", "side", "requests", "from cache (%)", "prefilled", "ttft p50",
                 "ttft p99", "tokens/s", "batch", "blocks in tables", "distinct blocks",
                 "preemptions", "evictions"});
    std::vector<QueueRun> runs = {r.without, r.with};
    runs.insert(runs.end(), r.first.begin(), r.first.end());
    for (const QueueRun& q : runs)
        queue.add_row({q.share ? "on" : "off", q.engine ? "engine" : "simulator", q.requests,
                       Cell(100 * q.from_cache_share(), 1), Cell(std::uint64_t(q.prefilled)),
                       Cell(q.summary.ttft_median, 2), Cell(q.summary.ttft_p99, 2),
                       Cell(q.summary.tokens_per_second, 0), Cell(q.summary.mean_batch, 1),
                       Cell(q.mean_named, 1), Cell(q.mean_held, 1), Cell(q.preemptions),
                       Cell(q.evictions)});
    Table samples({"n", "blocks (engine)", "blocks (counted)", "copying the prompt", "saved (%)",
                   "copies on write"});
    for (const SampleRow& x : r.samples)
        samples.add_row(
            {x.n, x.blocks_engine, Cell(x.blocks_counted), Cell(x.blocks_copying),
             Cell(100 * double(x.blocks_copying - x.blocks_engine) / double(x.blocks_copying), 1),
             x.copies_engine});

    Findings f("Chapter 08: sharing the cache");
    f.line("model", "model", s.model.describe())
        .line("workload", "workload", workload_cell(work, make_workload(work)))
        .text(concat("  each prompt: a system prompt of S = ", s.sharing.system_prompt,
                     " tokens, then the question; ", fixed(100 * s.sharing.follow_ups, 0),
                     "% follow up one of the previous ", s.sharing.look_back, " requests",
                     s.sharing.samples > 1
                         ? concat("; groups of ", s.sharing.samples, " ask one prompt")
                         : ""))
        .line("memory", "memory",
              concat(s.queue.kv_budget_mib, " MiB of KV cache = ", r.blocks, " blocks of ",
                     s.block_size, " positions (", format_bytes(r.bytes_per_block),
                     " each); continuous batching with the cache, batch ", s.queue.batch,
                     ", watermark ", fixed(100 * s.watermark, 0), "%"))
        .line("step_cost", "step cost", step_cost_cell(r.pricing))
        .text("")
        .table("queue",
               "The queue (times in s; the engine's steps timed by the thread's CPU time):", queue)
        .line(
            "memory_not_copied_bytes",
            concat("memory: with the cache the running requests held ", fixed(after.mean_held, 1),
                   " distinct blocks per step for tables listing ", fixed(after.mean_named, 1)),
            Cell(format_bytes(std::uint64_t(not_copied)) + " of KV cache they did not need to copy",
                 not_copied))
        .text("")
        .table("parallel_samples",
               concat("n answers to one prompt of ", r.sample_prompt, " tokens, each ",
                      r.sample_answer, " tokens long, on the engine:"),
               samples)
        .data("prompt_share_from_cache", Cell(after.from_cache_share(), 3))
        .data("ttft_median_without_s", Cell(before.summary.ttft_median, 3))
        .data("ttft_median_with_s", Cell(after.summary.ttft_median, 3))
        .headline("prefix cache: " + fixed(100 * after.from_cache_share(), 0) +
                  "% of prompt tokens served from the cache; median time to first token " +
                  fixed(before.summary.ttft_median, 1) + " s -> " +
                  fixed(after.summary.ttft_median, 1) + " s");
    emit(out, f);
    return 0;
}

}  // namespace kv::ch08
