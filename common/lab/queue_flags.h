// The flags every queue chapter shares (05, 07, 08, 09): the queue's
// lengths and arrivals, the batch, the KV cache's memory and how steps are
// priced; their check; and the step cost they ask for.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "../core/config.h"
#include "../kit/flags.h"
#include "../kit/report.h"  // Cell, Json
#include "../serving/memory_budget.h"
#include "../serving/workload.h"
#include "calibration.h"

namespace kv {

struct QueueOptions {
    WorkloadOptions workload;             // 1,000 requests at time 0 (serving/workload.h)
    int batch = 32;                       // most requests running at once
    std::uint64_t kv_budget_mib = 16;     // memory for all KV caches
    std::string cost_model = "measured";  // this machine's fitted prices, or "analytic"
    bool calibrate = false;               // measure the machine again, even if saved
};

// --requests --prompt-min --prompt-max --answer-len --answer-max
// --answer-dist --rate --batch --kv-budget-mib --cost-model --calibrate
void add_queue_flags(Flags& flags, QueueOptions& q);

// Every value checked, the first bad one a UsageError naming its flag.
void check_queue(const Config& c, const QueueOptions& q);

// Most answer tokens a queue may hold (--requests x --answer-len): the
// simulator keeps each gap between two tokens, so 100 million hold at most
// 2.5 GiB (simulation_bytes) and take chapter 05's six policies tens of
// seconds, with progress on a terminal.
inline constexpr std::uint64_t kMostQueueTokens = 100'000'000;

// Bytes the simulator holds at most for a queue of `requests` and
// `answer_tokens` in all.
std::uint64_t simulation_bytes(std::uint64_t requests, std::uint64_t answer_tokens);

// Empty if the queue's answer tokens are at most kMostQueueTokens and their
// records fit in half this machine's memory; else the refusal, one line
// naming --requests and --answer-len.
std::string beyond_simulation(const WorkloadOptions& w);

// Refuses, in one line naming --requests and `why`, a queue whose prompts'
// token ids (at most `tokens_each` a request, as `why` says) pass
// kMostQueueTokens or half this machine's memory: chapters 08 and 11 keep
// every request's whole prompt, histories included.
void check_prompt_tokens(const WorkloadOptions& w, std::uint64_t tokens_each,
                         const std::string& why);

// A KV budget of `mib` MiB (named by `flag`) in blocks of --block-size
// positions: its blocks, checked to be countable by an int, to hold a
// request of `longest` positions alone (or it would wait forever) and, where
// the pool is `allocated` for real, to fit in half this machine's memory;
// the first that fails is a UsageError naming the flags.
int check_blocks(const Config& c, const std::string& flag, std::uint64_t mib, int block_size,
                 int longest, bool allocated);

// The requests, drawn with the run's seed.
WorkloadOptions workload_of(const QueueOptions& q, std::uint64_t seed);

// The step cost the simulator prices with: counted, or this machine's.
StepCalibration price_steps(const Config& c, std::uint64_t seed, const QueueOptions& q);

// The options and what the draw gave: "1,000 requests all at time 0 (seed
// 1); prompts uniform in 8..64 tokens (mean 35.7); answers geometric around
// 48, capped at 192 (mean 44.5, longest 192)", and the same as a JSON object.
Cell workload_cell(const WorkloadOptions& w, std::span<const Request> requests);
std::string describe_workload(const WorkloadOptions& w, std::span<const Request> requests);

// The step cost as a report shows it, two lines: where its prices came from
// and, when measured, how well the formula fits the steps it timed; then the
// formula with its five prices. As JSON: numbers (seconds; the fit error a
// fraction), the one writer of the prices in a report.
Cell step_cost_cell(const StepCalibration& pricing);
std::string step_cost_text(const StepCalibration& pricing);  // "step cost: " and the cell's text
Json step_cost_json(const StepCalibration& pricing);

}  // namespace kv
