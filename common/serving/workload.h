// Chapter 05: the workload, the people in the queue, and the one record
// that follows each of them through the server.
//
// Each request brings a prompt and will receive an answer. The server
// learns the answer's length only when the model stops, so it plans with
// the cap the client asked for (max_new_tokens). Lengths come from seeded
// draws of kv::Rng and + - * / only: a seed gives the same queue on every
// machine and standard library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../core/rng.h"

namespace kv {

// Where a request is in the server.
enum class RequestStatus {
    waiting,     // in the queue: arrived, or sent back by a preemption
    prefilling,  // admitted, its memory taken; its prompt (and answer so far) still to compute
    decoding,    // in the batch, one more answer token at every decode step
    finished,    // every answer token out (static batching runs its row on as padding)
};

// One request: what the workload drew, and all that the server does with
// it. The scheduler, the executors, the memory manager and the metrics read
// and write this one record (nano-vllm's Sequence).
struct Request {
    // What the workload drew, fixed from the start.
    int id = 0;            // position in the workload, drawn in order of arrival_s (a
                           // follow-up may arrive after higher ids): requests[id].id == id
    double arrival_s = 0;  // when it reaches the server (see `after`)
    int prompt_len = 1;    // tokens in its prompt
    int answer_len = 1;    // tokens it will receive; unknown to the scheduler until it stops
    int answer_cap = 1;    // most tokens it may receive; what the server plans with
    int after = -1;        // the earlier request it follows, -1: none. A conversation's
                           // next turn sends the answer before it back, so it arrives at
                           // the later of arrival_s and that answer's last token; the
                           // scheduler writes that moment into arrival_s, and its time
                           // to first token counts from it

    // Its state in the server.
    RequestStatus status = RequestStatus::waiting;
    int cached = 0;          // positions of its sequence whose keys and values are computed
    int held = 0;            // positions of KV cache memory it holds (the memory manager's count)
    int received = 0;        // answer tokens it has received
    double admitted_s = -1;  // its first prefill began
    double first_token_s = -1;   // its first answer token came out
    double last_token_s = -1;    // its latest answer token came out
    double finished_s = -1;      // its last answer token came out
    std::vector<int> token_ids;  // prompt, then answer so far: the real engine's (the
                                 // simulator knows how many tokens, not which)

    // Tokens of its sequence so far: the prompt, then every answer token received.
    int length() const { return prompt_len + received; }
};

// The positions a request's cache may come to hold: its prompt, and every
// answer token up to the cap but the last, which is produced, never fed back.
inline std::uint64_t longest_context(const Request& r) {
    return std::uint64_t(r.prompt_len) + std::uint64_t(r.answer_cap) - 1;
}

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

// The queue, in arrival order, every request still waiting (the options
// checked by the chapter: check_queue).
inline std::vector<Request> make_workload(const WorkloadOptions& w) {
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
