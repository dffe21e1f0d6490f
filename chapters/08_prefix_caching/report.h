// What chapter 08 prints: the queue without and with the prefix cache, the
// blocks n parallel samples need, and the headline; or it all as JSON.
#pragma once

#include <iostream>
#include <string>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/lab/queue_flags.h"  // describe_workload, step_cost_text
#include "experiment.h"

namespace kv::ch08 {

inline Table queue_table(const Results& r) {
    Table t({"prefix cache", "side", "requests", "from cache (%)", "prefilled", "ttft p50",
             "ttft p99", "tokens/s", "batch", "blocks in tables", "distinct blocks", "preemptions",
             "evictions"});
    std::vector<QueueRun> runs = {r.without, r.with};
    runs.insert(runs.end(), r.first.begin(), r.first.end());
    for (const QueueRun& q : runs)
        t.add_row({q.share ? "on" : "off", q.engine ? "engine" : "simulator", q.requests,
                   Cell(100 * q.from_cache_share(), 1), Cell(std::uint64_t(q.prefilled)),
                   Cell(q.summary.ttft_median, 2), Cell(q.summary.ttft_p99, 2),
                   Cell(q.summary.tokens_per_second, 0), Cell(q.summary.mean_batch, 1),
                   Cell(q.mean_named, 1), Cell(q.mean_held, 1), Cell(q.preemptions),
                   Cell(q.evictions)});
    return t;
}

inline Table samples_table(const Results& r) {
    Table t({"n", "blocks (engine)", "blocks (counted)", "copying the prompt", "saved (%)",
             "copies on write"});
    for (const SampleRow& s : r.samples)
        t.add_row(
            {s.n, s.blocks_engine, Cell(s.blocks_counted), Cell(s.blocks_copying),
             Cell(100.0 * double(s.blocks_copying - s.blocks_engine) / double(s.blocks_copying), 1),
             s.copies_engine});
    return t;
}

inline int report(const Results& r, const OutputOptions& out) {
    const Setup& s = r.setup;
    const int S = s.sharing.system_prompt;
    const WorkloadOptions work = workload_of(s.queue, s.seed);
    const QueueRun &before = r.without, &after = r.with;
    const Table queue = queue_table(r), samples = samples_table(r);
    // Memory: what the running requests' tables list beyond what they hold.
    const double not_copied = (after.mean_named - after.mean_held) * double(r.bytes_per_block);
    const std::string headline =
        "prefix cache: " + fixed(100 * after.from_cache_share(), 0) +
        "% of prompt tokens served from the cache; median time to first token " +
        fixed(before.summary.ttft_median, 1) + " s -> " + fixed(after.summary.ttft_median, 1) +
        " s";

    Json json = Json()
                    .add("model", s.model.describe())
                    .add("step_cost", step_cost_json(r.pricing))
                    .add("kv_budget_mib", s.queue.kv_budget_mib)
                    .add("block_size", s.block_size)
                    .add("blocks", r.blocks)
                    .add("watermark", s.watermark)
                    .add("system_prompt", S)
                    .add("follow_ups", s.sharing.follow_ups)
                    .add("samples_per_prompt", s.sharing.samples)
                    .add("queue", queue)
                    .add("sample_prompt", r.sample_prompt)
                    .add("sample_answer", r.sample_answer)
                    .add("parallel_samples", samples)
                    .add("headline_side", "simulator")
                    .add("prompt_share_from_cache", after.from_cache_share())
                    .add("memory_not_copied_bytes", not_copied)
                    .add("ttft_median_without_s", before.summary.ttft_median)
                    .add("ttft_median_with_s", after.summary.ttft_median)
                    .add("headline", headline);
    if (emit(out, json)) return 0;

    std::cout << "Chapter 08: sharing the cache\n\n"
              << "model: " << s.model.describe() << "\n"
              << describe_workload(work, make_workload(work)) << "\n"
              << "  each prompt: a system prompt of S = " << S << " tokens, then the question; "
              << fixed(100 * s.sharing.follow_ups, 0) << "% follow up one of the previous "
              << s.sharing.look_back << " requests";
    if (s.sharing.samples > 1)
        std::cout << "; groups of " << s.sharing.samples << " ask one prompt";
    std::cout << "\nmemory: " << s.queue.kv_budget_mib << " MiB of KV cache = " << r.blocks
              << " blocks of " << s.block_size << " positions (" << format_bytes(r.bytes_per_block)
              << " each); continuous batching with the cache, batch " << s.queue.batch
              << ", watermark " << fixed(100 * s.watermark, 0) << "%\n"
              << step_cost_text(r.pricing) << "\nThe queue (times in s; the engine's steps timed "
              << "by the thread's CPU time):\n";
    queue.print(std::cout);
    std::cout << "memory: with the cache the running requests held " << fixed(after.mean_held, 1)
              << " distinct blocks per step for tables listing " << fixed(after.mean_named, 1)
              << ", " << format_bytes(std::uint64_t(not_copied))
              << " of KV cache they did not need to copy\n\n"
              << "n answers to one prompt of " << r.sample_prompt << " tokens, each "
              << r.sample_answer << " tokens long, on the engine:\n";
    samples.print(std::cout);
    std::cout << "\nthe headline's waits: the simulator's, continuous batching, S = " << S << "\n"
              << headline << "\n";
    return 0;
}

}  // namespace kv::ch08
