// What chapter 11 prints: one request reloaded or recomputed at every P,
// the break-even arithmetic, the number formats' reloads, the queue with
// and without the second tier, and the headline; or it all as JSON.
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

// A time or a rate printed with its unit (the README check then knows it
// varies), a number in JSON.
inline Cell timed(double seconds) {
    return Cell(seconds < 0.1 ? fixed(1e3 * seconds, 2) + " ms" : fixed(seconds, 2) + " s",
                seconds);
}
inline std::string rate_text(double bytes_per_second) {
    return bytes_per_second >= 1e9 ? fixed(bytes_per_second / 1e9, 2) + " GB/s"
                                   : fixed(bytes_per_second / 1e6, 1) + " MB/s";
}
inline Cell rate(double bytes_per_second) {
    return Cell(rate_text(bytes_per_second), bytes_per_second);
}
inline Cell times_faster(double ratio) {
    return Cell(fixed(ratio, 1) + " x", ratio);
}
inline Cell per_token(double seconds, int tokens) {
    return Cell(fixed(1e6 * seconds / tokens, 2) + " us", seconds / tokens);
}
// "21.6 M", "15.0 G": a count in millions or billions.
inline Cell large(double n) {
    return Cell(n >= 1e9 ? fixed(n / 1e9, 1) + " G" : fixed(n / 1e6, 1) + " M", n);
}

inline Table sweep_table(const Results& r) {
    Table t({"P", "pool", "warm", "cold", "recompute", "cold read/token", "recompute/token",
             "recompute/warm", "recompute/cold", "read warm", "read cold", "read O_DIRECT",
             "same logits"});
    for (const OneRequest& o : r.sweep)
        t.add_row({o.prefix, timed(o.pool_s), timed(o.warm_s), timed(o.cold_s),
                   timed(o.recompute_s), per_token(o.cold_read_s, o.prefix),
                   per_token(o.recompute_s, o.prefix + Setup::kQuestion),
                   times_faster(o.recompute_s / o.warm_s), times_faster(o.recompute_s / o.cold_s),
                   rate(o.warm_bandwidth()), rate(o.cold_bandwidth()),
                   o.direct_read_s > 0 ? rate(o.direct_bandwidth()) : Cell("refused"),
                   o.same_logits ? "yes" : "no"});
    return t;
}

inline Table arithmetic_table(const Results& r) {
    Table t({"case", "bytes/token", "operations/token", "rate", "break-even B*", "bandwidth",
             "reload faster"});
    auto row = [&](const std::string& what, const ReloadArithmetic& a, double bandwidth) {
        t.add_row(
            {what, Cell(std::uint64_t(a.bytes_per_token + 0.5)), large(a.operations_per_token),
             Cell(a.operations_per_second >= 1e12
                      ? fixed(a.operations_per_second / 1e12, 1) + " TFLOP/s"
                      : fixed(a.operations_per_second / 1e9, 1) + " GFLOP/s",
                  a.operations_per_second),
             rate(a.break_even()), rate(bandwidth), times_faster(a.reload_speedup(bandwidth))});
    };
    const OneRequest& l = r.longest();
    row("this model, tier file warm", r.demo, l.warm_bandwidth());
    row("this model, tier file cold", r.demo, l.cold_bandwidth());
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
                   timed(f.one.cold_read_s), f.one.same_logits ? "yes" : "no"});
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
                   Cell(q.preemptions), q.engine ? Cell(q.same_order ? "yes" : "no") : Cell("-"),
                   q.engine && q.tier_mib ? Cell(q.same_tokens ? "yes" : "no") : Cell("-")});
    return t;
}

// The queue's rows without the tier and with --tier-mib, in the simulator.
inline const QueueRun& queue_at(const Results& r, int mib) {
    for (const QueueRun& q : r.queues)
        if (q.tier_mib == mib) return q;
    return r.queues.front();
}

// Where the reload and recompute lines cross, if they do: "" if not.
inline std::string crossing(const Results& r) {
    bool faster_before = false;
    for (std::size_t i = 0; i < r.sweep.size(); ++i) {
        const bool faster = r.sweep[i].cold_s < r.sweep[i].recompute_s;
        if (i > 0 && faster != faster_before)
            return "between P = " + std::to_string(r.sweep[i - 1].prefix) + " and " +
                   std::to_string(r.sweep[i].prefix);
        faster_before = faster;
    }
    return "";
}

inline int report(const Results& r, const OutputOptions& out) {
    const Setup& s = r.setup;
    const QueueRun &without = queue_at(r, 0), &with = queue_at(r, int(s.tier_mib));
    const OneRequest& l = r.longest();
    const Table sweep = sweep_table(r), arithmetic = arithmetic_table(r), formats = format_table(r),
                queue = queue_table(r);
    const std::string cross = crossing(r);
    const std::string headline =
        "second tier: " + fixed(100 * with.share(with.from_tier), 0) +
        "% of returning prompt tokens reloaded instead of recomputed; median time to first "
        "token " +
        fixed(without.summary.ttft_median, 1) + " s -> " + fixed(with.summary.ttft_median, 1) +
        " s; a reload " + fixed(l.recompute_s / l.cold_s, 0) + " x faster than recomputing at " +
        with_commas(std::uint64_t(l.prefix)) + " tokens";

    Json json = Json()
                    .add("model", s.model.describe())
                    .add("step_cost", step_cost_json(r.pricing))
                    .add("kv_budget_mib", s.queue.kv_budget_mib)
                    .add("block_size", s.block_size)
                    .add("blocks", r.blocks)
                    .add("slot_bytes", r.slot_bytes)
                    .add("conversations", s.conversations)
                    .add("tier_mib", s.tier_mib)
                    .add("tier_warning", r.warning)
                    .add("one_request", sweep)
                    .add("arithmetic", arithmetic)
                    .add("formats", formats)
                    .add("queue", queue)
                    .add("crossing", cross)
                    .add("read_warm_bytes_per_s", l.warm_bandwidth())
                    .add("read_cold_bytes_per_s", l.cold_bandwidth())
                    .add("read_direct_bytes_per_s", l.direct_bandwidth())
                    .add("break_even_bytes_per_s", r.demo.break_even())
                    .add("article_break_even_bytes_per_s", r.article.break_even())
                    .add("headline_side", "simulator")
                    .add("returning_share_reloaded", with.share(with.from_tier))
                    .add("ttft_median_without_s", without.summary.ttft_median)
                    .add("ttft_median_with_s", with.summary.ttft_median)
                    .add("reload_prefix", l.prefix)
                    .add("reload_speedup", l.recompute_s / l.cold_s)
                    .add("headline", headline);
    if (!r.warning.empty())
        std::cerr << "warning: second tier: " << visible(r.warning) << " (its blocks are not "
                  << "kept: they are computed again)\n";
    if (emit(out, json)) return 0;

    const WorkloadOptions work = workload_of(s.queue, s.seed);
    const std::string longest = with_commas(std::uint64_t(l.prefix));
    std::cout
        << "Chapter 11: a second tier\n\n"
        << "model: " << s.model.describe() << " (the one-request sweep's: max-seq "
        << with_commas(std::uint64_t(s.long_model().max_seq)) << ")\n"
        << "tier: blocks of " << s.block_size << " positions, "
        << format_bytes(BlockPool::bytes_per_block(s.model, s.block_size)) << " each, "
        << with_commas(r.slot_bytes) << " bytes in the tier with their name and checksum;\n"
        << "  its files: mode 0600 in a fresh folder under "
        << (s.tier_dir.empty() ? "$TMPDIR (or /tmp)" : visible(s.tier_dir))
        << ", removed on exit and on a signal\n\n"
        << "One request: a prefix of P tokens, then " << Setup::kQuestion
        << " more. Time to first token (wall clock, median of " << Experiment::kRepeats
        << "; a recompute of 1,024 tokens\nor more is timed once) with the prefix in the "
           "pool, read back from the tier file warm (the operating system's\npage cache "
           "holds it) or cold (fdatasync, then posix_fadvise DONTNEED drops its pages first), "
           "or computed again:\n";
    sweep.print(std::cout);
    std::cout << "measured: after each drop "
              << (l.pages_left < 0 ? std::string("the pages cached could not be counted")
                                   : with_commas(std::uint64_t(l.pages_left)) +
                                         " of the file's pages were cached (mincore)")
              << "; O_DIRECT reads skip the cache\nmeasured: "
              << (cross.empty()
                      ? "the lines do not cross between P = 64 and " + longest +
                            (l.cold_s < l.recompute_s ? ": a reload is faster at every P"
                                                      : ": recomputing is faster at every P")
                      : "the lines cross " + cross)
              << "\n\nThe arithmetic, per token: a reload costs bytes / bandwidth, recomputing "
                 "operations / rate, so reloading\nwins above the break-even bandwidth B* = rate x "
                 "bytes / operations. Operations at P = "
              << longest
              << "; this model's rate is its\nrecompute above, the H100's its published "
                 "peak (BF16, dense):\n";
    arithmetic.print(std::cout);
    std::cout << "\nThe number formats at P = "
              << with_commas(std::uint64_t(r.formats.front().one.prefix))
              << ": the bytes a reload moves and the time it takes (same logits: pool, reload and\n"
                 "recompute agree to the last bit in that format):\n";
    formats.print(std::cout);
    std::cout << "\nThe queue: " << describe_workload(work, make_workload(work)) << "\n"
              << "  dealt to " << s.conversations << " conversations taking turns; each turn "
              << "resends its history, then a new question\n"
              << "memory: " << s.queue.kv_budget_mib << " MiB of KV cache = " << r.blocks
              << " blocks of " << s.block_size << " positions; continuous batching, batch "
              << s.queue.batch << "\nthe simulator prices each block the tier moves at this "
              << "run's rates (read " << rate_text(r.measured.read) << ", write "
              << rate_text(r.measured.write) << ")\n"
              << step_cost_text(r.pricing) << "\n";
    queue.print(std::cout);
    std::cout << "\nthe headline's waits: the simulator's, the whole queue, a tier of "
              << s.tier_mib << " MiB; the reload: cold, at the longest P\n"
              << headline << "\n";
    return 0;
}

}  // namespace kv::ch11
