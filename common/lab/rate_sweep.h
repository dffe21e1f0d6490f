// Chapter 05: arrival rate, where the queue turns unstable.
//
// With everyone queued at time zero the server never idles, so requests
// served per second of that run is the policy's capacity. Below capacity
// continuous batching keeps up: a request arriving now waits about one
// prefill plus one step. A serial server waits longer even below its
// capacity, because arrivals bunch up: it is an M/G/1 queue (Poisson
// arrivals, one server, service times of any distribution), and the
// Pollaczek-Khinchine formula gives its mean wait before service,
//   W = lambda E[S^2] / (2 (1 - rho)),   rho = lambda E[S] < 1,
// with S one request's service time (its prefill and every decode step of
// its answer, priced by the cost model). Above capacity the queue grows
// without end, and each new arrival waits longer than the one before.
// The sweep replays the queue at rates from a tenth to 1.2 times the best
// capacity. Every rate above 0 draws the same lengths: the arrival gap
// takes one draw per request whatever the rate, which only scales it.
#pragma once

#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "../serving/cost_model.h"
#include "../serving/metrics.h"
#include "../serving/scheduler.h"
#include "../serving/workload.h"

namespace kv {

// One request's service time alone on a serial server with the cache: its
// prefill, then one decode step of one sequence per answer token after the
// first, priced as the simulated executor prices them.
inline double serial_service_seconds(const CostModel& cost, const Request& r) {
    double s = cost.prefill_seconds(r.prompt_len) * cost.prefill_scale;
    for (int made = 1; made < r.answer_len; ++made)
        s += cost.decode_seconds(1, r.prompt_len + made - 1) * cost.single_step_scale;
    return s;
}

struct ServiceMoments {
    double mean = 0;         // E[S], seconds
    double mean_square = 0;  // E[S^2], seconds^2
};

inline ServiceMoments serial_service_moments(const CostModel& cost,
                                             std::span<const Request> requests) {
    ServiceMoments m;
    for (const Request& r : requests) {
        const double s = serial_service_seconds(cost, r);
        m.mean += s;
        m.mean_square += s * s;
    }
    const double n = double(requests.empty() ? 1 : requests.size());
    return {m.mean / n, m.mean_square / n};
}

// Pollaczek-Khinchine: the mean wait before service in an M/G/1 queue at
// `rate` arrivals per second; infinite at or above capacity (rho >= 1).
inline double mg1_mean_wait(double rate, const ServiceMoments& s) {
    const double rho = rate * s.mean;
    if (!(rho < 1)) return std::numeric_limits<double>::infinity();
    return rate * s.mean_square / (2 * (1 - rho));
}

// Mean time from arrival to the start of a request's first prefill.
inline double mean_wait(const Schedule& s) {
    double sum = 0;
    for (const Request& r : s.requests) sum += r.admitted_s - r.arrival_s;
    return s.requests.empty() ? 0 : sum / double(s.requests.size());
}

struct RateSweep {
    std::vector<std::string> policies;
    std::vector<double> capacity;                  // (policies) requests per second
    std::vector<double> rates;                     // requests per second
    std::vector<std::vector<double>> median_ttft;  // (policies, rates) seconds
    std::vector<double> serial_mean_wait;          // (rates) the first policy's, simulated
    std::vector<double> mg1_wait;                  // (rates) Pollaczek-Khinchine; inf if unstable
    ServiceMoments service;                        // serial service with the cache, this queue
};

inline Summary simulate(std::span<const Request> requests, const Policy& policy,
                        const MemoryBudget& budget, const CostModel& cost) {
    SimulatedExecutor executor(cost);
    return summarize(run_schedule(requests, policy, budget, executor));
}

// The rates swept: a tenth of the capacity, two tenths, ... up to 1.2 times it.
inline constexpr int kRateSteps = 12;

// policies[0] should be serial service with the cache: its simulated mean
// wait is shown beside the M/G/1 prediction.
// on_simulation(0, of) first, then after each whole-queue simulation
// on_simulation(done, of): ten million requests take a minute a simulation,
// and the sweep runs 39 of them for three policies (at once, then each rate).
inline RateSweep sweep_rates(WorkloadOptions workload, const std::vector<Policy>& policies,
                             const MemoryBudget& budget, const CostModel& cost,
                             const std::function<void(int, int)>& on_simulation = {}) {
    RateSweep sweep;
    const int simulations = int(policies.size()) * (1 + kRateSteps);  // at once, then each rate
    int done = 0;
    if (on_simulation) on_simulation(done, simulations);
    auto simulated = [&] {
        if (on_simulation) on_simulation(++done, simulations);
    };
    workload.rate = 0;
    const std::vector<Request> at_once = make_workload(workload);
    double best = 0;
    for (const Policy& p : policies) {
        const Summary s = simulate(at_once, p, budget, cost);
        simulated();
        sweep.policies.push_back(p.name);
        sweep.capacity.push_back(s.total_s > 0 ? double(at_once.size()) / s.total_s : 0);
        best = std::max(best, sweep.capacity.back());
    }
    sweep.median_ttft.resize(policies.size());
    for (int tenth = 1; tenth <= kRateSteps; ++tenth) {
        workload.rate = best * tenth / 10.0;
        if (!(workload.rate > 0)) break;
        sweep.rates.push_back(workload.rate);
        const std::vector<Request> arriving = make_workload(workload);
        if (tenth == 1) sweep.service = serial_service_moments(cost, arriving);
        for (std::size_t i = 0; i < policies.size(); ++i) {
            SimulatedExecutor executor(cost);
            const Schedule s = run_schedule(arriving, policies[i], budget, executor);
            sweep.median_ttft[i].push_back(summarize(s).ttft_median);
            if (i == 0) sweep.serial_mean_wait.push_back(mean_wait(s));
            simulated();
        }
        sweep.mg1_wait.push_back(mg1_mean_wait(workload.rate, sweep.service));
    }
    return sweep;
}

}  // namespace kv
