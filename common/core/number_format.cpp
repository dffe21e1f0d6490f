#include "number_format.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "memory_arithmetic.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace kv {

const char* format_name(NumberFormat format) {
    switch (format) {  // a switch, so that a format added to the enum without a name warns
        case NumberFormat::float32:
            return "float32";
        case NumberFormat::bfloat16:
            return "bfloat16";
        case NumberFormat::float16:
            return "float16";
        case NumberFormat::int8:
            return "int8";
    }
    return "?";
}

std::vector<NumberFormat> all_formats() {
    return {NumberFormat::float32, NumberFormat::bfloat16, NumberFormat::float16,
            NumberFormat::int8};
}

// ------------------------------------------ one number, the plain way

std::uint16_t to_bfloat16(float x) {
    const std::uint32_t b = std::bit_cast<std::uint32_t>(x);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return std::uint16_t((b >> 16) | 0x0040u);  // NaN
    // Add just under half of the 16 bits dropped, plus 1 if the kept part
    // is odd: a tie carries only when that makes it even. A carry out of
    // the significand raises the exponent; the largest floats reach infinity.
    return std::uint16_t((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

float from_bfloat16(std::uint16_t bits) {
    return std::bit_cast<float>(std::uint32_t(bits) << 16);
}

std::uint16_t to_float16(float x) {
    const std::uint32_t b = std::bit_cast<std::uint32_t>(x);
    const std::uint32_t sign = (b >> 16) & 0x8000u;
    const std::uint32_t a = b & 0x7FFFFFFFu;                                            // |x|
    if (a > 0x7F800000u) return std::uint16_t(sign | 0x7E00u | ((a >> 13) & 0x03FFu));  // NaN
    // 65520 is halfway from the largest float16 (65504) to the next step up,
    // and the tie goes to the even side: infinity.
    if (a >= 0x477FF000u) return std::uint16_t(sign | 0x7C00u);
    if (a >= 0x38800000u) {  // at least 2^-14: a normal float16
        // Move the exponent from float32's bias (127) to float16's (15),
        // then round the 23-bit significand to 10 bits as to_bfloat16 does.
        const std::uint32_t m = a - (112u << 23);
        return std::uint16_t(sign | ((m + 0x0FFFu + ((m >> 13) & 1u)) >> 13));
    }
    // Below 2^-14: a subnormal float16, a whole number of steps of 2^-24.
    // |x| = significand x 2^(e - 150), so it is significand >> (126 - e)
    // steps; round what is shifted out to nearest, ties to even. Below
    // 2^-25 (e < 102) is under half a step: zero.
    const int e = int(a >> 23);
    if (e < 102) return std::uint16_t(sign);
    const std::uint32_t significand = (a & 0x007FFFFFu) | 0x00800000u;
    const int shift = 126 - e;  // 14..24
    std::uint32_t steps = significand >> shift;
    const std::uint32_t rest = significand & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (steps & 1u))) ++steps;  // may reach 2^-14: still right
    return std::uint16_t(sign | steps);
}

float from_float16(std::uint16_t bits) {
    const std::uint32_t sign = std::uint32_t(bits & 0x8000u) << 16;
    const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
    const std::uint32_t m = bits & 0x03FFu;
    if (exponent == 0x1Fu)  // infinity, or a NaN (made quiet, as the F16C instructions do)
        return std::bit_cast<float>(sign | 0x7F800000u | (m << 13) | (m ? 0x00400000u : 0u));
    if (exponent == 0) {  // zero or subnormal: m steps of 2^-24, exact in float32
        const float magnitude = float(m) * 0x1p-24f;
        return sign ? -magnitude : magnitude;
    }
    return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (m << 13));
}

// ------------------------------------- one position's key (or value)

int RowFormat::bytes_per_number() const {
    switch (format) {
        case NumberFormat::float32:
            return 4;
        case NumberFormat::bfloat16:
        case NumberFormat::float16:
            return 2;
        case NumberFormat::int8:
            return 1;
    }
    return 0;
}

int RowFormat::scales() const {
    if (format != NumberFormat::int8) return 0;
    return kv_heads * ((head_size + kInt8Block - 1) / kInt8Block);
}

std::size_t RowFormat::bytes() const {
    return std::size_t(numbers()) * std::size_t(bytes_per_number()) + 2 * std::size_t(scales());
}

RowFormat row_format_of(const Config& config, NumberFormat format) {
    return {format, config.n_kv_heads, config.head_size()};
}

std::uint64_t kv_bytes_per_token(const Config& config, NumberFormat format) {
    return bytes_per_token(cache_shape_of(config, format));  // memory_arithmetic.h
}

namespace {

// int8, one head's blocks at a time: [scale (2 bytes)][n int8s] per block.
void narrow_int8(const RowFormat& f, const float* numbers, std::byte* out) {
    for (int h = 0; h < f.kv_heads; ++h)
        for (int first = 0; first < f.head_size; first += kInt8Block) {
            const int n = std::min(kInt8Block, f.head_size - first);
            const float* x = numbers + std::size_t(h) * f.head_size + first;
            float largest = 0.0f;  // largest magnitude; a NaN is skipped (a > NaN is false)
            for (int i = 0; i < n; ++i)
                if (std::fabs(x[i]) > largest) largest = std::fabs(x[i]);
            std::uint16_t scale_bits = to_float16(std::min(largest / 127.0f, 65504.0f));
            // A subnormal float16 rounds by up to half its value: one step
            // up (the next bits) keeps largest / scale under 127.5.
            while (scale_bits < 0x7BFF && largest / from_float16(scale_bits) >= 127.5f)
                ++scale_bits;
            const float scale = from_float16(scale_bits);
            std::memcpy(out, &scale_bits, 2);
            std::int8_t q[kInt8Block];
            for (int i = 0; i < n; ++i) {
                float r = scale > 0.0f ? std::nearbyint(x[i] / scale) : 0.0f;
                if (std::isnan(r)) r = 0.0f;
                q[i] = std::int8_t(std::clamp(r, -127.0f, 127.0f));
            }
            std::memcpy(out + 2, q, std::size_t(n));
            out += 2 + n;
        }
}

void widen_int8(const RowFormat& f, const std::byte* in, float* out) {
    for (int h = 0; h < f.kv_heads; ++h)
        for (int first = 0; first < f.head_size; first += kInt8Block) {
            const int n = std::min(kInt8Block, f.head_size - first);
            std::uint16_t scale_bits;
            std::memcpy(&scale_bits, in, 2);
            const float scale = from_float16(scale_bits);
            std::int8_t q[kInt8Block];
            std::memcpy(q, in + 2, std::size_t(n));
            if (n == kInt8Block)  // a whole block: a loop of known length, which vectorizes
                for (int i = 0; i < kInt8Block; ++i) out[i] = float(q[i]) * scale;
            else
                for (int i = 0; i < n; ++i) out[i] = float(q[i]) * scale;
            in += 2 + n;
            out += n;
        }
}

// A 16-bit number at byte offset 2 i (the bytes need no alignment).
std::uint16_t half_at(const std::byte* in, std::size_t i) {
    std::uint16_t bits;
    std::memcpy(&bits, in + 2 * i, 2);
    return bits;
}

void put_half(std::byte* out, std::size_t i, std::uint16_t bits) {
    std::memcpy(out + 2 * i, &bits, 2);
}

// Rows through the plain conversions, or, with `f16c` where the CPU has
// them, float16 8 at a time by the F16C instructions, which round to
// nearest even (the mode given, whatever MXCSR says): the same bits.
void narrow(const RowFormat& f, const float* numbers, std::byte* out, [[maybe_unused]] bool f16c) {
    const std::size_t n = std::size_t(f.numbers());
    std::size_t i = 0;
    switch (f.format) {
        case NumberFormat::float32:
            std::memcpy(out, numbers, n * sizeof(float));
            return;
        case NumberFormat::bfloat16:
            for (; i < n; ++i) put_half(out, i, to_bfloat16(numbers[i]));
            return;
        case NumberFormat::float16:
#if defined(__F16C__)
            for (; f16c && i + 8 <= n; i += 8)
                _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i),
                                 _mm256_cvtps_ph(_mm256_loadu_ps(numbers + i),
                                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
            for (; i < n; ++i) put_half(out, i, to_float16(numbers[i]));
            return;
        case NumberFormat::int8:
            narrow_int8(f, numbers, out);
            return;
    }
}

void widen(const RowFormat& f, const std::byte* in, int rows, float* out,
           [[maybe_unused]] bool f16c) {
    const std::size_t n = std::size_t(f.numbers()) * std::size_t(rows);
    std::size_t i = 0;
    switch (f.format) {
        case NumberFormat::float32:
            std::memcpy(out, in, n * sizeof(float));
            return;
        case NumberFormat::bfloat16:
            for (; i < n; ++i) out[i] = from_bfloat16(half_at(in, i));
            return;
        case NumberFormat::float16:
#if defined(__F16C__)
            for (; f16c && i + 8 <= n; i += 8)
                _mm256_storeu_ps(
                    out + i,
                    _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i))));
#endif
            for (; i < n; ++i) out[i] = from_float16(half_at(in, i));
            return;
        case NumberFormat::int8:
            for (int r = 0; r < rows; ++r)
                widen_int8(f, in + std::size_t(r) * f.bytes(), out + std::size_t(r) * f.numbers());
            return;
    }
}

}  // namespace

void narrow_row(const RowFormat& f, const float* numbers, std::byte* out) {
    narrow(f, numbers, out, true);
}
void narrow_row_plain(const RowFormat& f, const float* numbers, std::byte* out) {
    narrow(f, numbers, out, false);
}
void widen_rows(const RowFormat& f, const std::byte* in, int rows, float* out) {
    widen(f, in, rows, out, true);
}
void widen_rows_plain(const RowFormat& f, const std::byte* in, int rows, float* out) {
    widen(f, in, rows, out, false);
}

}  // namespace kv
