// The flags every program shares: the model's shape and seed, and the
// check that the model a reader asks for fits in this machine's memory.
#pragma once

#include <cstdint>
#include <string>

#include "../core/config.h"
#include "flags.h"
#include "machine.h"  // physical_memory_bytes, fits_in_memory

namespace kv {

// --layers --dim --heads --kv-heads --ffn --vocab --max-seq --seed
void add_model_flags(Flags& flags, Config& config, std::uint64_t& seed);

// --prompt-len --answer-len --repeats: one answer's workload (chapters 01
// and 02); `repeats_help` says what is repeated.
void add_answer_flags(Flags& flags, int& prompt_len, int& answer_len, int& repeats,
                      const std::string& repeats_help);

// Validates the shape (throwing UsageError naming what is wrong) and checks
// that its weights plus `cache_tokens` positions of float32 KV cache fit in
// the machine's physical memory.
void check_model(const Config& config, std::uint64_t cache_tokens);

}  // namespace kv
