// Numbers that are not finite, caught where they arise.
//
// Finite but large weights overflow float32 inside a pass: around 1e10 the
// attention scores reach infinity and softmax makes NaN; around 1e20
// RMSNorm's sum of squares does and every later number is silently 0. The
// logits are garbage, and a comparison would call two garbage answers
// equal. So after each layer a pass checks each row of the residual stream
// and its sum of squares, and at the end the logits; the first that is not
// finite throws a NonFiniteError naming the layer, the operation and the
// token, the caches left as they were. It costs one dot product per row and layer.
#pragma once

#include <stdexcept>
#include <string>

namespace kv {

// The message is one line saying where.
struct NonFiniteError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace kv
