// What chapter 11 prints: one request reloaded or recomputed at every P, the
// break-even arithmetic, the formats' reloads, the queue with and without the tier.
#pragma once

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/lab/queue_flags.h"  // describe_workload, step_cost_text
#include "experiment.h"

namespace kv::ch11 {

// Times, rates and ratios with their unit (the README check then knows
// they vary), numbers in JSON.
inline Cell timed(double seconds) {
    return Cell(seconds < 0.1 ? fixed(1e3 * seconds, 2) + " ms" : fixed(seconds, 2) + " s",
                seconds);
}
inline Cell rate(double bytes_per_second) {  // in GB/s always: "0.880 GB/s", "63.00 GB/s"
    const double gb = bytes_per_second / 1e9;
    return Cell(fixed(gb, gb < 1 ? 3 : 2) + " GB/s", bytes_per_second);
}
inline Cell times(double ratio) {
    return Cell(fixed(ratio, 1) + " x", ratio);
}
inline Cell yes(bool b) {
    return b ? "yes" : "no";
}

inline Table sweep_table(const Results& r) {
    Table t({"P", "pool", "warm", "cold", "recompute", "recompute/cold", "read warm", "read cold",
             "read O_DIRECT", "same logits"});
    for (const OneRequest& o : r.sweep)
        t.add_row({o.prefix, timed(o.pool_s), timed(o.warm_s), timed(o.cold_s),
                   timed(o.recompute_s), times(o.recompute_s / o.cold_s), rate(o.warm_bandwidth()),
                   rate(o.cold_bandwidth()),
                   o.direct_read_s > 0 ? rate(o.direct_bandwidth()) : Cell("refused"),
                   yes(o.same_logits)});
    return t;
}

inline Table arithmetic_table(const Results& r) {
    Table t({"case", "bytes/token", "operations/token", "rate", "break-even B*", "bandwidth",
             "reload faster"});
    auto row = [&](const std::string& what, const ReloadArithmetic& a, double bandwidth) {
        const double ops = a.operations_per_token, flops = a.operations_per_second;
        t.add_row({what, Cell(std::uint64_t(a.bytes_per_token + 0.5)),
                   Cell(ops >= 1e9 ? fixed(ops / 1e9, 1) + " G" : fixed(ops / 1e6, 1) + " M", ops),
                   Cell(flops >= 1e12 ? fixed(flops / 1e12, 1) + " TFLOP/s"
                                      : fixed(flops / 1e9, 1) + " GFLOP/s",
                        flops),
                   rate(a.break_even()), rate(bandwidth), times(a.reload_speedup(bandwidth))});
    };
    row("this model, tier file warm", r.demo, r.longest().warm_bandwidth());
    row("this model, tier file cold", r.demo, r.longest().cold_bandwidth());
    row("Llama 3 8B on an H100, host memory (PCIe 5.0 x16)", r.article, kPcie5);
    row("Llama 3 8B on an H100, one NVMe SSD", r.article, kNvme);
    return t;
}

inline Table format_table(const Results& r) {
    Table t({"format", "bytes/token", "bytes reloaded", "x float32", "read warm", "read cold",
             "same logits"});
    const double wide = double(r.formats.front().one.bytes);
    for (const FormatReload& f : r.formats)
        t.add_row({format_name(f.format), Cell(kv_bytes_per_token(r.setup.model, f.format)),
                   Cell(f.one.bytes), Cell(wide / double(f.one.bytes), 2), timed(f.one.warm_read_s),
                   timed(f.one.cold_read_s), yes(f.one.same_logits)});
    return t;
}

inline Table queue_table(const Results& r) {
    Table t({"tier (MiB)", "side", "requests", "returning tokens", "from pool (%)", "from tier (%)",
             "prefilled", "ttft p50", "ttft p99", "kept", "reloaded", "failed checks", "not kept",
             "tier evictions", "preemptions", "same order", "same tokens"});
    std::vector<QueueRun> runs = r.queues;
    runs.insert(runs.end(), r.first.begin(), r.first.end());
    for (const QueueRun& q : runs)
        t.add_row({q.tier_mib ? Cell(q.tier_mib) : Cell("none"), q.engine ? "engine" : "simulator",
                   q.requests, Cell(std::uint64_t(q.returning)),
                   Cell(100 * q.share(q.from_pool), 1), Cell(100 * q.share(q.from_tier), 1),
                   Cell(std::uint64_t(q.prefilled)), timed(q.summary.ttft_median),
                   timed(q.summary.ttft_p99), Cell(q.tier.kept), Cell(q.tier.reloaded),
                   Cell(q.tier.failed), Cell(q.tier.not_kept), Cell(q.tier.evictions),
                   Cell(q.preemptions), q.engine ? yes(q.same_order) : Cell("-"),
                   q.engine && q.tier_mib ? yes(q.same_tokens) : Cell("-")});
    return t;
}

// The simulator's whole queue with a tier of `mib` MiB (0: none).
inline const QueueRun& queue_at(const Results& r, int mib) {
    for (const QueueRun& q : r.queues)
        if (q.tier_mib == mib) return q;
    return r.queues.front();
}

// Where the cold reload's line and the recompute's cross, if they do.
inline std::string crossing(const Results& r) {
    for (std::size_t i = 1; i < r.sweep.size(); ++i) {
        const OneRequest &a = r.sweep[i - 1], &b = r.sweep[i];
        if ((a.cold_s < a.recompute_s) != (b.cold_s < b.recompute_s))
            return "between P = " + std::to_string(a.prefix) + " and " + std::to_string(b.prefix);
    }
    const OneRequest& l = r.longest();
    return "nowhere from P = " + with_commas(std::uint64_t(r.sweep.front().prefix)) + " to " +
           with_commas(std::uint64_t(l.prefix)) + ": " +
           (l.cold_s < l.recompute_s ? "a reload is faster at every P"
                                     : "recomputing is faster at every P");
}

inline int report(const Results& r, const OutputOptions& out) {
    const Setup& s = r.setup;
    const QueueRun &without = queue_at(r, 0), &with = queue_at(r, int(s.tier_mib));
    const OneRequest& l = r.longest();
    const std::string longest = with_commas(std::uint64_t(l.prefix));
    const WorkloadOptions work = workload_of(s.queue, s.seed);
    if (!r.warning.empty())
        std::cerr << "warning: second tier: " << visible(r.warning)
                  << " (its blocks are not kept: they are computed again)\n";

    Findings f("Chapter 11: a second tier");
    f.line("model", "model",
           s.model.describe() + " (the one-request sweep's: max-seq " +
               with_commas(std::uint64_t(s.long_model().max_seq)) + ")")
        .line("slot_bytes",
              "a block of " + std::to_string(s.block_size) +
                  " positions in the tier, with its name and checksum (bytes)",
              Cell(r.slot_bytes))
        .line("tier_folder", "the tier's files (mode 0600, removed on exit and on a signal)",
              outside_text("a fresh folder under " +
                           (s.tier_dir.empty() ? std::string("$TMPDIR (or /tmp)") : s.tier_dir)))
        .text("")
        .table("one_request",
               "One request: a prefix of P tokens, then " + std::to_string(Setup::kQuestion) +
                   " more. Time to first token (the thread's processor time and the disk's "
                   "waits; median of " +
                   std::to_string(Experiment::kRepeats) +
                   ", a recompute of 1,024\ntokens or more timed once) with the prefix in the "
                   "pool, read back from the tier file warm (in the page cache)\nor cold "
                   "(fdatasync, then posix_fadvise DONTNEED drops its pages first), or computed "
                   "again:",
               sweep_table(r))
        .line("pages_cached_after_drop", "the file's pages cached after each drop (mincore)",
              l.pages_left < 0 ? Cell("not known") : Cell(std::uint64_t(l.pages_left)))
        .data("read_cold_bytes_per_s", rate(l.cold_bandwidth()))
        .line("crossing", "the cold reload and the recompute cross", crossing(r))
        .text("")
        .table("arithmetic",
               "The arithmetic, per token: a reload costs bytes / bandwidth, recomputing "
               "operations / rate, so\nreloading wins above the break-even bandwidth B* = rate x "
               "bytes / operations. Operations at P = " +
                   longest +
                   ";\nthis model's rate is its recompute above, the H100's its "
                   "published peak (BF16, dense):",
               arithmetic_table(r))
        .data_raw("break_even_bytes_per_s", json_number(r.demo.break_even()))
        .data_raw("article_break_even_bytes_per_s", json_number(r.article.break_even()))
        .text("")
        .table("formats",
               "The number formats at P = " +
                   with_commas(std::uint64_t(r.formats.front().one.prefix)) +
                   ": the bytes a reload moves and the time it takes (same logits: pool,\nreload "
                   "and recompute agree to the last bit in that format):",
               format_table(r))
        .text("")
        .line("workload", "the queue", describe_workload(work, make_workload(work)))
        .text("  dealt to " + std::to_string(s.conversations) +
              " conversations taking turns (each resends its history)")
        .line("kv_budget_mib", "the pool (MiB of KV cache)",
              Cell(std::to_string(s.queue.kv_budget_mib) + " = " + std::to_string(r.blocks) +
                       " blocks; continuous batching, batch " + std::to_string(s.queue.batch),
                   double(s.queue.kv_budget_mib)))
        .data("tier_mib", Cell(s.tier_mib))
        .line("tier_read_priced", "the simulator prices a block read at", rate(r.measured.read))
        .line("tier_write_priced", "the simulator prices a block written at",
              rate(r.measured.write))
        .text(step_cost_text(r.pricing))
        .data("step_cost", step_cost_json(r.pricing))
        .table("queue", "", queue_table(r))
        .data_raw("returning_share_reloaded", json_number(with.share(with.from_tier)))
        .data_raw("ttft_median_without_s", json_number(without.summary.ttft_median))
        .data_raw("ttft_median_with_s", json_number(with.summary.ttft_median))
        .data("reload_prefix", l.prefix)
        .data_raw("reload_speedup", json_number(l.recompute_s / l.cold_s))
        .data("tier_warning", outside_text(r.warning))
        .text("\nthe headline's waits: the simulator's, the whole queue, a tier of " +
              std::to_string(s.tier_mib) + " MiB; the reload: cold, at the longest P")
        .headline("second tier: " + fixed(100 * with.share(with.from_tier), 0) +
                  "% of returning prompt tokens reloaded instead of recomputed; median time to "
                  "first token " +
                  fixed(without.summary.ttft_median, 1) + " s -> " +
                  fixed(with.summary.ttft_median, 1) + " s; a reload " +
                  fixed(l.recompute_s / l.cold_s, 0) + " x faster than recomputing at " + longest +
                  " tokens");
    emit(out, f);
    return 0;
}

}  // namespace kv::ch11
