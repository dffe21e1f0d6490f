// Chapter 11: reload a prefix, or compute it again? The arithmetic.
//
// Per token, reloading costs its bytes of cache over the read bandwidth;
// computing again costs its prefill operations over the rate the engine
// computes at. A reload is faster when the bandwidth is above
//   B* = rate x bytes per token / operations per token,
// the break-even bandwidth, and faster by bandwidth / B* times.
//
// A prefill of P tokens multiplies every token by the layers' weights
// (2 operations per multiplied weight: a multiply and an add), gives one
// row of logits (only the last token's are wanted), and attends each token
// at position p to p + 1 positions: a score and a weighted value for every
// number of a query, 4 x dim operations per position in every layer.
#pragma once

#include <cstdint>

#include "../../common/core/config.h"

namespace kv {

// The operations of a prefill of `prefix` tokens from position 0.
inline double prefill_operations(const Config& c, int prefix) {
    const double output = 2.0 * double(c.vocab_size) * double(c.dim);  // one row of logits
    const double per_token = 2.0 * double(c.multiplied_parameters()) - output;
    const double pairs = double(prefix) * double(prefix + 1) / 2;  // (token, position) pairs
    return per_token * prefix + 4.0 * c.dim * c.n_layers * pairs + output;
}

struct ReloadArithmetic {
    double bytes_per_token = 0;        // keys and values of every layer
    double operations_per_token = 0;   // a prefill's, over the prefix's tokens
    double operations_per_second = 0;  // the rate of prefill arithmetic

    // The bandwidth at which reading a token takes as long as computing it.
    double break_even() const {
        return operations_per_second * bytes_per_token / operations_per_token;
    }
    // How many times faster a reload at `bandwidth` is than computing again.
    double reload_speedup(double bandwidth) const { return bandwidth / break_even(); }
};

// For `prefix` tokens of model `c` with `bytes_per_token` of cache each,
// computed at `operations_per_second`.
inline ReloadArithmetic reload_arithmetic(const Config& c, int prefix, double bytes_per_token,
                                          double operations_per_second) {
    return {bytes_per_token, prefill_operations(c, prefix) / prefix, operations_per_second};
}

}  // namespace kv
