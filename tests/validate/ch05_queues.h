// Chapter 05's checked queues for make validate. Its operating point: the
// three policies with the cache on the first 128 requests of the chapter's
// queue, at its batch of 32 and its 16 MiB, each request charged its
// longest context. Beside them, the three policies without the cache on a
// few requests (the engine recomputes every sequence at every step).
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "../../common/lab/queue_flags.h"
#include "../../common/serving/memory_budget.h"
#include "../../common/serving/real_executor.h"
#include "../../common/serving/scheduler.h"
#include "../../common/serving/workload.h"
#include "options.h"
#include "validation.h"

namespace kv {

// Requests the policies without the cache run (at most --requests).
inline constexpr int kCh05RequestsWithoutCache = 8;

inline std::vector<CheckedQueue> ch05_checked_queues(const ValidateOptions& o) {
    QueueOptions q;  // chapter 05's defaults
    check_queue(o.model, q);
    const MemoryBudget budget = make_budget(o.model, q.kv_budget_mib, Reservation::whole_context);
    auto checked = [&](int requests, const Policy& policy, bool operating_point) {
        WorkloadOptions w = workload_of(q, o.seed);
        w.requests = requests;  // the queue's first requests: its draws go in order
        CheckedQueue c;
        c.chapter = "05";
        c.name = policy.name + (policy.batch > 1 ? ", batch " + std::to_string(policy.batch) : "") +
                 ", " + std::to_string(requests) + " requests";
        c.operating_point = operating_point;
        c.requests = make_workload(w);
        c.run = [requests = c.requests, policy, budget](Executor& executor, Executor*) {
            return run_schedule(requests, policy, budget, executor);
        };
        const std::uint64_t seed = o.seed;
        c.engine = [seed](Transformer& model) -> std::unique_ptr<Executor> {
            return std::make_unique<RealExecutor>(model, seed);
        };
        return c;
    };
    const int few = std::min(kCh05RequestsWithoutCache, o.requests);
    const std::vector<Policy> quarter = book_policies(std::max(1, few / 4));
    const std::vector<Policy> book = book_policies(q.batch);
    std::vector<CheckedQueue> queues;
    for (int k : {kSerialCache, kStaticCache, kContinuousCache})
        queues.push_back(checked(o.requests, book[std::size_t(k)], true));
    for (int k : {kSerialNoCache, kSerialNoCache + 1, kSerialNoCache + 2})
        queues.push_back(checked(few, quarter[std::size_t(k)], false));
    return queues;
}

}  // namespace kv
