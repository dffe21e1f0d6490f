// A fingerprint of many floats in one short string, so that two runs (two
// builds, compilers or machines) can be shown to have computed the same
// numbers to the last bit: chapter 02's JSON carries one over every logit
// of its cached answer, and tests/check_same_tokens.sh compares it.
// FNV-1a, 64 bits: for each byte, xor it in, then multiply by the prime. A
// float goes in as its bit pattern, least significant byte first on every
// machine, so any one bit differs (-0 from +0 too).
#pragma once

#include <bit>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

namespace kv {

class Fnv1a64 {
  public:
    void add_byte(std::uint8_t byte) { state_ = (state_ ^ byte) * kPrime; }
    void add_floats(std::span<const float> values) {
        for (const float v : values) {
            const std::uint32_t bits = std::bit_cast<std::uint32_t>(v);
            for (int shift = 0; shift < 32; shift += 8) add_byte(std::uint8_t(bits >> shift));
        }
    }

    // The digest as 16 lowercase hex digits, e.g. "af63dc4c8601ec8c".
    std::string hex() const {
        char digits[17];
        std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(state_));
        return digits;
    }

  private:
    static constexpr std::uint64_t kOffsetBasis = 0xcbf29ce484222325ull;
    static constexpr std::uint64_t kPrime = 0x100000001b3ull;  // 2^40 + 2^8 + 0xb3
    std::uint64_t state_ = kOffsetBasis;
};

}  // namespace kv
