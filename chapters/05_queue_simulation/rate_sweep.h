// Chapter 05: arrival rate, where the queue turns unstable.
//
// With everyone queued at time zero the server never idles, so requests
// served per second of that run is the policy's capacity. Below capacity
// a request arriving now finds the server mostly caught up, and waits
// about one prefill; above it the queue grows without end, and each new
// arrival waits longer than the one before. The sweep replays the same
// workload at rates from a tenth to 1.2 times the best capacity.
#pragma once

#include <string>
#include <vector>

#include "cost_model.h"
#include "metrics.h"
#include "scheduler.h"
#include "workload.h"

namespace kv {

struct RateSweep {
    std::vector<std::string> policies;
    std::vector<double> capacity;                  // (policies) requests per second
    std::vector<double> rates;                     // requests per second
    std::vector<std::vector<double>> median_ttft;  // (policies, rates) seconds
};

inline Summary simulate(std::span<const Request> requests, const Policy& policy,
                        const MemoryBudget& budget, const CostModel& cost) {
    SimulatedExecutor executor(cost);
    return summarize(run_schedule(requests, policy, budget, executor));
}

inline RateSweep sweep_rates(WorkloadOptions workload, const std::vector<Policy>& policies,
                             const MemoryBudget& budget, const CostModel& cost) {
    RateSweep sweep;
    workload.rate = 0;
    const std::vector<Request> at_once = make_workload(workload);
    double best = 0;
    for (const Policy& p : policies) {
        const Summary s = simulate(at_once, p, budget, cost);
        sweep.policies.push_back(p.name);
        sweep.capacity.push_back(s.total_s > 0 ? double(at_once.size()) / s.total_s : 0);
        best = std::max(best, sweep.capacity.back());
    }
    sweep.median_ttft.resize(policies.size());
    for (int tenth = 1; tenth <= 12; ++tenth) {
        workload.rate = best * tenth / 10.0;
        if (!(workload.rate > 0)) break;
        sweep.rates.push_back(workload.rate);
        const std::vector<Request> arriving = make_workload(workload);
        for (std::size_t i = 0; i < policies.size(); ++i)
            sweep.median_ttft[i].push_back(
                simulate(arriving, policies[i], budget, cost).ttft_median);
    }
    return sweep;
}

}  // namespace kv
