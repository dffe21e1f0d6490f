#include "config.h"

#include <stdexcept>
#include <utility>

#include "checked.h"
#include "memory_arithmetic.h"

namespace kv {

void Config::validate() const {
    const std::pair<int, const char*> sizes[] = {
        {n_layers, "layers"}, {dim, "dim"},          {n_heads, "heads"},  {n_kv_heads, "kv-heads"},
        {ffn_dim, "ffn"},     {vocab_size, "vocab"}, {max_seq, "max-seq"}};
    for (const auto& [value, name] : sizes)
        if (value <= 0)
            throw std::invalid_argument(std::string(name) + " must be positive, got " +
                                        std::to_string(value));
    if (dim % n_heads != 0)
        throw std::invalid_argument("heads (" + std::to_string(n_heads) + ") must divide dim (" +
                                    std::to_string(dim) + ")");
    if (n_heads % n_kv_heads != 0)
        throw std::invalid_argument("kv-heads (" + std::to_string(n_kv_heads) +
                                    ") must divide heads (" + std::to_string(n_heads) + ")");
    if (head_size() % 2 != 0)
        throw std::invalid_argument("head size dim/heads = " + std::to_string(head_size()) +
                                    " must be even: RoPE rotates pairs of numbers");
    weight_bytes();  // throws std::overflow_error if it cannot be counted
    kv_bytes(std::uint64_t(max_seq));
}

std::uint64_t Config::parameter_count() const {
    const std::uint64_t d = dim, kvd = kv_dim(), f = ffn_dim, v = vocab_size;
    const char* what = "parameter count";
    std::uint64_t per_layer = checked_mul(2, d, what);  // two RMSNorm scales
    per_layer =
        checked_add(per_layer, checked_mul(2, checked_mul(d, d, what), what), what);  // wq, wo
    per_layer =
        checked_add(per_layer, checked_mul(2, checked_mul(kvd, d, what), what), what);  // wk, wv
    per_layer =
        checked_add(per_layer, checked_mul(3, checked_mul(f, d, what), what), what);  // w1, w2, w3
    std::uint64_t total = checked_mul(per_layer, std::uint64_t(n_layers), what);
    const std::uint64_t tables = shared_output ? 1 : 2;  // embedding, and output unless shared
    total = checked_add(total, checked_mul(tables, checked_mul(v, d, what), what), what);
    return checked_add(total, d, what);  // final norm
}

std::uint64_t Config::weight_bytes() const {
    return checked_mul(parameter_count(), sizeof(float), "weight bytes");
}

std::uint64_t Config::lookup_only_parameters() const {
    return shared_output ? 0 : checked_mul(std::uint64_t(vocab_size), std::uint64_t(dim), "table");
}

std::uint64_t Config::weight_bytes_read_per_pass() const {
    return checked_mul(parameter_count() - lookup_only_parameters(), sizeof(float),
                       "weight bytes read per pass");
}

std::uint64_t Config::multiplied_parameters() const {
    const std::uint64_t norms = (2 * std::uint64_t(n_layers) + 1) * std::uint64_t(dim);
    return parameter_count() - lookup_only_parameters() - norms;
}

std::uint64_t Config::kv_bytes_per_token(std::uint64_t bytes_per_number) const {
    return bytes_per_token(cache_shape_of(*this, bytes_per_number));  // memory_arithmetic.h
}

std::uint64_t Config::kv_bytes(std::uint64_t tokens, std::uint64_t bytes_per_number) const {
    return checked_mul(kv_bytes_per_token(bytes_per_number), tokens, "KV cache bytes");
}

std::string Config::describe() const {
    return std::to_string(n_layers) + " layers, dim " + std::to_string(dim) + ", " +
           std::to_string(n_heads) + " heads (" + std::to_string(n_kv_heads) +
           " KV heads, head size " + std::to_string(head_size()) + "), ffn " +
           std::to_string(ffn_dim) + ", vocab " + std::to_string(vocab_size) + ", max-seq " +
           std::to_string(max_seq);
}

}  // namespace kv
