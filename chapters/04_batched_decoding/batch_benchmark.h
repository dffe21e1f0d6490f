// Timing a decode step at one batch size after another, on one ragged set
// of sequences, as make bench times its steps, and checking each batch
// against the sequences decoded alone.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../common/core/batched_decoding.h"
#include "../../common/core/cached_decoding.h"
#include "../../common/core/generation.h"
#include "../../common/core/rng.h"
#include "../../common/core/timing.h"
#include "arithmetic_intensity.h"

namespace kv {

// `count` seeded prompts whose lengths are drawn uniformly from 1..longest:
// a ragged batch, each sequence at its own position.
inline std::vector<std::vector<int>> ragged_prompts(int count, int longest, int vocab_size,
                                                    std::uint64_t seed) {
    Rng lengths(seed ^ 0xBA7C4ED0ull);
    std::vector<std::vector<int>> prompts;
    for (int i = 0; i < count; ++i) {
        const int length = 1 + static_cast<int>(lengths.below(std::uint64_t(longest)));
        prompts.push_back(fixed_prompt(length, vocab_size, seed + 1 + std::uint64_t(i)));
    }
    return prompts;
}

struct BatchTiming {
    int batch = 0;              // sequences decoded together
    double step_seconds = 0;    // the fastest timed decode step for the whole batch
    StepArithmetic arithmetic;  // of that step

    double seconds_per_token() const { return step_seconds / batch; }
    double tokens_per_second() const { return batch / step_seconds; }
};

// The batch size with the most tokens per second.
inline const BatchTiming& best_throughput(const std::vector<BatchTiming>& timings) {
    return *std::ranges::max_element(timings, {}, &BatchTiming::tokens_per_second);
}

// Where these kernels stop waiting for weights: the roofline's ridge with
// their own measured rates (batch 1's weight stream, the best arithmetic of
// any batch) in place of the machine's. At B/2 FLOPs per byte, the batch
// there is about twice the ratio.
struct Ridge {
    double bytes_per_second = 0;  // weights streamed at batch 1
    double flops_per_second = 0;  // the best arithmetic rate of any batch
    int at_batch = 0;             // the batch that reached it

    double flops_per_byte() const { return flops_per_second / bytes_per_second; }
    double batch() const { return 2 * flops_per_byte(); }
};

inline Ridge ridge_point(const std::vector<BatchTiming>& timings) {
    Ridge ridge;
    ridge.bytes_per_second = timings.front().arithmetic.weight_bytes / timings.front().step_seconds;
    for (const BatchTiming& t : timings) {
        const double rate = t.arithmetic.flops() / t.step_seconds;
        if (rate > ridge.flops_per_second) ridge.flops_per_second = rate, ridge.at_batch = t.batch;
    }
    return ridge;
}

// Sees the logits of every decode step (row i: sequence i), untimed; told
// as each round of the bench begins (0, 1, ... rounds - 1); and after each
// batch's timed steps in a round (its index in the sizes), for a probe to
// take its turn beside it.
using BatchStepCallback = std::function<void(int step, const Matrix& logits)>;
using RoundCallback = std::function<void(int round, int rounds)>;
using AfterBatchCallback = std::function<void(int batch_index)>;

// Batch sizes 1, 2, 4, ... up to max_batch (and max_batch itself).
inline std::vector<int> batch_sizes_up_to(int max_batch) {
    std::vector<int> sizes;
    for (int b = 1; b < max_batch; b *= 2) sizes.push_back(b);
    sizes.push_back(max_batch);
    return sizes;
}

// Decode steps checked against the sequences alone before the timed one,
// which comes next: kCheckedSteps + 1 steps in all, and positions.
inline constexpr int kCheckedSteps = 8;
inline constexpr int kDecodeSteps = kCheckedSteps + 1;

// How the batches are timed: as make bench times its steps (common/core/
// timing.h), the batch sizes taking turns in the rounds, so that a burst of
// other work slows a few steps of several sizes, not every step of one. A
// round of a batch stops short once its steps took a tenth of a second, so
// that the wide model's large batches (a sixth of a second a step at batch
// 64) take two steps a round, not ten; a batch-1 step of the demo width
// (under a millisecond) still gets all of its repeats, as in make bench.
inline StepSampling batch_sampling(int repeats) {
    return {.rounds = 5, .repeats = repeats, .round_seconds = 0.1};
}

// Bytes the bench holds besides the weights, checked before allocating:
// every cache three times over (prefilled, and the copies the batches
// decode), the logits kept to compare, a prefill group's scratch rows. A
// double: an estimate that cannot overflow.
inline double bench_bytes(const Config& c, int sequences, int longest_prompt, int steps) {
    const double caches =
        3.0 * sequences * double(c.kv_bytes_per_token()) * (longest_prompt + steps);
    const double logits = double(sequences) * steps * c.vocab_size * sizeof(float);
    const double rows = std::min(16, sequences) * double(longest_prompt);
    const double scratch =
        rows * (2.0 * c.ffn_dim + 6.0 * c.dim + 2.0 * c.kv_dim()) * sizeof(float);
    return caches + logits + scratch;
}

// Prefills every prompt once; a batch of size B then decodes the first B
// sequences from copies of those caches, so every batch size decodes the
// same sequences from the same positions: kCheckedSteps steps, each shown
// to the caller, then the timed step, run again and again at the same
// positions (its caches truncated back before each run).
class DecodeBench {
  public:
    DecodeBench(Transformer& model, const std::vector<std::vector<int>>& prompts,
                const StepSampling& sampling)
        : model_(model), sampling_(sampling) {
        if (sampling.rounds < 1 || sampling.repeats < 1)
            throw std::invalid_argument("DecodeBench: rounds and repeats must be at least 1");
        // Untimed, so several prompts per forward pass (the caches come out
        // as from chapter 02's prefill), in groups of 16 to bound the scratch.
        const std::size_t group = 16;
        prefilled_.reserve(prompts.size());
        for (const std::vector<int>& prompt : prompts)
            prefilled_.emplace_back(model.config(), static_cast<int>(prompt.size()) + kDecodeSteps);
        for (std::size_t first = 0; first < prompts.size(); first += group) {
            std::vector<SequenceInput> chunks;
            for (std::size_t i = first; i < std::min(prompts.size(), first + group); ++i)
                chunks.push_back({prompts[i], &prefilled_[i]});
            const Matrix& logits = model.forward(chunks);
            for (int i = 0; i < logits.rows; ++i)
                first_tokens_.push_back(argmax(logits.row_span(i)));
        }
    }

    // One batch per size in `sizes` (each at most sequences()), its checked
    // steps shown to on_step (the timed step's too, once), then every round
    // of the sampling. Returns each batch's fastest step.
    std::vector<BatchTiming> run(const std::vector<int>& sizes,
                                 const BatchStepCallback& on_step = {},
                                 const RoundCallback& on_round = {},
                                 const AfterBatchCallback& after_batch = {}) {
        batches_.clear();
        for (int batch : sizes) {
            if (batch < 1 || batch > sequences())
                throw std::invalid_argument("DecodeBench: a batch of " + std::to_string(batch) +
                                            " from " + std::to_string(sequences()) + " sequences");
        }
        for (int batch : sizes)
            batches_.push_back(std::make_unique<Running>(*this, batch, on_step));
        for (int round = 0; round < sampling_.rounds; ++round) {
            if (on_round) on_round(round, sampling_.rounds);
            for (std::size_t k = 0; k < batches_.size(); ++k) {
                const Matrix& logits = batches_[k]->sample_round(model_, sampling_);
                if (round == 0 && on_step) on_step(kCheckedSteps, logits);
                if (after_batch) after_batch(static_cast<int>(k));
            }
        }
        return timings();
    }

    // One more round of the timed steps of batch `batch_index` of the last run.
    void sample_again(int batch_index) {
        batches_.at(std::size_t(batch_index))->sample_round(model_, sampling_);
    }

    std::vector<BatchTiming> timings() const {
        std::vector<BatchTiming> all;
        for (const auto& b : batches_) all.push_back(b->result());
        return all;
    }

    int sequences() const { return static_cast<int>(prefilled_.size()); }

  private:
    // One batch: its caches decoded up to the timed step.
    struct Running {
        std::vector<KVCache> caches;    // (batch) copies of the prefilled caches
        std::vector<KVCache*> members;  // (batch) pointers to them, for decode_batch
        std::vector<int> tokens;        // (batch) the token each feeds at the timed step
        std::vector<int> lengths;       // (batch) each cache's length before the timed step
        StepArithmetic arithmetic;      // of the timed step
        StepSamples samples;            // its timed runs

        Running(const DecodeBench& bench, int batch, const BatchStepCallback& on_step)
            : caches(bench.prefilled_.begin(), bench.prefilled_.begin() + batch),
              tokens(bench.first_tokens_.begin(), bench.first_tokens_.begin() + batch) {
            for (KVCache& cache : caches) members.push_back(&cache);
            for (int step = 0; step < kCheckedSteps; ++step) {
                const Matrix& logits = decode_batch(bench.model_, tokens, members);
                if (on_step) on_step(step, logits);
                for (int i = 0; i < logits.rows; ++i) tokens[i] = argmax(logits.row_span(i));
            }
            for (const KVCache& cache : caches) lengths.push_back(cache.length());
            arithmetic = step_arithmetic(bench.model_.config(), members);
        }

        // One round of the timed step; returns the last run's logits.
        const Matrix& sample_round(Transformer& model, const StepSampling& how) {
            const Matrix* logits = nullptr;
            kv::sample_round(
                samples, how.repeats, how.round_seconds,
                [&] {
                    for (std::size_t i = 0; i < caches.size(); ++i) caches[i].truncate(lengths[i]);
                },
                [&] { logits = &decode_batch(model, tokens, members); });
            return *logits;
        }

        BatchTiming result() const {
            return {static_cast<int>(tokens.size()), samples.fastest(), arithmetic};
        }
    };

    Transformer& model_;
    StepSampling sampling_;
    std::vector<KVCache> prefilled_;  // (sequences) caches holding each prompt
    std::vector<int> first_tokens_;   // (sequences) the token each prompt's prefill chose
    std::vector<std::unique_ptr<Running>> batches_;  // of the last run, in its sizes' order
};

// The same sequences decoded one at a time with chapter 02's code, to
// compare every batched step's tokens and logits with.
class AloneReference {
  public:
    AloneReference(Transformer& model, const std::vector<std::vector<int>>& prompts, int steps)
        : steps_(steps) {
        for (const std::vector<int>& prompt : prompts) {
            // Step 0 is the prefill, then one decode step per batched step.
            std::vector<std::vector<float>>& per_step = logits_.emplace_back();
            answers_.push_back(
                generate_cached(model, prompt, steps + 1, [&](int step, std::span<const float> l) {
                    if (step > 0) per_step.emplace_back(l.begin(), l.end());
                }));
        }
    }

    // Row i of `logits` is sequence i at decode step `step` inside a batch.
    void compare(int step, const Matrix& logits) {
        if (step < 0 || step >= steps_ || logits.rows > static_cast<int>(logits_.size()))
            throw std::out_of_range("AloneReference: step " + std::to_string(step) + " of " +
                                    std::to_string(logits.rows) + " sequences not recorded");
        for (int i = 0; i < logits.rows; ++i) {
            const std::vector<float>& alone = logits_[i][step];
            largest_ = larger_difference(largest_, max_abs_difference(logits.row_span(i), alone));
            same_tokens_ = same_tokens_ && argmax(logits.row_span(i)) == argmax(alone);
            ++rows_compared_;
        }
    }

    // Sequence i's answer decoded alone: its first token and one per step.
    const std::vector<int>& answer(int i) const { return answers_.at(std::size_t(i)); }
    double largest_difference() const { return largest_; }
    bool same_tokens() const { return same_tokens_; }
    long rows_compared() const { return rows_compared_; }

  private:
    int steps_;
    std::vector<std::vector<std::vector<float>>> logits_;  // (sequence, step, vocab)
    std::vector<std::vector<int>> answers_;                // (sequence, 1 + step)
    double largest_ = 0;
    bool same_tokens_ = true;
    long rows_compared_ = 0;
};

}  // namespace kv
