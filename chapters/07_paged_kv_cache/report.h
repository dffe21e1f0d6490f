// What chapter 07 prints: how many conversations fit, the price of the
// block table, the queue under each way of managing memory.
#pragma once

#include <cstdint>
#include <string>

#include "../../common/kit/output.h"
#include "../../common/lab/queue_flags.h"  // workload_cell, step_cost_cell
#include "experiment.h"

namespace kv::ch07 {

// The queue's runs at `mib` MiB, the simulator's first.
inline Table queue_table(const Results& r, std::uint64_t mib) {
    Table t({"memory", "side", "requests", "ttft p50", "ttft p99", "tokens/s", "batch",
             "preemptions", "recomputed", "swapped"});
    for (const QueueRun& q : r.runs)
        if (q.budget_mib == mib)
            t.add_row({q.memory, q.engine ? "engine" : "simulator", q.requests,
                       Cell(q.summary.ttft_median, 2), Cell(q.summary.ttft_p99, 2),
                       Cell(q.summary.tokens_per_second, 0), Cell(q.summary.mean_batch, 1),
                       q.preemptions, Cell(std::uint64_t(q.positions_recomputed)),
                       q.bytes_swapped ? bytes_cell(q.bytes_swapped) : Cell("-")});
    return t;
}

inline int report(const Results& r, const OutputOptions& out) {
    const Setup& s = r.setup;
    const std::uint64_t mib = r.budget.bytes >> 20;
    const std::string at = concat(mib, " MiB");
    const FitCount& paged = r.paged_at(s.block_size);
    const double before = r.run(kReserve, mib).summary.ttft_median,
                 after = r.run(kPagedRecompute, mib).summary.ttft_median;
    Table fit({"memory", "block size", "conversations", "positions filled", "positions charged",
               "unused (%)", "bound on unused"});
    auto fit_row = [&](const std::string& memory, const FitCount& c) {
        const bool blocks = c.block_size > 0;
        fit.add_row({memory, blocks ? Cell(c.block_size) : Cell("-"), c.conversations,
                     c.positions_filled, c.positions_charged, Cell(100 * c.unused_fraction(), 1),
                     blocks ? Cell(c.unused_bound()) : Cell("-")});
    };
    fit_row(kReserve, r.reserved);
    for (const FitCount& c : r.paged) fit_row("paged", c);
    Table indirection({"context", "contiguous", "paged", "paged / contiguous"});
    for (const IndirectionRow& i : r.indirection)
        indirection.add_row({i.context, duration_cell(i.contiguous_s), duration_cell(i.paged_s),
                             Cell(i.ratio(), 3)});

    Findings f("Chapter 07: the paged KV cache");
    f.line("model", "model", s.model.describe())
        .line("workload", "workload", workload_cell(workload_of(s.queue, s.seed), r.queue))
        .line("memory", "memory",
              concat(at, " of KV cache = ", with_commas(r.budget.tokens), " positions of ",
                     format_bytes(r.budget.bytes_per_token),
                     "; continuous batching with the cache, batch ", s.queue.batch))
        .line("step_cost", "step cost", step_cost_cell(r.pricing))
        .text("")
        .table("fit",
               "How many conversations fit at once, each at its last step, in arrival order:", fit)
        .text("")
        .table("indirection",
               concat("The price of the block table: a decode step of ", s.indirection_batch,
                      " sequences (median of the thread's CPU time):"),
               indirection)
        .data("indirection_batch", s.indirection_batch)  // the timed step's sequences
        .text("")
        .table("queue_at_budget",
               concat("The queue at ", at, ", blocks of ", s.block_size, " positions, watermark ",
                      fixed(100 * s.watermark, 0), "% (times in s):"),
               queue_table(r, mib))
        .text("")
        .table("queue_tight",
               concat("The queue at ", s.tight_budget_mib,
                      " MiB, where memory runs out (times in s; the engine's steps timed by the "
                      "thread's CPU time):"),
               queue_table(r, s.tight_budget_mib))
        .line("swap_bytes_per_second", "swaps priced in the simulator at",
              rate_cell(r.swap_bytes_per_second))
        .text("recomputed: positions prefilled again")
        .data("kv_budget_mib", mib)
        .data("block_size", s.block_size)
        .data("conversations_reserved", r.reserved.conversations)
        .data("conversations_paged", paged.conversations)
        .data("reserved_held_share", Cell(1 - r.reserved.unused_fraction(), 3))
        .data("paged_held_share", Cell(1 - paged.unused_fraction(), 3))
        .headline(concat("paged KV cache: ", paged.conversations, " conversations fit in ", at,
                         " where reserving the whole context fit ", r.reserved.conversations,
                         "; median time to first token ", fixed(before, 1), " s -> ",
                         fixed(after, 1), " s"));
    emit(out, f);
    return 0;
}

}  // namespace kv::ch07
