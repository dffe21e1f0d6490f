#include "queue_flags.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "../core/block_pool.h"
#include "../kit/machine.h"  // beyond_memory
#include "../kit/model_flags.h"
#include "../kit/report.h"  // json_number

namespace kv {

void add_queue_flags(Flags& flags, QueueOptions& q) {
    WorkloadOptions& w = q.workload;
    // The simulator keeps every request and every gap between two tokens (the
    // percentiles need them all): check_queue bounds what they may hold.
    flags.add("requests", w.requests, 1, 1'000'000,
              "requests in the queue (past 100,000: slow; with --answer-len, at most "
              "100,000,000 answer tokens in all)");
    flags.add("prompt-min", w.prompt_min, 1, 1 << 20, "shortest prompt (uniform lengths)");
    flags.add("prompt-max", w.prompt_max, 1, 1 << 20, "longest prompt");
    flags.add("answer-len", w.answer_len, 1, 1 << 20, "mean answer length before the cap");
    flags.add("answer-max", w.answer_max, 1, 1 << 20, "answer cap (max_new_tokens)");
    flags.add_choice("answer-dist", w.answer_dist, {"geometric", "uniform"},
                     "geometric (many short, a few long) or uniform in 1..2 x mean - 1");
    flags.add("rate", w.rate, 0.0, 1e9, "Poisson arrivals per second; 0: all at time 0");
    flags.add("batch", q.batch, 1, 4096, "most requests running at once");
    flags.add("kv-budget-mib", q.kv_budget_mib, 1, 1 << 30, "memory for all KV caches, MiB");
    flags.add_choice("cost-model", q.cost_model, {"measured", "analytic"},
                     "price steps by this machine's calibration, or by counting operations "
                     "(the same numbers everywhere)");
    flags.add("calibrate", q.calibrate,
              "measure this machine's step cost again (it is measured once and saved under "
              "build/calibration/)");
}

void check_queue(const Config& c, const QueueOptions& q) {
    auto need = [](bool ok, const std::string& message) {
        if (!ok) throw UsageError(message);
    };
    const WorkloadOptions& w = q.workload;
    // The flags' ranges say 1.. already; a program that sets the members itself is checked too.
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
    // Before anything is drawn: the draw itself takes one step per answer token.
    if (const std::string over = beyond_simulation(w); !over.empty()) throw UsageError(over);
    need(q.batch >= 1, "--batch must be at least 1, got " + std::to_string(q.batch));
    // The cache holds prompt + answer - 1 positions (the last answer token
    // is produced, never fed back), so that is what must fit in the context.
    need(std::int64_t(w.prompt_max) + w.answer_max - 1 <= c.max_seq,
         "--prompt-max " + std::to_string(w.prompt_max) + " + --answer-max " +
             std::to_string(w.answer_max) + " - 1 exceeds the model's --max-seq " +
             std::to_string(c.max_seq));
    // The clock, a double in seconds, keeps whole microseconds up to 2^52 of them.
    if (w.rate > 0) {
        const double last = make_workload(workload_of(q, 1)).back().arrival_s;
        need(std::isfinite(last) && last < 0x1p52 * 1e-6,
             "--rate " + json_number(w.rate) + " spreads " + std::to_string(w.requests) +
                 " arrivals over " +
                 (std::isfinite(last) ? json_number(last) + " s" : "more than 1e308 s") +
                 ": beyond 4.5e9 s the clock cannot keep microseconds");
    }
    // --calibrate measures the machine again; analytic prices measure nothing,
    // so the two together would leave --calibrate doing nothing.
    need(!(q.calibrate && q.cost_model == "analytic"),
         "--calibrate measures this machine's step cost again, and --cost-model analytic "
         "measures nothing: give one of them");
    // The calibration runs the model with its caches; analytic runs nothing.
    if (q.cost_model == "measured")
        check_model(c, calibration_positions(c),
                    std::uint64_t(kMostCalibratedBatch) + std::uint64_t(kLargestCalibratedChunk));
    else
        check_model(c, 0);
}

std::uint64_t simulation_bytes(std::uint64_t requests, std::uint64_t answer_tokens) {
    // Per answer token: its gap in a vector that may have grown to twice its
    // size, and the sorted copy the percentiles read. Per request: the queue's
    // record, the schedule's copy and its times to first token.
    return answer_tokens * 3 * sizeof(double) + requests * (2 * sizeof(Request) + sizeof(double));
}

std::string beyond_simulation(const WorkloadOptions& w) {
    // --answer-len is the mean before the cap, so no draw's mean is larger.
    const std::uint64_t tokens = std::uint64_t(w.requests) * std::uint64_t(w.answer_len);
    const std::uint64_t bytes = simulation_bytes(std::uint64_t(w.requests), tokens);
    const std::string what = "--requests " + std::to_string(w.requests) + " x --answer-len " +
                             std::to_string(w.answer_len) + " is about " + with_commas(tokens) +
                             " answer tokens, whose gaps the simulator keeps one by one (" +
                             format_bytes(bytes) + ")";
    if (tokens > kMostQueueTokens)
        return what + ": it keeps at most " + with_commas(kMostQueueTokens) + " (" +
               format_bytes(simulation_bytes(std::uint64_t(w.requests), kMostQueueTokens)) + ")";
    if (const std::string over = beyond_memory(double(bytes), 0.5); !over.empty())
        return what + ": that would be " + over;
    return "";
}

void check_prompt_tokens(const WorkloadOptions& w, std::uint64_t tokens_each,
                         const std::string& why) {
    const std::uint64_t tokens = std::uint64_t(w.requests) * tokens_each;
    const double bytes = double(tokens) * sizeof(int);
    const std::string what = "--requests " + std::to_string(w.requests) + " prompts of up to " +
                             with_commas(tokens_each) + " tokens (" + why + ") are up to " +
                             with_commas(tokens) + " token ids, each kept (" +
                             format_bytes(std::uint64_t(bytes)) + ")";
    if (tokens > kMostQueueTokens)
        throw UsageError(what + ": a queue keeps at most " + with_commas(kMostQueueTokens));
    if (const std::string over = beyond_memory(bytes, 0.5); !over.empty())
        throw UsageError(what + ": that would be " + over);
}

int check_blocks(const Config& c, const std::string& flag, std::uint64_t mib, int block_size,
                 int longest, bool allocated) {
    if (block_size > c.max_seq)
        throw UsageError("--block-size " + std::to_string(block_size) +
                         " is longer than the model's --max-seq " + std::to_string(c.max_seq));
    const std::string budget = flag + " " + std::to_string(mib);
    const std::uint64_t blocks = (mib << 20) / BlockPool::bytes_per_block(c, block_size);
    if (blocks > std::uint64_t(std::numeric_limits<int>::max()))
        throw UsageError(budget + " makes more blocks than a block table can count");
    if (const int need = blocks_for(longest, block_size); blocks < std::uint64_t(need))
        throw UsageError(budget + " holds " + std::to_string(blocks) + " blocks of " +
                         std::to_string(block_size) + " positions; the longest request needs " +
                         std::to_string(need));
    if (const std::string over = beyond_memory(double(mib << 20), 0.5); allocated && !over.empty())
        throw UsageError(budget + " MiB of blocks would be " + over);
    return int(blocks);
}

WorkloadOptions workload_of(const QueueOptions& q, std::uint64_t seed) {
    WorkloadOptions w = q.workload;
    w.seed = seed;
    return w;
}

StepCalibration price_steps(const Config& c, std::uint64_t seed, const QueueOptions& q) {
    if (q.cost_model != "analytic") return machine_step_cost(c, seed, q.calibrate);
    StepCalibration counted;
    counted.cost = analytic_step_cost(c);
    return counted;
}

Cell workload_cell(const WorkloadOptions& w, std::span<const Request> requests) {
    double prompt = 0, answer = 0;
    int longest = 0;
    for (const Request& r : requests) {
        prompt += r.prompt_len;
        answer += r.answer_len;
        longest = std::max(longest, r.answer_len);
    }
    const double n = double(std::max<std::size_t>(requests.size(), 1));
    const std::string text =
        with_commas(requests.size()) + " requests " +
        (w.rate > 0 ? "arriving at " + json_number(w.rate) + " per second (Poisson)"
                    : std::string("all at time 0")) +
        " (seed " + std::to_string(w.seed) + "); prompts uniform in " +
        std::to_string(w.prompt_min) + ".." + std::to_string(w.prompt_max) + " tokens (mean " +
        fixed(prompt / n, 1) + "); answers " + w.answer_dist + " around " +
        std::to_string(w.answer_len) + ", capped at " + std::to_string(w.answer_max) + " (mean " +
        fixed(answer / n, 1) + ", longest " + std::to_string(longest) + ")";
    return Cell::with_json(text, Json()
                                     .add("requests", std::uint64_t(requests.size()))
                                     .add("rate", w.rate)
                                     .add("seed", w.seed)
                                     .add("prompt_min", w.prompt_min)
                                     .add("prompt_max", w.prompt_max)
                                     .add("prompt_mean", prompt / n)
                                     .add("answer_dist", w.answer_dist)
                                     .add("answer_len", w.answer_len)
                                     .add("answer_max", w.answer_max)
                                     .add("answer_mean", answer / n)
                                     .add("answer_longest", longest)
                                     .str());
}

std::string describe_workload(const WorkloadOptions& w, std::span<const Request> requests) {
    return "workload: " + workload_cell(w, requests).text;
}

namespace {

// A price in seconds, three figures in its own unit: from ns to ms.
std::string price_text(double seconds) {
    if (seconds == 0) return "0";
    const auto [scale, unit] = seconds < 1e-6   ? std::pair{1e9, " ns"}
                               : seconds < 1e-3 ? std::pair{1e6, " us"}
                                                : std::pair{1e3, " ms"};
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g%s", seconds * scale, unit);
    return buf;
}

}  // namespace

Cell step_cost_cell(const StepCalibration& pricing) {
    const StepCost& s = pricing.cost;
    std::string text = s.source;
    if (!pricing.probes.empty()) {
        auto error = [](const StepProbe& p) { return std::fabs(p.fitted / p.seconds - 1); };
        const StepProbe& worst = *std::max_element(
            pricing.probes.begin(), pricing.probes.end(),
            [&](const StepProbe& a, const StepProbe& b) { return error(a) < error(b); });
        text += "; " + std::to_string(pricing.probes.size()) + " steps timed in " +
                format_duration(pricing.seconds) + ", largest fit error " +
                fixed(100 * s.fit_error, 1) + "% (" + worst.what + ": measured " +
                price_text(worst.seconds) + ", formula " + price_text(worst.fitted) + ")";
    }
    text += "\n  a step = " + price_text(s.fixed) + " + " + price_text(s.per_row) + " x rows + " +
            price_text(s.per_sequence) + " x sequences + " + price_text(s.per_pair) +
            " x pairs + " + price_text(s.per_position) + " x positions";
    return Cell::with_json(text, step_cost_json(pricing).str());
}

std::string step_cost_text(const StepCalibration& pricing) {
    return "step cost: " + step_cost_cell(pricing).text + "\n";
}

Json step_cost_json(const StepCalibration& pricing) {
    const StepCost& s = pricing.cost;
    Json j = Json()
                 .add("source", s.source)
                 .add("fixed_s", s.fixed)
                 .add("per_row_s", s.per_row)
                 .add("per_sequence_s", s.per_sequence)
                 .add("per_pair_s", s.per_pair)
                 .add("per_position_s", s.per_position);
    if (!pricing.probes.empty())
        j.add("max_fit_error", s.fit_error)
            .add("steps_timed", std::uint64_t(pricing.probes.size()))
            .add("calibration_seconds", pricing.seconds)
            .add("reused", pricing.reused)
            .add("saved_in", pricing.path);
    return j;
}

}  // namespace kv
