#include "model_flags.h"

#include <stdexcept>

#include "../core/checked.h"
#include "report.h"

namespace kv {

void add_model_flags(Flags& flags, Config& c, std::uint64_t& seed) {
    flags.add("layers", c.n_layers, 1, 1024, "transformer layers");
    flags.add("dim", c.dim, 2, 1 << 16, "model width");
    flags.add("heads", c.n_heads, 1, 1024, "query heads (must divide --dim)");
    flags.add("kv-heads", c.n_kv_heads, 1, 1024, "key/value heads (must divide --heads)");
    flags.add("ffn", c.ffn_dim, 1, 1 << 18, "feed-forward hidden width");
    flags.add("vocab", c.vocab_size, 2, 1 << 20, "vocabulary size");
    flags.add("max-seq", c.max_seq, 1, 1 << 20, "longest context (KV cache positions)");
    flags.add("seed", seed, 0, UINT64_MAX, "seed of the random weights");
}

void add_answer_flags(Flags& flags, int& prompt_len, int& answer_len, int& repeats,
                      const std::string& repeats_help) {
    flags.add("prompt-len", prompt_len, 1, 1 << 20, "tokens in the fixed prompt");
    flags.add("answer-len", answer_len, 1, 1 << 20, "tokens to generate");
    flags.add("repeats", repeats, 1, 1000, repeats_help);
}

void check_model(const Config& config, std::uint64_t cache_tokens) {
    std::uint64_t need = 0;
    try {
        config.validate();
        need = checked_add(config.weight_bytes(), config.kv_bytes(cache_tokens), "model memory");
    } catch (const std::exception& e) {
        throw UsageError(e.what());
    }
    if (!fits_in_memory(double(need), 0.5))
        throw UsageError("this model needs " + format_bytes(need) + " for weights and KV cache, " +
                         "more than half of this machine's " +
                         format_bytes(physical_memory_bytes()) +
                         "; choose smaller --dim, --layers, --ffn, --vocab or --max-seq");
}

}  // namespace kv
