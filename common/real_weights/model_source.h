// Where a generating chapter's model and prompt come from.
//
// By default: random weights from --seed and a fixed prompt of --prompt-len
// token ids, so every program runs with no files. --checkpoint FILE reads
// real weights in llama2.c's format, which fix the shape (a shape flag
// beside it is an error); --tokenizer FILE shows prompt and answers as
// text; --prompt TEXT, encoded with it, replaces the fixed prompt.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../core/config.h"
#include "../core/transformer.h"
#include "../kit/flags.h"
#include "tokenizer.h"

namespace kv {

struct ModelSource {
    std::string checkpoint;       // llama2.c checkpoint; empty: random weights from --seed
    std::string tokenizer;        // its tokenizer file; empty: tokens stay numbers
    std::string prompt;           // prompt text; empty: the fixed prompt of token ids
    std::string save_checkpoint;  // write the model here (chapter 02's --save-checkpoint)
    std::string save_tokenizer;   // write a tokenizer here (chapter 02's --save-tokenizer)
};

// --checkpoint --tokenizer --prompt
void add_model_source_flags(Flags& flags, ModelSource& source);
// --save-checkpoint --save-tokenizer
void add_save_model_flags(Flags& flags, ModelSource& source);

struct LoadedModel {
    Transformer model;
    std::vector<int> prompt;             // the prompt's token ids
    std::optional<Tokenizer> tokenizer;  // with --tokenizer
    std::string weights;                 // "random (seed 1)" or the checkpoint's path

    // Text of the prompt, and of an answer that follows it, ready to print
    // (display_text); empty without a tokenizer. The answer stops where the
    // model writes BOS or EOS, as llama2.c's models end a story.
    std::string prompt_text() const;
    std::string answer_text(std::span<const int> answer) const;
};

// What load_model checks before it reads any file: --prompt without
// --tokenizer, a shape flag beside --checkpoint, the flags' shape.
void check_model_source(const ModelSource& source, const Config& shape);

// Builds what `source` names (`prompt_len` for the fixed prompt), checking
// the files, the tokenizer against the vocabulary, that prompt + answer_len
// - 1 positions fit the context, and the memory (check_model).
LoadedModel load_model(const ModelSource& source, const Config& shape, std::uint64_t seed,
                       int prompt_len, int answer_len);

// The model a generating chapter runs (01, 02, 04, 10), as flags.
struct ModelChoice {
    Config config;           // the book's demo model (common/core/config.h)
    std::uint64_t seed = 1;  // seed of the weights and the prompt
    ModelSource source;      // random weights, or a checkpoint and tokenizer

    // --layers --dim --heads --kv-heads --ffn --vocab --max-seq --seed,
    // then --checkpoint --tokenizer --prompt
    void add_flags(Flags& flags);
    void check() const { check_model_source(source, config); }
    // The model and its prompt; a checkpoint brings its own shape.
    LoadedModel load(int prompt_len, int answer_len) const {
        return load_model(source, config, seed, prompt_len, answer_len);
    }
};

// Writes the files --save-checkpoint and --save-tokenizer ask for (a
// byte_level_tokenizer() when the model has none); says what it wrote.
std::string save_model_files(const ModelSource& source, const LoadedModel& loaded);

}  // namespace kv
