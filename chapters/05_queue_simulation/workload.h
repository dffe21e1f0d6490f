// Chapter 05: the workload, the people in the queue.
//
// Each request brings a prompt and will receive an answer. The server
// learns the answer's length only when the model stops, so it plans with
// the cap the client asked for (max_new_tokens in a real API), not with
// the length itself. Lengths come from seeded draws of kv::Rng, built from
// integer arithmetic and + - * / only, so a seed gives the same queue on
// every machine and standard library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../common/kit/flags.h"
#include "../../common/kit/report.h"
#include "../../common/core/rng.h"

namespace kv {

struct Request {
    int id = 0;            // position in arrival order: requests[id].id == id
    double arrival_s = 0;  // when it reaches the server
    int prompt_len = 1;    // tokens in its prompt
    int answer_len = 1;    // tokens it will receive; unknown to the scheduler until it stops
    int answer_cap = 1;    // most tokens it may receive; what the server plans with
};

struct WorkloadOptions {
    int requests = 1000;  // how many people are in the queue
    int prompt_min = 8;   // prompt lengths: uniform in [min, max]
    int prompt_max = 64;
    int answer_len = 48;                    // mean answer length before the cap
    int answer_max = 192;                   // the cap (max_new_tokens)
    std::string answer_dist = "geometric";  // "geometric" (many short, a few long) or "uniform"
    double rate = 0;                        // requests per second (Poisson); 0: all at time 0
    std::uint64_t seed = 1;
};

// Throws UsageError naming the flag if the options cannot make a workload
// for a model whose context holds max_seq positions.
inline void check_workload(const WorkloadOptions& w, int max_seq) {
    auto need = [](bool ok, const std::string& message) {
        if (!ok) throw UsageError(message);
    };
    need(w.requests >= 1, "--requests must be at least 1, got " + std::to_string(w.requests));
    need(w.prompt_min >= 1, "--prompt-min must be at least 1, got " + std::to_string(w.prompt_min));
    need(w.prompt_max >= w.prompt_min, "--prompt-max " + std::to_string(w.prompt_max) +
                                           " is below --prompt-min " +
                                           std::to_string(w.prompt_min));
    need(w.answer_len >= 1, "--answer-len must be at least 1, got " + std::to_string(w.answer_len));
    need(w.answer_max >= w.answer_len, "--answer-max " + std::to_string(w.answer_max) +
                                           " is below the mean --answer-len " +
                                           std::to_string(w.answer_len));
    need(w.answer_dist == "geometric" || w.answer_dist == "uniform",
         "--answer-dist must be geometric or uniform, got " + w.answer_dist);
    if (w.answer_dist == "uniform")
        need(2 * w.answer_len - 1 <= w.answer_max,
             "--answer-dist uniform draws from 1 to 2 x --answer-len - 1 = " +
                 std::to_string(2 * w.answer_len - 1) + ", above --answer-max " +
                 std::to_string(w.answer_max));
    need(w.rate >= 0, "--rate must not be negative, got " + json_number(w.rate));
    // The cache holds prompt + answer - 1 positions (the last answer token is
    // produced, never fed back), so that is what must fit in the context.
    need(w.prompt_max + w.answer_max - 1 <= max_seq,
         "--prompt-max " + std::to_string(w.prompt_max) + " + --answer-max " +
             std::to_string(w.answer_max) + " - 1 exceeds the model's --max-seq " +
             std::to_string(max_seq));
}

// ln(x) for x in (0, 1], from + - * / only. std::log may differ in its last
// bit between math libraries, and a different bit could reorder two
// arrivals; this series cannot. x = m * 2^e with m in [1/2, 1), and
// ln(m) = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...) with s = (m-1)/(m+1).
inline double portable_log(double x) {
    int e = 0;
    while (x < 0.5) {
        x *= 2;  // exact: only the exponent changes
        --e;
    }
    const double s = (x - 1) / (x + 1), s2 = s * s;  // |s| <= 1/3: 30 terms are plenty
    double term = s, sum = 0;
    for (int k = 1; k < 60; k += 2) {
        sum += term / k;
        term *= s2;
    }
    return 2 * sum + e * 0.69314718055994530942;
}

// A Poisson stream has exponential gaps between arrivals: -ln(U) / rate.
inline double exponential_gap(Rng& rng, double rate) {
    const double u = 1.0 - static_cast<double>(rng.next_u64() >> 11) * 0x1.0p-53;  // (0, 1]
    return -portable_log(u) / rate;
}

// Geometric answer lengths: after each token the model stops with
// probability 1/mean, so most answers are short and a few are long; the
// cap cuts the longest tail. One integer comparison per token.
inline int geometric_length(Rng& rng, int mean, int cap) {
    const double keep_going = 1.0 - 1.0 / mean;
    const auto threshold = static_cast<std::uint64_t>(keep_going * 0x1.0p64);  // exact below 1
    int n = 1;
    while (n < cap && rng.next_u64() < threshold) ++n;
    return n;
}

// The queue, in arrival order.
inline std::vector<Request> make_workload(const WorkloadOptions& w, int max_seq) {
    check_workload(w, max_seq);
    Rng rng(w.seed ^ 0x51D0C0DEull);  // apart from the weights drawn from the same --seed
    std::vector<Request> requests(static_cast<std::size_t>(w.requests));
    double clock = 0;
    for (int i = 0; i < w.requests; ++i) {
        Request& r = requests[static_cast<std::size_t>(i)];
        r.id = i;
        if (w.rate > 0) clock += exponential_gap(rng, w.rate);
        r.arrival_s = clock;
        r.prompt_len = w.prompt_min + static_cast<int>(rng.below(w.prompt_max - w.prompt_min + 1));
        r.answer_cap = w.answer_max;
        r.answer_len = w.answer_dist == "uniform"
                           ? 1 + static_cast<int>(rng.below(2 * std::uint64_t(w.answer_len) - 1))
                           : geometric_length(rng, w.answer_len, w.answer_max);
    }
    return requests;
}

}  // namespace kv
