// Numbers that are not finite, caught where they arise.
//
// float32 holds numbers up to about 3.4e38. Weights that are finite but
// large overflow it inside a pass: at around 1e10 the attention scores
// reach infinity and softmax turns them into NaN; at around 1e20 the sum
// of squares in RMSNorm reaches infinity, its scale 1/sqrt(inf) is 0, and
// every later number is silently 0. Either way the logits are garbage, and
// a comparison would call two garbage answers equal (NaN compares false
// with everything, so a running maximum never takes it, and argmax never
// picks it). So every forward pass checks, at the end of each layer, that
// each row of the residual stream is finite and that its sum of squares,
// the one RMSNorm takes, is finite too; and that the logits are finite.
// The first row that is not stops the pass with a NonFiniteError naming the
// layer, the operation, and the token's sequence and position; the caches
// are left as they were (Transformer::forward's promise for a bad call).
//
// The check costs one dot product per row and layer, against the layer's
// matrix products of dim x (4 dim + 3 ffn) per row: well under 1 %.
#pragma once

#include <stdexcept>
#include <string>

namespace kv {

// A forward pass met a number that is not finite (or an RMSNorm whose sum
// of squares overflows); the message is one line saying where.
struct NonFiniteError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace kv
