#include "model_flags.h"

#include <algorithm>
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

ModelMemory model_memory(const Config& c, std::uint64_t cache_tokens, std::uint64_t pass_rows) {
    auto mul = [](std::uint64_t a, std::uint64_t b) { return checked_mul(a, b, "model memory"); };
    auto add = [](std::uint64_t a, std::uint64_t b) { return checked_add(a, b, "model memory"); };
    ModelMemory m;
    m.weights = c.weight_bytes();
    m.kv_cache = c.kv_bytes(cache_tokens);
    // RopeTable: cos and sin of head_size / 2 angles at each of max_seq positions.
    m.rope_table = mul(mul(c.max_seq, c.head_size()), sizeof(float));
    // One pass over `pass_rows` rows holds, per row, x, xb, q, att and proj
    // (dim each), k and v (kv_dim each) and the feed-forward's gate and up
    // (ffn each); and one row of scores per position, and logits.
    const std::uint64_t per_row = add(mul(5, c.dim), add(mul(2, c.kv_dim()), mul(2, c.ffn_dim)));
    m.pass_scratch = mul(add(mul(pass_rows, per_row), add(c.max_seq, c.vocab_size)), sizeof(float));
    m.total = add(add(m.weights, m.kv_cache), add(m.rope_table, m.pass_scratch));
    return m;
}

std::string ModelMemory::describe() const {
    return format_bytes(total) + " (weights " + format_bytes(weights) + ", KV cache " +
           format_bytes(kv_cache) + ", RoPE table " + format_bytes(rope_table) +
           ", a pass's scratch " + format_bytes(pass_scratch) + ")";
}

void check_model(const Config& config, std::uint64_t cache_tokens,
                 std::optional<std::uint64_t> pass_rows) {
    const std::uint64_t rows =
        pass_rows.value_or(std::min<std::uint64_t>(cache_tokens, std::uint64_t(config.max_seq)));
    ModelMemory need;
    try {
        config.validate();
        need = model_memory(config, cache_tokens, std::max<std::uint64_t>(rows, 1));
    } catch (const std::exception& e) {
        throw UsageError(e.what());
    }
    if (const std::string over = beyond_memory(double(need.total), 0.5); !over.empty())
        throw UsageError("this model needs " + need.describe() + ", " + over +
                         "; choose smaller --dim, --layers, --ffn, --vocab or --max-seq");
}

}  // namespace kv
