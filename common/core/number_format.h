// The cache's number format: how many bits each cached key and value keeps.
//
// The model computes in float32; a number is rounded once, when the
// forward pass writes it into the cache, and widened back exactly when
// attention reads it. Half the bits is half the cache's memory, so twice
// the conversations; the price is rounded keys and values, and the answer
// may change.
//
//   float32   4 bytes: the numbers as computed, nothing rounded
//   bfloat16  2 bytes: float32's 8-bit exponent, 8 significant bits
//   float16   2 bytes: a 5-bit exponent (largest 65504), 11 significant bits
//   int8      1 byte per number, an integer -127..127, times a 16-bit scale
//             shared by a block of kInt8Block numbers
//
// The plain conversions below, in integer arithmetic on the bits, are the
// reference; the row functions use the CPU's F16C instructions where it has
// them, with the same bits (the tests check every 16-bit pattern).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "config.h"

namespace kv {

enum class NumberFormat { float32, bfloat16, float16, int8 };

const char* format_name(NumberFormat format);  // "float32", "bfloat16", "float16", "int8"
std::vector<NumberFormat> all_formats();       // widest first

// One scale per block of 32 numbers of one head, stored as float16: the
// block of llama.cpp's q8_0 (8.5 bits per number). A block never spans two
// heads, whose keys have ranges of their own, so one head's large numbers
// do not coarsen another's. A head smaller than 32 is one block.
inline constexpr int kInt8Block = 32;

// ------------------------------------------ one number, the plain way

// Round to nearest, ties to even. A NaN stays a NaN (quiet, same sign, the
// top bits of its payload); too large a number becomes infinity.
std::uint16_t to_bfloat16(float x);
std::uint16_t to_float16(float x);  // numbers below 2^-14 become float16 subnormals
// Exact: every bfloat16 and float16 number is a float32 number.
float from_bfloat16(std::uint16_t bits);
float from_float16(std::uint16_t bits);

// ------------------------------------- one position's key (or value)

// How one position's key (or value) is laid out: kv_heads heads of
// head_size numbers. int8 keeps each block as its 2-byte scale, then its
// numbers (q8_0's layout); the others keep the numbers in order.
struct RowFormat {
    NumberFormat format = NumberFormat::float32;
    int kv_heads = 1;
    int head_size = 1;

    int numbers() const { return kv_heads * head_size; }
    int scales() const;            // int8: kv_heads x ceil(head_size / 32); others none
    std::size_t bytes() const;     // numbers x bytes per number + 2 bytes per scale
    int bytes_per_number() const;  // 4, 2, 2 or 1
};

RowFormat row_format_of(const Config& config, NumberFormat format);

// Bytes one token holds in the cache: a key and a value in every layer.
std::uint64_t kv_bytes_per_token(const Config& config, NumberFormat format);

// Rounds numbers() floats into bytes() bytes. For int8, each block's scale
// is its largest magnitude / 127, rounded to float16 (to nearest, or up a
// step where a subnormal scale rounded down would clamp the largest), and
// each number is round(x / scale), ties to even: within half a step of the
// scale stored, for every block whose largest magnitude is below
// 127.5 x 65504. Numbers must be finite (the forward pass checks first).
void narrow_row(const RowFormat& f, const float* numbers, std::byte* out);
// The same, one number at a time through the plain conversions above.
void narrow_row_plain(const RowFormat& f, const float* numbers, std::byte* out);

// Widens `rows` rows (bytes() apart) into rows x numbers() floats, exactly:
// an int8 number is q x scale, which float32 holds without rounding.
void widen_rows(const RowFormat& f, const std::byte* in, int rows, float* out);
void widen_rows_plain(const RowFormat& f, const std::byte* in, int rows, float* out);

}  // namespace kv
