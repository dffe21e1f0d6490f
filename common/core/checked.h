// Checked 64-bit arithmetic for byte counts.
//
// Cache and weight sizes are products of several shape numbers. A product
// that wraps around 2^64 would print a small, plausible, wrong number, so
// every byte count in the book is built from these two functions, which
// throw instead of wrapping.
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace kv {

inline std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, const std::string& what) {
    if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a)
        throw std::overflow_error(what + " does not fit in 64 bits");
    return a * b;
}

inline std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, const std::string& what) {
    if (b > std::numeric_limits<std::uint64_t>::max() - a)
        throw std::overflow_error(what + " does not fit in 64 bits");
    return a + b;
}

}  // namespace kv
