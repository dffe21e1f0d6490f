// The cache's number formats, one number at a time: round to nearest even
// at every boundary of every 16-bit number, exact widening, the fast rows
// bit for bit against the plain conversions, and int8's blocks and scales.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "../common/core/number_format.h"
#include "../common/core/rng.h"

using namespace kv;

namespace {

float f(std::uint32_t bits) {
    return std::bit_cast<float>(bits);
}
std::uint32_t bits(float x) {
    return std::bit_cast<std::uint32_t>(x);
}

bool is_nan16(std::uint16_t h) {
    return (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0;
}
bool is_nan_b16(std::uint16_t b) {
    return (b & 0x7F80) == 0x7F80 && (b & 0x007F) != 0;
}

// Every float16 (bfloat16) that is not a NaN, widened; the next step up
// from each positive one is the next bit pattern.
std::vector<float> boundary_tests(bool bfloat) {
    std::vector<float> xs;
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        const auto p = std::uint16_t(h);
        if (bfloat ? is_nan_b16(p) : is_nan16(p)) continue;
        const float a = bfloat ? from_bfloat16(p) : from_float16(p);
        xs.push_back(a);
        xs.push_back(std::nextafter(a, 0.0f));
        xs.push_back(std::nextafter(a, a > 0 ? INFINITY : -INFINITY));
        // The midpoint to the next number away from zero, and either side.
        const std::uint16_t up = std::uint16_t(p + 1);
        if ((p & 0x7FFF) < (bfloat ? 0x7F80 : 0x7C00) &&
            !(bfloat ? is_nan_b16(up) : is_nan16(up))) {
            const float b = bfloat ? from_bfloat16(up) : from_float16(up);
            const float mid = float((double(a) + double(b)) / 2);
            xs.push_back(mid);
            xs.push_back(std::nextafter(mid, a));
            xs.push_back(std::nextafter(mid, b));
        }
    }
    Rng rng(29);
    for (int i = 0; i < 200000; ++i) xs.push_back(f(std::uint32_t(rng.next_u64())));
    for (std::uint32_t nan : {0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu, 0xFF800001u, 0x7FA00000u,
                              0x7F802000u, 0xFFC12345u})
        xs.push_back(f(nan));
    return xs;
}

}  // namespace

TEST_CASE("float16 rounds to nearest and ties to even at known values") {
    CHECK(to_float16(1.0f) == 0x3C00);
    CHECK(to_float16(-2.0f) == 0xC000);
    CHECK(to_float16(0.1f) == 0x2E66);  // 0.0999755859375
    CHECK(to_float16(-0.0f) == 0x8000);
    CHECK(to_float16(65504.0f) == 0x7BFF);       // the largest float16
    CHECK(to_float16(f(0x477FEFFF)) == 0x7BFF);  // just under 65520
    CHECK(to_float16(65520.0f) == 0x7C00);       // halfway to 65536: the tie goes to infinity
    CHECK(to_float16(INFINITY) == 0x7C00);
    CHECK(to_float16(-INFINITY) == 0xFC00);
    CHECK(to_float16(0x1p-14f) == 0x0400);             // the smallest normal
    CHECK(to_float16(0x1p-24f) == 0x0001);             // the smallest subnormal
    CHECK(to_float16(0x1p-25f) == 0x0000);             // halfway to it: the tie goes to zero, even
    CHECK(to_float16(f(0x33000001)) == 0x0001);        // just over halfway
    CHECK(to_float16(1.5f * 0x1p-24f) == 0x0002);      // 1.5 steps: to 2, even
    CHECK(to_float16(2.5f * 0x1p-24f) == 0x0002);      // 2.5 steps: to 2, even
    CHECK(to_float16(1.0f + 0x1p-11f) == 0x3C00);      // halfway 1 -> 1 + 2^-10: to 1
    CHECK(to_float16(1.0f + 3 * 0x1p-11f) == 0x3C02);  // halfway 0x3C01 -> 0x3C02: to 0x3C02
    CHECK(to_float16(0x1p-14f - 0x1p-25f) == 0x0400);  // a tie that carries into the exponent
    CHECK(to_float16(std::numeric_limits<float>::denorm_min()) == 0x0000);
    CHECK(to_float16(f(0x7F800001)) == 0x7E00);  // a signalling NaN comes out quiet
    CHECK(to_float16(f(0xFFC00000)) == 0xFE00);
    CHECK(from_float16(0x0001) == 0x1p-24f);
    CHECK(from_float16(0x7BFF) == 65504.0f);
    CHECK(from_float16(0x3555) == 0.333251953125f);
    CHECK(from_float16(0x8000) == 0.0f);
    CHECK(std::signbit(from_float16(0x8000)));
    CHECK(from_float16(0xFC00) == -INFINITY);
    CHECK(std::isnan(from_float16(0x7C01)));
}

TEST_CASE("bfloat16 rounds to nearest and ties to even at known values") {
    CHECK(to_bfloat16(1.0f) == 0x3F80);
    CHECK(to_bfloat16(f(0x3F808000)) == 0x3F80);  // a tie, to the even side
    CHECK(to_bfloat16(f(0x3F818000)) == 0x3F82);  // a tie, to the even side
    CHECK(to_bfloat16(f(0x3F808001)) == 0x3F81);
    CHECK(to_bfloat16(f(0x3F807FFF)) == 0x3F80);
    CHECK(to_bfloat16(std::numeric_limits<float>::max()) == 0x7F80);  // rounds up to infinity
    CHECK(to_bfloat16(f(0x7F7F7FFF)) == 0x7F7F);
    CHECK(to_bfloat16(f(0x00008000)) == 0x0000);  // subnormal tie, to even
    CHECK(to_bfloat16(f(0x00018000)) == 0x0002);
    CHECK(to_bfloat16(f(0x80000001)) == 0x8000);
    CHECK(to_bfloat16(f(0x7F800001)) == 0x7FC0);  // quiet, not infinity
    CHECK(to_bfloat16(f(0xFFC00000)) == 0xFFC0);
    CHECK(from_bfloat16(0x3F80) == 1.0f);
    CHECK(from_bfloat16(0xC049) == -3.140625f);
}

TEST_CASE("every 16-bit number widens exactly and rounds back to itself") {
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        const auto p = std::uint16_t(h);
        if (!is_nan16(p)) REQUIRE(to_float16(from_float16(p)) == p);
        if (!is_nan_b16(p)) REQUIRE(to_bfloat16(from_bfloat16(p)) == p);
        if (is_nan16(p)) REQUIRE(std::isnan(from_float16(p)));
        if (is_nan_b16(p)) REQUIRE(std::isnan(from_bfloat16(p)));
    }
    // Widening keeps the order: each positive finite number is above the last.
    for (std::uint16_t h = 1; h < 0x7C00; ++h)
        REQUIRE(from_float16(h) > from_float16(std::uint16_t(h - 1)));
    for (std::uint16_t b = 1; b < 0x7F80; ++b)
        REQUIRE(from_bfloat16(b) > from_bfloat16(std::uint16_t(b - 1)));
}

TEST_CASE(
    "between two neighbouring 16-bit numbers the nearer wins and a tie goes to the even one") {
    for (const bool bfloat : {false, true}) {
        const std::uint16_t top = bfloat ? 0x7F80 : 0x7C00;  // infinity
        for (std::uint32_t sign : {0u, 0x8000u})
            for (std::uint32_t h = 0; h + 1 < top; ++h) {
                const auto a = std::uint16_t(sign | h), b = std::uint16_t(sign | (h + 1));
                const float x = bfloat ? from_bfloat16(a) : from_float16(a);
                const float y = bfloat ? from_bfloat16(b) : from_float16(b);
                const float mid = float((double(x) + double(y)) / 2);  // exact in float32
                auto to = [&](float v) { return bfloat ? to_bfloat16(v) : to_float16(v); };
                REQUIRE(to(mid) == ((a & 1) ? b : a));
                REQUIRE(to(std::nextafter(mid, x)) == a);
                REQUIRE(to(std::nextafter(mid, y)) == b);
            }
    }
}

#if defined(__FLT16_MAX__) && !defined(__clang__)
// GCC's own _Float16, converted by the compiler (an instruction or its
// library), as a second opinion on the plain float16 conversion.
TEST_CASE("float16 agrees with the compiler's _Float16 at every boundary") {
    for (const float x : boundary_tests(false)) {
        const _Float16 h = static_cast<_Float16>(x);
        std::uint16_t compiler;
        std::memcpy(&compiler, &h, 2);
        const std::uint16_t ours = to_float16(x);
        if (std::isnan(x))
            REQUIRE(is_nan16(ours));
        else
            REQUIRE(ours == compiler);
    }
}
#endif

TEST_CASE("the fast rows give the plain conversions' bits for every 16-bit pattern") {
    for (const NumberFormat format : {NumberFormat::float16, NumberFormat::bfloat16}) {
        // Widening: all 65,536 patterns, NaNs included, as one long row.
        std::vector<std::byte> in(2 * 0x10000);
        for (std::uint32_t h = 0; h < 0x10000; ++h) {
            const auto p = std::uint16_t(h);
            std::memcpy(in.data() + 2 * h, &p, 2);
        }
        const RowFormat row{format, 1, 0x10000};
        std::vector<float> fast(0x10000), plain(0x10000);
        widen_rows(row, in.data(), 1, fast.data());
        widen_rows_plain(row, in.data(), 1, plain.data());
        for (std::uint32_t h = 0; h < 0x10000; ++h) REQUIRE(bits(fast[h]) == bits(plain[h]));

        // Narrowing: every number, each side of it, every midpoint and each
        // side of that, random bit patterns and NaNs with payloads.
        const std::vector<float> xs = boundary_tests(format == NumberFormat::bfloat16);
        const RowFormat long_row{format, 1, int(xs.size())};
        std::vector<std::byte> a(long_row.bytes()), b(long_row.bytes());
        narrow_row(long_row, xs.data(), a.data());
        narrow_row_plain(long_row, xs.data(), b.data());
        CHECK(a == b);
    }
}

TEST_CASE("int8 keeps each block as a float16 scale and round(x / scale)") {
    // Largest magnitude 127: the scale is exactly 1, and each number rounds
    // to the nearest integer, ties to even.
    const RowFormat row{NumberFormat::int8, 1, 6};
    CHECK(row.scales() == 1);
    CHECK(row.bytes() == 6 + 2);
    const float x[6] = {127.0f, -3.5f, 2.5f, 0.4f, -127.0f, 200.0f / 3};
    std::vector<std::byte> packed(row.bytes());
    narrow_row(row, x, packed.data());
    std::uint16_t scale;
    std::memcpy(&scale, packed.data(), 2);
    CHECK(scale == 0x3C00);
    std::int8_t q[6];
    std::memcpy(q, packed.data() + 2, 6);
    CHECK(std::vector<int>(q, q + 6) == std::vector<int>{127, -4, 2, 0, -127, 67});
    float back[6];
    widen_rows(row, packed.data(), 1, back);
    CHECK(std::vector<float>(back, back + 6) ==
          std::vector<float>{127.0f, -4.0f, 2.0f, 0.0f, -127.0f, 67.0f});
}

TEST_CASE("int8 blocks are 32 numbers of one head and each keeps its own scale") {
    // Two heads of 40: blocks of 32 and 8 in each, four scales.
    const RowFormat row{NumberFormat::int8, 2, 40};
    CHECK(row.scales() == 4);
    CHECK(row.bytes() == 80 + 4 * 2);
    std::vector<float> x(80);
    Rng rng(3);
    for (float& v : x) v = rng.symmetric(1.0f);
    std::vector<std::byte> packed(row.bytes());
    std::vector<float> back(80);
    narrow_row(row, x.data(), packed.data());
    widen_rows(row, packed.data(), 1, back.data());
    // Within half a step of its own block's scale (largest / 127, rounded).
    const int starts[4] = {0, 32, 40, 72}, ends[4] = {32, 40, 72, 80};
    for (int blk = 0; blk < 4; ++blk) {
        float largest = 0;
        for (int i = starts[blk]; i < ends[blk]; ++i)
            largest = std::max(largest, std::fabs(x[std::size_t(i)]));
        const float scale = from_float16(to_float16(largest / 127));
        for (int i = starts[blk]; i < ends[blk]; ++i)
            CHECK(std::fabs(back[std::size_t(i)] - x[std::size_t(i)]) <= scale / 2);
    }
    // One large number changes its own block and no other.
    std::vector<float> y = x;
    y[35] = 1000.0f;
    std::vector<float> back_y(80);
    narrow_row(row, y.data(), packed.data());
    widen_rows(row, packed.data(), 1, back_y.data());
    for (int i = 0; i < 80; ++i)
        if (i < 32 || i >= 40) CHECK(back_y[std::size_t(i)] == back[std::size_t(i)]);
    CHECK(back_y[35] == doctest::Approx(1000.0f).epsilon(0.001));  // 127 steps of 7.875
    CHECK(back_y[36] != back[36]);  // its block's numbers are now coarse
}

TEST_CASE("int8 edge cases: zeros, NaN, infinity and tiny blocks stay in range") {
    const RowFormat row{NumberFormat::int8, 1, 4};
    std::vector<std::byte> packed(row.bytes());
    float back[4];
    const float zeros[4] = {0.0f, -0.0f, 0.0f, 0.0f};
    narrow_row(row, zeros, packed.data());
    widen_rows(row, packed.data(), 1, back);
    for (float v : back) CHECK(v == 0.0f);
    const float odd[4] = {NAN, INFINITY, -1.0f, 1e-30f};
    narrow_row(row, odd, packed.data());
    widen_rows(row, packed.data(), 1, back);
    CHECK(back[0] == 0.0f);                             // an integer has no NaN
    CHECK(back[1] == 127.0f * 65504.0f);                // the largest scale, held at 127
    CHECK(back[2] == 0.0f);                             // a step of 65504 swallows it
    const float tiny[4] = {1e-9f, -1e-9f, 0.0f, 0.0f};  // a scale below float16's range
    narrow_row(row, tiny, packed.data());
    widen_rows(row, packed.data(), 1, back);
    for (float v : back) CHECK(v == 0.0f);
}

TEST_CASE("int8 widens to q x scale exactly and the fast rows match the plain ones") {
    const RowFormat row{NumberFormat::int8, 3, 48};
    const int rows = 5;
    std::vector<float> x(std::size_t(rows) * 144);
    Rng rng(7);
    for (float& v : x) v = rng.symmetric(3.0f) * rng.uniform();
    std::vector<std::byte> a(row.bytes() * rows), b(row.bytes() * rows);
    for (int r = 0; r < rows; ++r) {
        narrow_row(row, x.data() + r * 144, a.data() + r * row.bytes());
        narrow_row_plain(row, x.data() + r * 144, b.data() + r * row.bytes());
    }
    CHECK(a == b);
    std::vector<float> fast(x.size()), plain(x.size());
    widen_rows(row, a.data(), rows, fast.data());
    widen_rows_plain(row, a.data(), rows, plain.data());
    CHECK(fast == plain);
    // q x scale in double is the same number: the float product was exact.
    const std::byte* p = a.data();
    std::size_t at = 0;
    for (int r = 0; r < rows; ++r)
        for (int h = 0; h < 3; ++h)
            for (int first = 0; first < 48; first += 32) {
                const int n = std::min(32, 48 - first);
                std::uint16_t s;
                std::memcpy(&s, p, 2);
                for (int i = 0; i < n; ++i) {
                    std::int8_t q;
                    std::memcpy(&q, p + 2 + i, 1);
                    CHECK(double(fast[at++]) == double(q) * double(from_float16(s)));
                }
                p += 2 + n;
            }
}

TEST_CASE("bytes per token at each format: the demo model 3072 -> 1536 -> 768 plus scales") {
    const Config demo;  // 6 layers, 2 KV heads of 32 numbers
    CHECK(kv_bytes_per_token(demo, NumberFormat::float32) == 3072);
    CHECK(kv_bytes_per_token(demo, NumberFormat::float32) == demo.kv_bytes_per_token());
    CHECK(kv_bytes_per_token(demo, NumberFormat::bfloat16) == 1536);
    CHECK(kv_bytes_per_token(demo, NumberFormat::float16) == 1536);
    CHECK(kv_bytes_per_token(demo, NumberFormat::int8) == 768 + 2 * 6 * 2 * 2);  // 816
}
