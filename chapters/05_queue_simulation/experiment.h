// Chapter 05's experiment: its parameters, their check, and the run: draw
// the queue, price its steps with the one step cost, replay it under the
// six policies, and record its first requests step by step for the
// batching timeline (batching_timeline.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../common/core/config.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/model_flags.h"
#include "../../common/kit/program.h"  // Progress
#include "../../common/kit/report.h"   // with_commas, format_bytes
#include "../../common/lab/queue_flags.h"
#include "../../common/serving/memory_budget.h"
#include "../../common/serving/metrics.h"
#include "../../common/serving/scheduler.h"
#include "../../common/serving/step_cost.h"
#include "../../common/serving/workload.h"
#include "batching_timeline.h"

namespace kv::ch05 {

struct Results {
    Config config;
    WorkloadOptions work;
    std::vector<Request> queue;  // the requests, in arrival order
    int batch = 0;
    MemoryBudget budget;
    Concurrency fit;
    StepCalibration pricing;  // the step cost (.cost) and where its prices came from
    std::vector<Policy> policies;
    std::vector<Summary> summaries;          // (policies)
    std::vector<std::vector<double>> ttfts;  // (policies, requests) sorted times to first token
    std::vector<PolicyTimeline> timeline;    // (2) the first requests, static then continuous
};

struct Experiment {
    Config model;                  // the model's shape (--layers, --dim, ...)
    std::uint64_t seed = 1;        // seed of the weights and the workload
    QueueOptions queue;            // 1,000 requests at time 0, batch 32, 16 MiB of KV cache
    std::string reserve = "full";  // charge the longest context ("full") or what is "held"

    void add_flags(Flags& flags) {
        add_model_flags(flags, model, seed);
        add_queue_flags(flags, queue);
        flags.add_choice("reserve", reserve, {"full", "held"},
                         "charge each request its longest context, or what its cache holds");
    }

    // A request whose longest context cannot fit even alone would wait
    // forever: the whole run is refused at the door.
    void check() const {
        check_queue(model, queue);
        const MemoryBudget b = budget();
        // Every request's cap is --answer-max, so only its prompt decides:
        // if the longest prompt fits, every request does, and nothing need
        // be drawn; if the shortest does not, the first request is refused,
        // and it is drawn alone (requests are drawn in order, so it is the
        // same first request).
        const WorkloadOptions& w = queue.workload;
        if (std::uint64_t(w.prompt_max) + std::uint64_t(w.answer_max) - 1 <= b.tokens) return;
        WorkloadOptions drawn = workload_of(queue, seed);
        if (std::uint64_t(w.prompt_min) + std::uint64_t(w.answer_max) - 1 > b.tokens)
            drawn.requests = 1;
        const std::vector<Request> requests = make_workload(drawn);
        if (const Request* r = first_that_never_fits(requests, b))
            throw UsageError("--kv-budget-mib " + std::to_string(queue.kv_budget_mib) + " holds " +
                             with_commas(b.tokens) + " positions of KV cache (" +
                             format_bytes(b.bytes_per_token) + " each), but request " +
                             std::to_string(r->id) + " may need " +
                             with_commas(longest_context(*r)) + " (prompt " +
                             std::to_string(r->prompt_len) + " + answer cap " +
                             std::to_string(r->answer_cap) + " - 1)");
    }

    // The whole run, after check().
    Results run() const {
        Results r;
        r.config = model;
        r.work = workload_of(queue, seed);
        r.batch = queue.batch;
        r.queue = make_workload(r.work);
        r.budget = budget();
        r.fit = concurrency(r.queue, r.budget);
        r.pricing = price_steps(model, seed, queue);
        r.policies = book_policies(queue.batch);
        Progress progress("simulating the queue, policy");  // shown on a terminal after a second
        for (const Policy& p : r.policies) {
            progress.update(long(r.summaries.size()) + 1, long(r.policies.size()));
            SimulatedExecutor executor(r.pricing.cost);
            const Schedule s = run_schedule(r.queue, p, r.budget, executor);
            r.summaries.push_back(summarize(s));
            r.ttfts.push_back(sorted_ttfts(s));
        }
        r.timeline = batching_timelines(r.queue, r.budget, model);
        return r;
    }

    MemoryBudget budget() const {
        return make_budget(
            model, queue.kv_budget_mib,
            reserve == "full" ? Reservation::whole_context : Reservation::tokens_held);
    }
};

}  // namespace kv::ch05
