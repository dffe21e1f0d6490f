#include "model_source.h"

#include <utility>

#include "../core/generation.h"
#include "../kit/model_flags.h"
#include "../kit/program.h"  // Allocating
#include "../kit/report.h"
#include "checkpoint.h"

namespace kv {

void add_model_source_flags(Flags& flags, ModelSource& s) {
    flags.add("checkpoint", s.checkpoint,
              "llama2.c checkpoint to run instead of random weights (it sets the model shape)");
    flags.add("tokenizer", s.tokenizer, "llama2.c tokenizer file: show prompt and answers as text");
    flags.add("prompt", s.prompt, "prompt text, encoded with --tokenizer (replaces --prompt-len)");
    flags.reads_file("checkpoint");
    flags.reads_file("tokenizer");
}

void add_save_model_flags(Flags& flags, ModelSource& s) {
    flags.add("save-checkpoint", s.save_checkpoint,
              "write the model to this file in llama2.c's checkpoint format");
    flags.add("save-tokenizer", s.save_tokenizer,
              "write the model's tokenizer (a byte-level one for random weights) to this file");
    flags.writes_file("save-checkpoint");
    flags.writes_file("save-tokenizer");
}

void ModelChoice::add_flags(Flags& flags) {
    add_model_flags(flags, config, seed);
    add_model_source_flags(flags, source);
}

namespace {

// With --checkpoint the file's header sets the shape. A shape flag changed
// from its default would be silently overruled, so it is an error instead.
void reject_shape_flags(const Config& shape) {
    const Config d;
    const std::pair<const char*, bool> changed[] = {
        {"layers", shape.n_layers != d.n_layers}, {"dim", shape.dim != d.dim},
        {"heads", shape.n_heads != d.n_heads},    {"kv-heads", shape.n_kv_heads != d.n_kv_heads},
        {"ffn", shape.ffn_dim != d.ffn_dim},      {"vocab", shape.vocab_size != d.vocab_size},
        {"max-seq", shape.max_seq != d.max_seq}};
    for (const auto& [name, is_changed] : changed)
        if (is_changed)
            throw UsageError("--" + std::string(name) +
                             " cannot be used with --checkpoint: the checkpoint sets the shape");
}

// The readers' one-line errors start "checkpoint FILE:" or "tokenizer FILE:";
// as a flag's error they start "--checkpoint FILE:", "--tokenizer FILE:".
template <class Read>
auto named_by_flag(Read&& read) -> decltype(read()) {
    try {
        return read();
    } catch (const UsageError&) {
        throw;
    } catch (const std::runtime_error& e) {
        throw UsageError(std::string("--") + e.what());
    }
}

// The text of `tokens` after the token `prev`; BOS and EOS mark where texts
// begin and end and are not text, and an answer stops at the first.
std::string text_of(const Tokenizer& tokenizer, std::span<const int> tokens, int prev,
                    bool stop_at_mark) {
    std::string text;
    for (int token : tokens) {
        const bool mark = token == Tokenizer::bos || token == Tokenizer::eos;
        if (mark && stop_at_mark) break;
        if (!mark) text += tokenizer.decode(prev, token);
        prev = token;
    }
    return display_text(text);
}

}  // namespace

void check_model_source(const ModelSource& source, const Config& shape) {
    if (!source.prompt.empty() && source.tokenizer.empty())
        throw UsageError("--prompt needs --tokenizer to turn the text into tokens");
    if (!source.checkpoint.empty())
        reject_shape_flags(shape);
    else
        check_model(shape, 0);  // the flags' shape, before anything relies on it
}

LoadedModel load_model(const ModelSource& source, const Config& shape, std::uint64_t seed,
                       int prompt_len, int answer_len) {
    check_model_source(source, shape);
    const bool from_file = !source.checkpoint.empty();
    Config config = shape;
    if (from_file)  // the header only, for now
        config = named_by_flag([&] { return read_checkpoint_config(source.checkpoint); });
    const std::string context =
        (from_file ? "the checkpoint's seq_len " : "--max-seq ") + std::to_string(config.max_seq);

    std::optional<Tokenizer> tokenizer;
    if (!source.tokenizer.empty())
        tokenizer =
            named_by_flag([&] { return read_tokenizer(source.tokenizer, config.vocab_size); });
    std::vector<int> prompt;
    if (!source.prompt.empty()) {
        // Encoding takes time quadratic in the text: first the bound its
        // length alone sets (Tokenizer::fewest_tokens).
        const std::uint64_t fewest = tokenizer->fewest_tokens(source.prompt, true, false);
        if (fewest + std::uint64_t(answer_len) - 1 > std::uint64_t(config.max_seq))
            throw UsageError(
                "--prompt: its " + with_commas(source.prompt.size()) + " bytes make at least " +
                with_commas(fewest) + " tokens (with BOS; no token is longer than " +
                std::to_string(tokenizer->max_token_length()) + " bytes), and " +
                (answer_len > 1 ? "with --answer-len " + std::to_string(answer_len) + " - 1 "
                                : std::string()) +
                "they exceed " + context);
        prompt = tokenizer->encode(source.prompt, true, false);
    }

    // The cache must hold the prompt and every answer token but the last.
    const std::int64_t prompt_tokens = source.prompt.empty() ? prompt_len : std::ssize(prompt);
    const std::int64_t positions = prompt_tokens + answer_len - 1;
    if (positions > config.max_seq)  // chapter 04 has no --answer-len: answer_len is 1
        throw UsageError((source.prompt.empty()
                              ? "--prompt-len " + std::to_string(prompt_tokens)
                              : "the prompt's " + std::to_string(prompt_tokens) + " tokens") +
                         (answer_len > 1 ? " + --answer-len " + std::to_string(answer_len) +
                                               " - 1 = " + std::to_string(positions)
                                         : std::string()) +
                         " exceeds " + context);
    // A shared output table is held twice in memory (the reader copies it).
    Config in_memory = config;
    in_memory.shared_output = false;
    check_model(in_memory, std::uint64_t(prompt_tokens + answer_len), std::uint64_t(prompt_tokens));
    if (source.prompt.empty()) prompt = fixed_prompt(prompt_len, config.vocab_size, seed);

    if (!from_file) {
        const Allocating note("the random weights (" + format_bytes(config.weight_bytes()) + ")");
        return {Transformer(config, seed), std::move(prompt), std::move(tokenizer),
                "random (seed " + std::to_string(seed) + ")"};
    }
    Checkpoint checkpoint = named_by_flag([&] { return read_checkpoint(source.checkpoint); });
    const Allocating note("the model's working memory");
    return {Transformer(checkpoint.config, std::move(checkpoint.weights)), std::move(prompt),
            std::move(tokenizer), source.checkpoint};
}

std::string LoadedModel::prompt_text() const {
    return tokenizer ? text_of(*tokenizer, prompt, -1, false) : "";
}

std::string LoadedModel::answer_text(std::span<const int> answer) const {
    return tokenizer ? text_of(*tokenizer, answer, prompt.empty() ? -1 : prompt.back(), true) : "";
}

std::string save_model_files(const ModelSource& source, const LoadedModel& loaded) {
    std::string said;
    const Config& config = loaded.model.config();
    if (!source.save_checkpoint.empty()) {
        write_checkpoint(source.save_checkpoint, config, loaded.model.weights(),
                         "--save-checkpoint");
        said += "saved the model to " + visible(source.save_checkpoint) +
                " (llama2.c checkpoint, " + format_bytes(checkpoint_bytes(config)) + ")\n";
    }
    if (!source.save_tokenizer.empty()) {
        if (!loaded.tokenizer && config.vocab_size < Tokenizer::first_byte_token + 256)
            throw UsageError("--save-tokenizer: a byte-level tokenizer needs --vocab 259 or more");
        write_tokenizer(
            source.save_tokenizer,
            loaded.tokenizer ? *loaded.tokenizer : byte_level_tokenizer(config.vocab_size),
            "--save-tokenizer");
        said += "saved the tokenizer to " + visible(source.save_tokenizer) + "\n";
    }
    return said;
}

}  // namespace kv
