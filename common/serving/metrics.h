// Chapter 05: metrics, what the people in the queue experienced.
//
// time to first token (TTFT): from arrival until the first answer token,
//   the wait a user feels before anything happens;
// end-to-end latency: from arrival until the last answer token;
// time between tokens (TBT): each gap between two tokens of one answer,
//   the stutter a reader of a streamed answer sees (a mean hides it);
// throughput: answer tokens per second for the whole server;
// mean batch: requests a decode step served, on average.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "scheduler.h"
#include "workload.h"

namespace kv {

// The q-quantile of sorted values by nearest rank: the smallest value with
// at least q of all values at or below it. Always one of the values.
inline double percentile(std::span<const double> sorted, double q) {
    if (sorted.empty()) return 0;
    const double rank = std::ceil(q * double(sorted.size()));
    const std::size_t i = std::size_t(std::clamp(rank, 1.0, double(sorted.size()))) - 1;
    return sorted[i];
}

// Every request's time to first token, sorted.
inline std::vector<double> sorted_ttfts(const Schedule& s) {
    std::vector<double> t;
    t.reserve(s.requests.size());
    for (const Request& r : s.requests) t.push_back(r.first_token_s - r.arrival_s);
    std::sort(t.begin(), t.end());
    return t;
}

struct Summary {
    double ttft_median = 0, ttft_p90 = 0, ttft_p99 = 0, ttft_max = 0, ttft_mean = 0;
    double latency_median = 0, latency_p99 = 0;  // arrival to last token
    double time_per_token = 0;  // mean over requests of (last - first token) / (tokens - 1)
    double tbt_median = 0, tbt_p90 = 0, tbt_p99 = 0, tbt_max = 0;  // over every gap
    double tokens_per_second = 0;  // every answer token / total time
    double total_s = 0;            // first arrival to last token
    double mean_batch = 0;         // rows that produced a wanted token, per decode step
    double padding_share = 0;      // static batching: share of rows computed for nothing
    std::int64_t answer_tokens = 0;
    std::int64_t preemptions = 0;
};

inline Summary summarize(const Schedule& s) {
    Summary m;
    const std::span<const Request> requests = s.requests;
    const std::vector<double> ttft = sorted_ttfts(s);
    std::vector<double> latency(requests.size());
    double ttft_sum = 0, per_token_sum = 0;
    int streamed = 0;  // requests with more than one token
    for (std::size_t i = 0; i < requests.size(); ++i) {
        const Request& r = requests[i];
        latency[i] = r.finished_s - r.arrival_s;
        ttft_sum += r.first_token_s - r.arrival_s;
        m.answer_tokens += r.received;
        if (r.received > 1) {
            per_token_sum += (r.finished_s - r.first_token_s) / (r.received - 1);
            ++streamed;
        }
    }
    std::sort(latency.begin(), latency.end());
    m.ttft_median = percentile(ttft, 0.5);
    m.ttft_p90 = percentile(ttft, 0.9);
    m.ttft_p99 = percentile(ttft, 0.99);
    m.ttft_max = ttft.empty() ? 0 : ttft.back();
    m.ttft_mean = ttft_sum / double(std::max<std::size_t>(requests.size(), 1));
    m.latency_median = percentile(latency, 0.5);
    m.latency_p99 = percentile(latency, 0.99);
    m.time_per_token = streamed ? per_token_sum / streamed : 0;
    std::vector<double> gaps = s.token_gaps;
    std::sort(gaps.begin(), gaps.end());
    m.tbt_median = percentile(gaps, 0.5);
    m.tbt_p90 = percentile(gaps, 0.9);
    m.tbt_p99 = percentile(gaps, 0.99);
    m.tbt_max = gaps.empty() ? 0 : gaps.back();
    m.total_s = requests.empty() ? 0 : s.end_s - requests.front().arrival_s;
    m.tokens_per_second = m.total_s > 0 ? double(m.answer_tokens) / m.total_s : 0;
    m.mean_batch = s.decode_steps ? double(s.decode_rows) / double(s.decode_steps) : 0;
    const double rows = double(s.decode_rows + s.padding_rows);
    m.padding_share = rows > 0 ? double(s.padding_rows) / rows : 0;
    m.preemptions = s.preemptions;
    return m;
}

}  // namespace kv
