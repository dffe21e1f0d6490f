// Numbers that are not finite, caught where they arise.
//
// Weights that are finite but large overflow float32 inside a pass: around
// 1e10 the attention scores reach infinity and softmax makes NaN; around
// 1e20 RMSNorm's sum of squares reaches infinity and every later number is
// silently 0. Either way the logits are garbage, and a comparison would
// call two garbage answers equal. So at the end of each layer a forward
// pass checks that each row of the residual stream and its sum of squares
// are finite, and at the end that the logits are. The first row that is
// not stops the pass with a NonFiniteError naming the layer, the operation
// and the token, the caches left as they were. The check costs one dot
// product per row and layer: well under 1 % of the layer's products.
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
