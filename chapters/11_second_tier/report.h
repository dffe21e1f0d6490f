// What chapter 11 prints: one request reloaded or recomputed at every P,
// the break-even arithmetic, the formats' reloads, the queue with and
// without the tier.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/lab/queue_flags.h"  // describe_workload, step_cost_cell
#include "experiment.h"

namespace kv::ch11 {

inline Table sweep_table(const Results& r) {
    // Per token of the prefix: the cold read alone, and the whole recompute
    // (the question's 16 tokens included), each over P.
    Table t({"P", "pool", "warm", "cold", "recompute", "read/token", "recompute/token",
             "recompute/cold", "read warm", "read cold", "read O_DIRECT", "same logits"});
    for (const OneRequest& o : r.sweep)
        t.add_row({o.prefix, duration_cell(o.pool_s), duration_cell(o.warm_s),
                   duration_cell(o.cold_s), duration_cell(o.recompute_s),
                   duration_cell(o.cold_read_s / o.prefix), duration_cell(o.recompute_s / o.prefix),
                   times_cell(o.recompute_s / o.cold_s), rate_cell(o.warm_bandwidth()),
                   rate_cell(o.cold_bandwidth()),
                   o.direct_read_s > 0 ? rate_cell(o.direct_bandwidth()) : Cell("refused"),
                   yes_no(o.same_logits)});
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
                   rate_cell(a.break_even()), rate_cell(bandwidth),
                   times_cell(a.reload_speedup(bandwidth))});
    };
    row("this model, tier file warm", r.demo, r.longest().warm_bandwidth());
    row("this model, tier file cold", r.demo, r.longest().cold_bandwidth());
    row("Llama 3 8B on an H100, host memory (PCIe 5.0 x16)", r.article, kPcie5);
    row("Llama 3 8B on an H100, one NVMe SSD", r.article, kNvme);
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
                   Cell(std::uint64_t(q.prefilled)), duration_cell(q.summary.ttft_median),
                   duration_cell(q.summary.ttft_p99), Cell(q.tier.kept), Cell(q.tier.reloaded),
                   Cell(q.tier.failed), Cell(q.tier.not_kept), Cell(q.tier.evictions),
                   Cell(q.preemptions),
                   q.engine && r.setup.orders_compare() ? yes_no(q.same_order) : Cell("-"),
                   q.engine && q.tier_mib ? yes_no(q.same_tokens) : Cell("-")});
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
            return concat("between P = ", a.prefix, " and ", b.prefix);
    }
    const OneRequest& l = r.longest();
    return concat("nowhere from P = ", with_commas(r.sweep.front().prefix), " to ",
                  with_commas(l.prefix), ": ",
                  l.cold_s < l.recompute_s ? "a reload is faster at every P"
                                           : "recomputing is faster at every P");
}

// The most pages any drop of the run left cached (-1: no drop could say).
inline std::int64_t pages_left(const Results& r) {
    std::int64_t most = -1;
    for (const OneRequest& o : r.sweep) most = std::max(most, o.pages_left);
    for (const FormatReload& f : r.formats) most = std::max(most, f.one.pages_left);
    return most;
}

// Seconds to three significant digits: 1.44, 0.0123 (a short run's waits keep theirs).
inline std::string seconds_text(double s) {
    const int digits = s > 0 ? 2 - int(std::floor(std::log10(s))) : 0;
    return fixed(s, std::clamp(digits, 0, 9));
}

// Returns the exit status: 1 if a check printed "no" (logits, order, tokens).
inline int report(const Results& r, const OutputOptions& out) {
    const Setup& s = r.setup;
    const QueueRun &without = queue_at(r, 0), &with = queue_at(r, int(s.tier_mib));
    const OneRequest& l = r.longest();
    const WorkloadOptions work = workload_of(s.queue, s.seed);
    if (!r.warning.empty())
        std::cerr << "warning: second tier: " << visible(r.warning)
                  << " (its blocks are not kept: they are computed again)\n";
    Table formats({"format", "bytes/token", "bytes reloaded", "x float32", "read warm", "read cold",
                   "same logits"});
    for (const FormatReload& f : r.formats)
        formats.add_row({format_name(f.format), Cell(kv_bytes_per_token(s.model, f.format)),
                         Cell(f.one.bytes),
                         Cell(double(r.formats.front().one.bytes) / double(f.one.bytes), 2),
                         duration_cell(f.one.warm_read_s), duration_cell(f.one.cold_read_s),
                         yes_no(f.one.same_logits)});

    Findings f("Chapter 11: a second tier");
    f.line("model", "model",
           concat(s.model.describe(), " (the one-request sweep's: max-seq ",
                  with_commas(s.long_model().max_seq), ")"))
        .line("slot_bytes",
              concat("a block of ", s.block_size,
                     " positions in the tier, with its name and checksum (bytes)"),
              Cell(r.slot_bytes))
        .line("tier_folder",
              "the sweep's tier files (mode 0600, no name on disk once open), made under",
              outside_text(r.measured_in))
        .text("")
        .table("one_request",
               concat("One request, a prefix of P tokens then ", Setup::kQuestion,
                      " more: time to first token with the prefix in the pool, read back from the "
                      "tier\nfile warm or cold, or computed again (median of ",
                      Experiment::kRepeats, "; a recompute of 1,024 tokens or more timed once):"),
               sweep_table(r))
        .line("pages_cached_after_drop", "the file's pages cached after each drop (mincore)",
              pages_left(r) < 0 ? Cell("not known") : Cell(std::uint64_t(pages_left(r))))
        .line("crossing", "the cold reload and the recompute cross", crossing(r))
        .text("")
        .table("arithmetic",
               "The arithmetic, per token, at P = " + with_commas(l.prefix) +
                   ": reloading wins above B* = rate x bytes / operations (the H100's rate its "
                   "published\nBF16 peak):",
               arithmetic_table(r))
        .text("")
        .table("formats",
               concat("The number formats at P = ", with_commas(r.formats.front().one.prefix),
                      ": the bytes a reload moves and the time it takes:"),
               formats)
        .text("")
        .line("workload", "the queue", describe_workload(work, make_workload(work)))
        .text(concat("  dealt to ", s.conversations,
                     " conversations taking turns (each resends its history once the turn before "
                     "it has finished)"))
        .line("kv_budget_mib", "the pool (MiB of KV cache)",
              Cell(concat(s.queue.kv_budget_mib, " = ", r.blocks,
                          " blocks; continuous batching, batch ", s.queue.batch),
                   double(s.queue.kv_budget_mib)))
        .line("tier_read_priced", "the simulator prices a block read at",
              rate_cell(r.measured.read))
        .line("tier_write_priced", "the simulator prices a block written at",
              rate_cell(r.measured.write))
        .line("step_cost", "step cost", step_cost_cell(r.pricing))
        .text("")
        .table("queue", "", queue_table(r))
        .text(concat("\nthe headline's waits: the simulator's, the whole queue, a tier of ",
                     s.tier_mib, " MiB; the reload: cold, at the longest P"))
        .data("tier_mib", s.tier_mib)
        .data("returning_share_reloaded", Cell(with.share(with.from_tier), 3))
        .data("ttft_median_without_s", Cell(without.summary.ttft_median, 3))
        .data("ttft_median_with_s", Cell(with.summary.ttft_median, 3))
        .data("reload_prefix", l.prefix)
        .data("reload_speedup", Cell(l.recompute_s / l.cold_s, 1))
        .data("read_cold_bytes_per_s", rate_cell(l.cold_bandwidth()))
        .headline(concat("second tier: ", fixed(100 * with.share(with.from_tier), 0),
                         "% of returning prompt tokens reloaded instead of recomputed; median time "
                         "to first token ",
                         seconds_text(without.summary.ttft_median), " s -> ",
                         seconds_text(with.summary.ttft_median), " s; a reload ",
                         fixed(l.recompute_s / l.cold_s, 0), " x faster than recomputing at ",
                         with_commas(l.prefix), " tokens"));
    emit(out, f);
    bool agree = true;
    for (const OneRequest& o : r.sweep) agree = agree && o.same_logits;
    for (const FormatReload& x : r.formats) agree = agree && x.one.same_logits;
    for (const QueueRun& q : r.first) agree = agree && q.same_order && q.same_tokens;
    return agree ? 0 : 1;
}

}  // namespace kv::ch11
