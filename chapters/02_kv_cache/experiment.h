// Chapter 02's experiment: the same answer decoded naively and with the
// cache, both timed on the same model, and their logits compared.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "../../common/core/cached_decoding.h"
#include "../../common/core/generation.h"  // max_abs_difference
#include "../../common/core/naive_decoding.h"
#include "../../common/core/timing.h"
#include "../../common/kit/answer_timing.h"
#include "../../common/kit/digest.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/model_flags.h"
#include "../../common/real_weights/model_source.h"

namespace kv::ch02 {

// The speed-up two rates of one run predict. The naive answer pushes
// `naive_rows` rows through its passes; the cached one pushes its prompt's
// rows through one pass, then answer_len - 1 one-row steps, each costing
// `one_row_in_rows` rows of a pass (a pass reads every weight once for all
// its rows, a one-row step for its one row).
inline double predicted_cache_speedup(std::uint64_t naive_rows, int prompt_len, int answer_len,
                                      double one_row_in_rows) {
    return double(naive_rows) / (prompt_len + (answer_len - 1) * one_row_in_rows);
}

// What the run compares: every step's logits, naive against cached, as the
// largest difference, and every bit of the cached run's logits in one digest,
// so that builds can be compared (tests/check_same_tokens.sh): equal
// digests, equal logits.
struct LogitsCompared {
    double max_difference;
    std::string digest;  // FNV-1a 64
};
inline LogitsCompared compare_logits(const std::vector<std::vector<float>>& naive,
                                     const std::vector<std::vector<float>>& cached) {
    Fnv1a64 digest;
    for (const std::vector<float>& step : cached) digest.add_floats(step);
    return {max_abs_difference(naive, cached), digest.hex()};
}

struct Results {
    LoadedModel loaded;           // the model that ran, its prompt and tokenizer
    bool from_checkpoint;         // real weights rather than random ones
    std::string saved;            // what --save-checkpoint / --save-tokenizer wrote ("" if nothing)
    int answer_len;               // tokens generated
    int repeats;                  // timed answers per method, the fastest kept
    AnswerTiming naive;           // chapter 01's way
    AnswerTiming cached;          // prefill once, then decode against the cache
    double max_logit_difference;  // over every step of one more run of each
    std::string logits_digest;    // FNV-1a 64 over every logit of that cached run, step by step
    StepSamples one_row;          // the answer's last decode step alone, timed as make bench
                                  // times its steps (common/core/timing.h)
    int one_row_context;          // positions in the cache before that step
    StepSamples argmax;           // choosing a token from that step's logits

    // Every time below is the fastest of its samples, as make bench keeps a
    // step's fastest: a quiet machine's cost, which other work only adds to.
    double naive_answer_seconds() const { return naive.answer_seconds; }
    double cached_answer_seconds() const { return cached.answer_seconds; }
    double speedup() const { return naive_answer_seconds() / cached_answer_seconds(); }
    double prefill_seconds() const { return cached.step_seconds.front(); }
    double decode_step_seconds() const {  // within the answer: the median step after the prefill
        return median({cached.step_seconds.begin() + 1, cached.step_seconds.end()});
    }
    // What a row of a naive pass costs: the naive answer over its rows.
    double naive_seconds_per_row() const {
        return naive_answer_seconds() / double(naive.positions);
    }
    double one_row_step_in_rows() const { return one_row.fastest() / naive_seconds_per_row(); }
    double predicted_speedup() const {
        return predicted_cache_speedup(naive.positions, int(loaded.prompt.size()), answer_len,
                                       one_row_step_in_rows());
    }
};

struct Experiment {
    ModelChoice model;    // the model's shape and seed; random weights or a checkpoint
    int prompt_len = 16;  // tokens in the fixed prompt
    int answer_len = 48;  // tokens to generate, as in the published figure
    int repeats = 5;      // timed answers per method after a warm-up (the fastest kept); as
                          // many rounds of the one-row step, make bench's 5 x 10 samples

    void add_flags(Flags& flags) {
        model.add_flags(flags);
        add_save_model_flags(flags, model.source);
        add_answer_flags(flags, prompt_len, answer_len, repeats,
                         "timed answers per method (the fastest kept)");
    }

    void check() const { model.check(); }

    Results run() const {
        LoadedModel loaded = model.load(prompt_len, answer_len);
        std::string saved = save_model_files(model.source, loaded);
        Transformer& m = loaded.model;
        const Generator naive = [&](const StepCallback& on_step) {
            return generate_naive(m, loaded.prompt, answer_len, on_step);
        };
        const Generator cached = [&](const StepCallback& on_step) {
            return generate_cached(m, loaded.prompt, answer_len, on_step);
        };
        // The answer's last decode step (the first, if the answer has one
        // token, there being none), timed alone as make bench times its
        // steps: the same forward pass on the same cache, again and again,
        // a round of it after each timed answer with the cache, so that the
        // two take turns under whatever else the machine runs.
        AnswerTiming naive_timing = time_answer(m, repeats, naive);
        std::vector<int> sequence = loaded.prompt;
        sequence.insert(sequence.end(), naive_timing.tokens.begin(), naive_timing.tokens.end());
        const int context = std::max(0, static_cast<int>(loaded.prompt.size()) + answer_len - 2);
        KVCache cache(m.config(), context + 1);
        if (context > 0) prefill(m, std::span(sequence).first(std::size_t(context)), cache);
        const int token = sequence[std::size_t(context)];
        std::span<const float> logits = decode_step(m, token, cache);
        const StepSampling bench;  // make bench's repeats and budget for a round
        StepSamples one_row, argmax_samples;
        volatile int chosen = 0;
        AnswerTiming cached_timing = time_answer(m, repeats, cached, [&] {
            sample_round(
                one_row, bench.repeats, bench.round_seconds, [&] { cache.truncate(context); },
                [&] { logits = decode_step(m, token, cache); });
            // What the answer does beside the pass at every step: choose the token.
            sample_round(
                argmax_samples, bench.repeats, bench.round_seconds, [] {},
                [&] { chosen = chosen + argmax(logits); });
        });
        // One more run of each, keeping every step's logits to compare them
        // (a long prompt's passes show on a terminal).
        std::vector<int> tokens;
        Progress progress("keeping every step's logits: method");
        progress.update(1, 2, "(without the cache)");
        const std::vector<std::vector<float>> naive_logits = logits_per_step(naive, tokens);
        progress.update(2, 2, "(with the cache)");
        const std::vector<std::vector<float>> cached_logits = logits_per_step(cached, tokens);
        LogitsCompared compared = compare_logits(naive_logits, cached_logits);
        const bool from_checkpoint = !model.source.checkpoint.empty();
        return {std::move(loaded),
                from_checkpoint,
                std::move(saved),
                answer_len,
                repeats,
                std::move(naive_timing),
                std::move(cached_timing),
                compared.max_difference,
                std::move(compared.digest),
                std::move(one_row),
                context,
                std::move(argmax_samples)};
    }
};

}  // namespace kv::ch02
