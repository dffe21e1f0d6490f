// Chapter 02's experiment: the same answer decoded naively and with the
// cache, both timed on the same model, and their logits compared.
#pragma once

#include <string>
#include <vector>

#include "../../common/core/cached_decoding.h"
#include "../../common/core/naive_decoding.h"
#include "../../common/core/timing.h"
#include "../../common/kit/answer_timing.h"
#include "../../common/kit/digest.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/model_flags.h"
#include "../../common/real_weights/model_source.h"

namespace kv::ch02 {

struct Results {
    LoadedModel loaded;           // the model that ran, its prompt and tokenizer
    bool from_checkpoint;         // real weights rather than random ones
    std::string saved;            // what --save-checkpoint / --save-tokenizer wrote ("" if nothing)
    int answer_len;               // tokens generated
    int repeats;                  // timed answers per method behind each median
    AnswerTiming naive;           // chapter 01's way
    AnswerTiming cached;          // prefill once, then decode against the cache
    double max_logit_difference;  // over every step of one more run of each
    std::string logits_digest;    // FNV-1a 64 over every logit of that cached run, step by step

    double speedup() const { return naive.answer_seconds / cached.answer_seconds; }
    double decode_step_seconds() const {  // the median step after the prefill
        return median({cached.step_seconds.begin() + 1, cached.step_seconds.end()});
    }
};

struct Experiment {
    ModelChoice model;    // the model's shape and seed; random weights or a checkpoint
    int prompt_len = 16;  // tokens in the fixed prompt
    int answer_len = 48;  // tokens to generate, as in the published figure
    int repeats = 5;      // timed answers per method after a warm-up

    void add_flags(Flags& flags) {
        model.add_flags(flags);
        add_save_model_flags(flags, model.source);
        add_answer_flags(flags, prompt_len, answer_len, repeats,
                         "timed answers per method (median reported)");
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
        // Both methods, timed on the same model in the same run.
        AnswerTiming naive_timing = time_answer(m, repeats, naive);
        AnswerTiming cached_timing = time_answer(m, repeats, cached);
        // One more run of each, keeping every step's logits to compare them
        // (a long prompt's passes show on a terminal).
        std::vector<int> tokens;
        Progress progress("keeping every step's logits: method");
        const PassesShown passes(m, progress);
        progress.update(1, 2, "(without the cache)");
        const std::vector<std::vector<float>> naive_logits = logits_per_step(naive, tokens);
        progress.update(2, 2, "(with the cache)");
        const std::vector<std::vector<float>> cached_logits = logits_per_step(cached, tokens);
        // Every logit's bits in one digest, so that builds can be compared
        // (tests/check_same_tokens.sh): equal digests, equal logits.
        Fnv1a64 digest;
        for (const std::vector<float>& step : cached_logits) digest.add_floats(step);
        const double max_diff = max_abs_difference(naive_logits, cached_logits);
        const bool from_checkpoint = !model.source.checkpoint.empty();
        return {std::move(loaded), from_checkpoint,         std::move(saved),         answer_len,
                repeats,           std::move(naive_timing), std::move(cached_timing), max_diff,
                digest.hex()};
    }
};

}  // namespace kv::ch02
