// Chapter 01's experiment: one answer decoded naively, timed step by step.
#pragma once

#include "../../common/core/naive_decoding.h"
#include "../../common/kit/answer_timing.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/model_flags.h"
#include "../../common/real_weights/model_source.h"

namespace kv::ch01 {

struct Results {
    LoadedModel loaded;    // the model that ran, its prompt and tokenizer
    bool from_checkpoint;  // real weights rather than random ones
    int answer_len;        // tokens generated
    int repeats;           // timed answers, the fastest kept
    AnswerTiming naive;    // the answer, its time and each step's
};

struct Experiment {
    ModelChoice model;    // the model's shape and seed; random weights or a checkpoint
    int prompt_len = 16;  // tokens in the fixed prompt
    int answer_len = 48;  // tokens to generate, as in the published figure
    int repeats = 5;      // timed answers after one warm-up; the fastest is reported,
                          // as chapter 02 and make bench keep theirs

    void add_flags(Flags& flags) {
        model.add_flags(flags);
        add_answer_flags(flags, prompt_len, answer_len, repeats,
                         "timed answers (the fastest reported)");
    }

    void check() const { model.check(); }

    Results run() const {
        LoadedModel loaded = model.load(prompt_len, answer_len);
        AnswerTiming naive = time_answer(loaded.model, repeats, [&](const StepCallback& on_step) {
            return generate_naive(loaded.model, loaded.prompt, answer_len, on_step);
        });
        return {std::move(loaded), !model.source.checkpoint.empty(), answer_len, repeats,
                std::move(naive)};
    }
};

}  // namespace kv::ch01
