// The book's own random numbers.
//
// std::normal_distribution and friends are allowed to differ between
// standard libraries, so a seed would not give the same model everywhere.
// SplitMix64 is a tiny generator defined entirely by integer arithmetic,
// and the floats below are built from its bits exactly, so a seed gives
// bit-identical weights on every compiler and machine.
#pragma once

#include <cstdint>

namespace kv {

class Rng {
  public:
    explicit Rng(std::uint64_t seed) : state_(seed) {}

    // SplitMix64 (Steele, Lea and Flood, 2014): add a constant, then mix.
    std::uint64_t next_u64() {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }

    // Uniform in [0, 1): the top 24 bits, which a float holds exactly.
    float uniform() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }

    // Uniform in [-a, a). Its standard deviation is a / sqrt(3).
    float symmetric(float a) { return (2.0f * uniform() - 1.0f) * a; }

    // Uniform integer in [0, n), n > 0. The modulo bias is below 2^-40 for
    // the sizes the book uses, and it is the same on every machine.
    std::uint64_t below(std::uint64_t n) { return next_u64() % n; }

  private:
    std::uint64_t state_;
};

}  // namespace kv
