// Where a generating chapter's model and prompt come from.
//
// By default: random weights from --seed and a fixed prompt of --prompt-len
// token ids, so every program runs with no files at all. The flags:
//
//   --checkpoint FILE  real weights in llama2.c's format (checkpoint.h). The
//                      file fixes the model's shape, so a model-shape flag
//                      (--layers ... --max-seq) set to anything but its default
//                      is an error rather than silently ignored.
//   --tokenizer FILE   its tokenizer.bin (tokenizer.h): the prompt and the
//                      answers are also shown as text.
//   --prompt TEXT      the prompt as text, encoded with --tokenizer; it replaces
//                      the fixed prompt (--prompt-len is then not used).
//
// A chapter's experiment holds a ModelChoice (below): the shape and seed
// flags, these flags, and load() for the model and prompt they name.
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
    // (display_text). Empty without a tokenizer. The answer's text stops
    // where the model writes BOS or EOS: llama2.c's models end a story so.
    std::string prompt_text() const;
    std::string answer_text(std::span<const int> answer) const;
};

// What load_model checks before it reads any file, each with one line
// naming what is wrong: --prompt without --tokenizer, a shape flag beside
// --checkpoint, and the flags' shape (check_model).
void check_model_source(const ModelSource& source, const Config& shape);

// Builds what `source` names. `shape` and `seed` are the model flags;
// `prompt_len` is used for the fixed prompt. Checks, each with one line
// naming what is wrong: the files, the tokenizer's size against the model's
// vocabulary, that prompt + answer_len - 1 positions fit the model's context,
// and that the weights and cache fit in memory (check_model).
LoadedModel load_model(const ModelSource& source, const Config& shape, std::uint64_t seed,
                       int prompt_len, int answer_len);

// The model a generating chapter runs (chapters 01, 02 and 04): its shape,
// its seed and where its weights come from, as flags.
struct ModelChoice {
    Config config;           // the book's demo model (common/core/config.h)
    std::uint64_t seed = 1;  // seed of the weights and the prompt
    ModelSource source;      // random weights, or a checkpoint and tokenizer

    // --layers --dim --heads --kv-heads --ffn --vocab --max-seq --seed,
    // then --checkpoint --tokenizer --prompt
    void add_flags(Flags& flags);
    void check() const { check_model_source(source, config); }
    // The model and its prompt; a checkpoint brings its own shape
    // (loaded.model.config()).
    LoadedModel load(int prompt_len, int answer_len) const {
        return load_model(source, config, seed, prompt_len, answer_len);
    }
};

// Writes the files --save-checkpoint and --save-tokenizer ask for: the model
// in llama2.c's format, and its tokenizer (a byte_level_tokenizer() when it
// has none). Returns a line saying what was written, or "" if nothing.
std::string save_model_files(const ModelSource& source, const LoadedModel& loaded);

}  // namespace kv
