// A narrower cache's numbers widened in registers: kNativeWidth stored
// numbers (the build's widest vector: 16 with AVX-512, 8 with AVX, 4 with
// SSE2) become one Native vector of float32, exactly (number_format.h:
// every bfloat16 and float16 number is a float32 number, and an int8 number
// times its float16 scale is one too). Attention reads the cache where it
// lies through these, so it reads 2 or about 1 byte per number instead of
// 4, and adds exactly the floats it would have read from a float32 copy.
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

typedef std::uint16_t NativeHalves
    __attribute__((vector_size(kNativeWidth * sizeof(std::uint16_t))));
typedef std::uint32_t NativeWords
    __attribute__((vector_size(kNativeWidth * sizeof(std::uint32_t))));
typedef std::int32_t NativeInts __attribute__((vector_size(kNativeWidth * sizeof(std::int32_t))));

// ------------------------------------------------ kNativeWidth numbers at once

inline Native widen_bfloat16(const std::byte* p) {
    NativeHalves h;
    std::memcpy(&h, p, sizeof h);
    return std::bit_cast<Native>(__builtin_convertvector(h, NativeWords) << 16);
}

inline Native widen_float16(const std::byte* p) {
#if KV_NATIVE_WIDTH == 16
    // The zero-masked form, every lane kept: GCC 12 warns that the plain
    // form's undefined first operand may be used.
    return std::bit_cast<Native>(_mm512_maskz_cvtph_ps(
        __mmask16(0xFFFF), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
#elif KV_NATIVE_WIDTH == 8 && defined(__F16C__)
    return std::bit_cast<Native>(
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#else
    // from_float16's cases, all computed and one kept per lane.
    NativeHalves bits;
    std::memcpy(&bits, p, sizeof bits);
    const NativeWords h = __builtin_convertvector(bits, NativeWords);
    const NativeWords sign = (h & 0x8000u) << 16;
    const NativeWords exponent = (h >> 10) & 0x1Fu;
    const NativeWords m = h & 0x03FFu;
    const NativeWords normal = sign | ((exponent + 112u) << 23) | (m << 13);
    const NativeWords quiet = (m != 0u) & 0x00400000u;  // a NaN is made quiet, as F16C does
    const NativeWords special = sign | 0x7F800000u | (m << 13) | quiet;
    // zero or subnormal: m steps of 2^-24, exact in float32
    const Native small = __builtin_convertvector(m, Native) * 0x1p-24f;
    const NativeWords tiny = std::bit_cast<NativeWords>(small) | sign;
    return std::bit_cast<Native>(exponent == 0x1Fu ? special : (exponent == 0u ? tiny : normal));
#endif
}

// Sign-extended to int32 by AVX-512's or AVX2's instruction; without them,
// each number moved to the top byte of a 32-bit lane and shifted down with
// its sign (GCC turns a plain int8-to-int32 conversion into one scalar
// conversion a lane); then converted and multiplied by the scale, exactly.
inline Native widen_int8(const std::byte* p, float scale) {
#if KV_NATIVE_WIDTH == 16
    const NativeInts q = std::bit_cast<NativeInts>(_mm512_maskz_cvtepi8_epi32(
        __mmask16(0xFFFF), _mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#elif KV_NATIVE_WIDTH == 8 && defined(__AVX2__)
    const NativeInts q = std::bit_cast<NativeInts>(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
#else
    typedef std::int8_t Int8s __attribute__((vector_size(kNativeWidth)));
    Int8s q8;
    std::memcpy(&q8, p, sizeof q8);
    const Int8s zero = {};
#if KV_NATIVE_WIDTH == 8
    const auto top = __builtin_shufflevector(q8, zero, 8, 8, 8, 0, 8, 8, 8, 1, 8, 8, 8, 2, 8, 8, 8,
                                             3, 8, 8, 8, 4, 8, 8, 8, 5, 8, 8, 8, 6, 8, 8, 8, 7);
#else
    const auto top =
        __builtin_shufflevector(q8, zero, 4, 4, 4, 0, 4, 4, 4, 1, 4, 4, 4, 2, 4, 4, 4, 3);
#endif
    const NativeInts q = std::bit_cast<NativeInts>(top) >> 24;
#endif
    return __builtin_convertvector(q, Native) * scale;
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

// Where numbers of one KV head's row sit, for each format: Stored<F>::native
// (row, k) widens numbers k..k+kNativeWidth-1 (k a multiple of kNativeWidth,
// all inside the row; int8's takes its block's scale, read once by scale()),
// number() one. The head's row starts at `row`; an
// int8 row is blocks of kInt8Block numbers, each after its scale, and
// kNativeWidth divides kInt8Block, so one vector never straddles two blocks.
template <NumberFormat F>
struct Stored;

template <>
struct Stored<NumberFormat::float32> {
    static const float* at(const std::byte* row, int k) {
        return reinterpret_cast<const float*>(row) + k;
    }
    static Native native(const std::byte* row, int k) { return load_native(at(row, k)); }
    static float number(const std::byte* row, int i) { return *at(row, i); }
};

// The 16-bit formats: numbers 2 bytes apart.
template <Native (*Widen)(const std::byte*), float (*One)(std::uint16_t)>
struct Stored16 {
    static Native native(const std::byte* row, int k) { return Widen(row + 2 * k); }
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
    // The scale of number k's block, read once for the block's vectors.
    static float scale(const std::byte* row, int k) { return int8_scale(row + block_at(k)); }
    static Native native(const std::byte* row, int k, float scale) {
        return widen_int8(row + number_at(k), scale);
    }
    static float number(const std::byte* row, int i) {
        return float(std::int8_t(row[number_at(i)])) * scale(row, i);
    }
};

}  // namespace kv::fast
