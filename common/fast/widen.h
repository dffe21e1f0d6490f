// A narrower cache's numbers widened in registers: kLanes stored numbers
// become one Lanes of float32, exactly (number_format.h: every bfloat16 and
// float16 number is a float32 number, and an int8 number times its float16
// scale is one too). Attention reads the cache where it lies through these,
// so it reads 2 or about 1 byte per number instead of 4, and adds exactly
// the floats it would have read from a float32 copy.
//
//   bfloat16  the 16 bits become the top half of a float32: a shift
//   float16   AVX-512's or F16C's conversion; else the same bits by hand
//   int8      sign-extended, converted, times the block's scale
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../core/number_format.h"
#include "lanes.h"

#if defined(__F16C__) || defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace kv::fast {

typedef std::uint16_t Halves __attribute__((vector_size(kLanes * sizeof(std::uint16_t))));
typedef std::uint32_t Words __attribute__((vector_size(kLanes * sizeof(std::uint32_t))));
typedef std::int8_t Int8s __attribute__((vector_size(kLanes * sizeof(std::int8_t))));
typedef std::int32_t Ints __attribute__((vector_size(kLanes * sizeof(std::int32_t))));
typedef std::int8_t Bytes64 __attribute__((vector_size(kLanes * sizeof(std::int32_t))));

// ------------------------------------------------------ kLanes numbers at once

inline Lanes widen_bfloat16(const std::byte* p) {
    Halves h;
    std::memcpy(&h, p, sizeof h);
    return std::bit_cast<Lanes>(__builtin_convertvector(h, Words) << 16);
}

inline Lanes widen_float16(const std::byte* p) {
#if defined(__AVX512F__)
    // The zero-masked forms, every lane kept, here and below: GCC 12 warns
    // that the plain forms' undefined first operand may be used.
    return std::bit_cast<Lanes>(_mm512_maskz_cvtph_ps(
        __mmask16(0xFFFF), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
#elif defined(__F16C__)
    const __m256 lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256 hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)));
    const Lanes8 a = std::bit_cast<Lanes8>(lo), b = std::bit_cast<Lanes8>(hi);
    return __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#else
    // from_float16's cases, all computed and one kept per lane.
    Halves bits;
    std::memcpy(&bits, p, sizeof bits);
    const Words h = __builtin_convertvector(bits, Words);
    const Words sign = (h & 0x8000u) << 16;
    const Words exponent = (h >> 10) & 0x1Fu;
    const Words m = h & 0x03FFu;
    const Words normal = sign | ((exponent + 112u) << 23) | (m << 13);
    const Words quiet = (m != 0u) & 0x00400000u;  // a NaN is made quiet, as F16C does
    const Words special = sign | 0x7F800000u | (m << 13) | quiet;
    // zero or subnormal: m steps of 2^-24, exact in float32
    const Lanes small = __builtin_convertvector(m, Lanes) * 0x1p-24f;
    const Words tiny = std::bit_cast<Words>(small) | sign;
    return std::bit_cast<Lanes>(exponent == 0x1Fu ? special : (exponent == 0u ? tiny : normal));
#endif
}

// Sign-extended to int32 by AVX-512's or AVX2's instruction; without them,
// each number moved to the top byte of a 32-bit lane and shifted down with
// its sign (GCC turns a plain int8-to-int32 conversion into sixteen scalar
// ones); then converted and multiplied by the scale, exactly.
inline Lanes widen_int8(const std::byte* p, float scale) {
#if defined(__AVX512F__)
    const Ints q = std::bit_cast<Ints>(_mm512_maskz_cvtepi8_epi32(
        __mmask16(0xFFFF), _mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    return __builtin_convertvector(q, Lanes) * scale;
#elif defined(__AVX2__)
    typedef std::int32_t Ints8 __attribute__((vector_size(8 * sizeof(std::int32_t))));
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const Ints8 lo = std::bit_cast<Ints8>(_mm256_cvtepi8_epi32(bytes));
    const Ints8 hi = std::bit_cast<Ints8>(_mm256_cvtepi8_epi32(_mm_srli_si128(bytes, 8)));
    const Ints q =
        __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return __builtin_convertvector(q, Lanes) * scale;
#else
    Int8s q;
    std::memcpy(&q, p, sizeof q);
    const Int8s zero = {};
    const Bytes64 top = __builtin_shufflevector(
        q, zero, 16, 16, 16, 0, 16, 16, 16, 1, 16, 16, 16, 2, 16, 16, 16, 3, 16, 16, 16, 4, 16, 16,
        16, 5, 16, 16, 16, 6, 16, 16, 16, 7, 16, 16, 16, 8, 16, 16, 16, 9, 16, 16, 16, 10, 16, 16,
        16, 11, 16, 16, 16, 12, 16, 16, 16, 13, 16, 16, 16, 14, 16, 16, 16, 15);
    return __builtin_convertvector(std::bit_cast<Ints>(top) >> 24, Lanes) * scale;
#endif
}

// An int8 block's scale: 2 bytes of float16 at p.
inline float int8_scale(const std::byte* p) {
    std::uint16_t bits;
    std::memcpy(&bits, p, sizeof bits);
#if defined(__F16C__)
    return _cvtsh_ss(bits);
#else
    return from_float16(bits);
#endif
}

// --------------------------------------------------------- one KV head's row

// Where numbers of one KV head's row sit, for each format: Stored<F>::lanes
// (row, k) widens numbers k..k+kLanes-1 (k a multiple of kLanes, all inside
// the row), tail() the last n % kLanes padded with zeros, number() one.
// The head's row starts at `row`; an int8 row is blocks of kInt8Block
// numbers, each after its scale, and kLanes divides kInt8Block, so kLanes
// numbers never straddle two blocks.
template <NumberFormat F>
struct Stored;

template <>
struct Stored<NumberFormat::float32> {
    static const float* at(const std::byte* row, int k) {
        return reinterpret_cast<const float*>(row) + k;
    }
    static Lanes lanes(const std::byte* row, int k) { return load(at(row, k)); }
    [[gnu::noinline]] static Lanes tail(const std::byte* row, int k, int n) {
        return load_tail(at(row, k), n);
    }
    static float number(const std::byte* row, int i) { return *at(row, i); }
};

// The 16-bit formats: numbers 2 bytes apart; a tail is copied into zeros first.
template <Lanes (*Widen)(const std::byte*), float (*One)(std::uint16_t)>
struct Stored16 {
    static Lanes lanes(const std::byte* row, int k) { return Widen(row + 2 * k); }
    [[gnu::noinline]] static Lanes tail(const std::byte* row, int k, int n) {
        std::byte padded[2 * kLanes] = {};
        std::memcpy(padded, row + 2 * k, std::size_t(2 * n));
        return Widen(padded);
    }
    static float number(const std::byte* row, int i) {
        std::uint16_t bits;
        std::memcpy(&bits, row + 2 * i, 2);
        return One(bits);
    }
};

template <>
struct Stored<NumberFormat::bfloat16> : Stored16<widen_bfloat16, from_bfloat16> {};
template <>
struct Stored<NumberFormat::float16> : Stored16<widen_float16, from_float16> {};

template <>
struct Stored<NumberFormat::int8> {
    static constexpr int kBlockBytes = 2 + kInt8Block;  // the scale, then the numbers
    // Bytes from a row's start to number i's block, and to number i. The
    // same for every row, so a tile of rows computes them once. (i >= 0:
    // unsigned, the division is a shift.)
    static std::size_t block_at(int i) { return unsigned(i) / kInt8Block * kBlockBytes; }
    static std::size_t number_at(int i) { return block_at(i) + 2 + unsigned(i) % kInt8Block; }
    static const std::byte* block(const std::byte* row, int i) { return row + block_at(i); }
    static Lanes lanes(const std::byte* row, int k) {
        return widen_int8(row + number_at(k), int8_scale(block(row, k)));
    }
    // The same, with the scale of number k's block already read: a block's
    // kInt8Block / kLanes loads share one.
    static float scale(const std::byte* row, int k) { return int8_scale(block(row, k)); }
    static Lanes lanes(const std::byte* row, int k, float scale) {
        return widen_int8(row + number_at(k), scale);
    }
    [[gnu::noinline]] static Lanes tail(const std::byte* row, int k, int n) {
        const std::byte* b = block(row, k);
        std::byte padded[kLanes] = {};
        std::memcpy(padded, b + 2 + k % kInt8Block, std::size_t(n));
        return widen_int8(padded, int8_scale(b));
    }
    static float number(const std::byte* row, int i) {
        const std::byte* b = block(row, i);
        return float(std::int8_t(b[2 + i % kInt8Block])) * int8_scale(b);
    }
};

}  // namespace kv::fast
