// The flags every program shares: the model's shape and seed, and the
// check that the model a reader asks for fits in this machine's memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "../core/config.h"
#include "flags.h"
#include "machine.h"  // beyond_memory

namespace kv {

// --layers --dim --heads --kv-heads --ffn --vocab --max-seq --seed
void add_model_flags(Flags& flags, Config& config, std::uint64_t& seed);

// --prompt-len --answer-len --repeats: one answer's workload (chapters 01 and 02).
void add_answer_flags(Flags& flags, int& prompt_len, int& answer_len, int& repeats,
                      const std::string& repeats_help);

// The memory a model of this shape takes, in bytes: its weights, a KV cache
// of `cache_tokens` positions, the RoPE table, and one forward pass's
// scratch over `pass_rows` rows.
struct ModelMemory {
    std::uint64_t weights = 0, kv_cache = 0, rope_table = 0, pass_scratch = 0, total = 0;
    std::string describe() const;  // "1.2 GiB (weights ..., KV cache ..., ...)"
};
ModelMemory model_memory(const Config& config, std::uint64_t cache_tokens, std::uint64_t pass_rows);

// Validates the shape and checks that model_memory() fits in half the
// memory this process may use, or throws UsageError naming each size.
// Without `pass_rows`, the widest pass is min(cache_tokens, max_seq) rows.
void check_model(const Config& config, std::uint64_t cache_tokens,
                 std::optional<std::uint64_t> pass_rows = std::nullopt);

}  // namespace kv
