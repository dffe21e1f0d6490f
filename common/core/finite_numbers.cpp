// The forward pass's check for numbers that are not finite (finite_numbers.h).
#include "finite_numbers.h"

#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <utility>

#include "kernels.h"
#include "transformer.h"

namespace kv {

namespace {

// The first number of p[0..n-1] that is not finite, or -1.
int first_not_finite(const float* p, int n) {
    for (int i = 0; i < n; ++i)
        if (!std::isfinite(p[i])) return i;
    return -1;
}

std::string number_text(float v) {
    if (std::isnan(v)) return "NaN";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", double(v));
    return buf;
}

// The largest |p[i]|, to say how large the numbers grew.
float largest_magnitude(const float* p, int n) {
    float most = 0;
    for (int i = 0; i < n; ++i) most = std::fabs(p[i]) > most ? std::fabs(p[i]) : most;
    return most;
}

// "the token at position 5 of sequence 2 of 3": row `row` of the pass.
std::string where(std::span<const SequenceInput> inputs, int row) {
    int first = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const int n = static_cast<int>(inputs[i].tokens.size());
        if (row < first + n)
            return "the token at position " +
                   std::to_string(inputs[i].cache->length() + row - first) + " of sequence " +
                   std::to_string(i + 1) + " of " + std::to_string(inputs.size());
        first += n;
    }
    return "row " + std::to_string(row);
}

// forward() gives every store its room back as this leaves it.
[[noreturn]] void stop_pass(const std::string& message) {
    throw NonFiniteError("forward pass: " + message +
                         "; the weights or the inputs are too large for float32");
}

}  // namespace

// At the end of layer `layer`: every row of the residual stream finite, and
// its sum of squares (RMSNorm's, taken as rmsnorm() takes it) finite too.
// The first row that fails is traced back through the layer's scratch
// matrices, which still hold this layer's numbers, to the first operation
// whose output is not finite.
void Transformer::check_layer_numbers(std::span<const SequenceInput> inputs, int layer, int rows) {
    const Config& c = config_;
    for (int r = 0; r < rows; ++r) {
        if (std::isfinite(dot(x_.row(r), x_.row(r), c.dim))) continue;
        const std::string at =
            "layer " + std::to_string(layer) + " of " + std::to_string(c.n_layers) + ", ";
        const std::string of = " for " + where(inputs, r);
        if (first_not_finite(x_.row(r), c.dim) < 0)
            stop_pass(at + "RMSNorm: the sum of squares of the residual stream overflows" + of +
                      " (its numbers reach " + number_text(largest_magnitude(x_.row(r), c.dim)) +
                      "; RMSNorm would scale them all to 0)");
        // In the order the layer computes them.
        const std::pair<const char*, bool> stages[] = {
            {"the query, key and value products (wq, wk, wv)",
             first_not_finite(q_.row(r), c.dim) >= 0 ||
                 first_not_finite(k_.row(r), c.kv_dim()) >= 0 ||
                 first_not_finite(v_.row(r), c.kv_dim()) >= 0},
            {"attention (scores, softmax, weighted values)",
             first_not_finite(att_.row(r), c.dim) >= 0},
            // xb_ holds the feed-forward's RMSNorm of x after the attention block.
            {"the attention output product (wo) added to the residual stream",
             first_not_finite(xb_.row(r), c.dim) >= 0},
            {"the feed-forward products (w1, w3, SiLU)",
             first_not_finite(gate_.row(r), c.ffn_dim) >= 0 ||
                 first_not_finite(up_.row(r), c.ffn_dim) >= 0},
        };
        const char* stage = "the feed-forward output product (w2) added to the residual stream";
        for (const auto& [name, not_finite] : stages)
            if (not_finite) {
                stage = name;
                break;
            }
        const float bad = x_.row(r)[first_not_finite(x_.row(r), c.dim)];
        stop_pass(at + stage + ": a number that is not finite (" + number_text(bad) + ")" + of);
    }
}

// Before layer `layer`'s new keys and values are stored: a narrower cache
// would round an infinity to a finite number (int8 clamps it) and hide it.
void Transformer::check_keys_values(std::span<const SequenceInput> inputs, int layer, int rows) {
    for (int r = 0; r < rows; ++r)
        for (const auto& [m, name] : {std::pair{&k_, "key"}, std::pair{&v_, "value"}}) {
            const int bad = first_not_finite(m->row(r), m->cols);
            if (bad >= 0)
                stop_pass("layer " + std::to_string(layer) + " of " +
                          std::to_string(config_.n_layers) + ", the " + name + " product (w" +
                          name[0] + "): a number that is not finite (" +
                          number_text(m->row(r)[bad]) + ") for " + where(inputs, r) +
                          ", before it is stored");
        }
}

// After the output product: every logit finite.
void Transformer::check_logits(std::span<const SequenceInput> inputs) {
    int last_row = -1;
    for (int i = 0; i < logits_.rows; ++i) {
        last_row += static_cast<int>(inputs[std::size_t(i)].tokens.size());
        const int bad = first_not_finite(logits_.row(i), logits_.cols);
        if (bad < 0) continue;
        stop_pass("the output (final RMSNorm and product): logit " + std::to_string(bad) +
                  " is not finite (" + number_text(logits_.row(i)[bad]) + ") for " +
                  where(inputs, last_row));
    }
}

}  // namespace kv
