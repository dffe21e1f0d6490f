// Chapter 01's experiment: one answer decoded naively, timed step by step.
#pragma once

#include <cstdint>

#include "../../common/core/naive_decoding.h"
#include "../../common/kit/answer_timing.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/model_flags.h"
#include "../../common/real_weights/model_source.h"

namespace kv::ch01 {

struct Results {
    LoadedModel loaded;       // the model that ran, its prompt and tokenizer
    bool from_checkpoint;     // real weights rather than random ones
    int answer_len;           // tokens generated
    int repeats;              // timed answers behind each median
    AnswerTiming naive;       // the answer, its time and each step's
    std::uint64_t predicted;  // naive_positions(): what the formula says naive.positions is

    int prompt_len() const { return static_cast<int>(loaded.prompt.size()); }
};

struct Experiment {
    ModelChoice model;    // the model's shape and seed; random weights or a checkpoint
    int prompt_len = 16;  // tokens in the fixed prompt
    int answer_len = 48;  // tokens to generate, as in the published figure
    int repeats = 5;      // timed answers after one warm-up; medians are reported

    void add_flags(Flags& flags) {
        model.add_flags(flags);
        add_answer_flags(flags, prompt_len, answer_len, repeats, "timed answers (median reported)");
    }

    void check() const { model.check(); }

    Results run() const {
        LoadedModel loaded = model.load(prompt_len, answer_len);
        Transformer& m = loaded.model;
        const std::vector<int>& prompt = loaded.prompt;
        const AnswerTiming naive = time_answer(m, repeats, [&](const StepCallback& on_step) {
            return generate_naive(m, prompt, answer_len, on_step);
        });
        const std::uint64_t predicted = naive_positions(prompt.size(), std::uint64_t(answer_len));
        return {std::move(loaded), !model.source.checkpoint.empty(), answer_len, repeats, naive,
                predicted};
    }
};

}  // namespace kv::ch01
