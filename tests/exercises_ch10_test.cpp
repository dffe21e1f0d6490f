// Chapter 10 exercises (see chapters/10_cache_number_format/EXERCISES.md).
// Skipped until you enable them: ./build/book_tests -ts="exercises ch10" --no-skip
// (or remove * doctest::skip() from one case).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "../chapters/10_cache_number_format/exercises.h"
#include "../common/core/number_format.h"
#include "../common/core/rng.h"

using namespace kv;
using namespace kv::exercises;

TEST_SUITE("exercises ch10") {
    TEST_CASE("exercise 10.4 E4M3 by hand and at every pattern" * doctest::skip()) {
        CHECK(from_e4m3(0x38) == 1.0f);    // exponent 7 - 7 = 0
        CHECK(from_e4m3(0x7E) == 448.0f);  // the largest
        CHECK(from_e4m3(0xFE) == -448.0f);
        CHECK(from_e4m3(0x08) == 0x1p-6f);  // the smallest normal
        CHECK(from_e4m3(0x01) == 0x1p-9f);  // the smallest subnormal
        CHECK(from_e4m3(0x07) == 7 * 0x1p-9f);
        CHECK(std::isnan(from_e4m3(0x7F)));
        CHECK(to_e4m3(1.0f) == 0x38);
        CHECK(to_e4m3(1.0625f) == 0x38);  // halfway 1 -> 1.125: to the even 1
        CHECK(to_e4m3(1.1875f) == 0x3A);  // halfway 1.125 -> 1.25: to the even 1.25
        CHECK(to_e4m3(1.07f) == 0x39);
        CHECK(to_e4m3(0x1p-10f) == 0x00);   // halfway to the smallest: to the even 0
        CHECK(to_e4m3(0x1.8p-9f) == 0x02);  // 1.5 steps: to 2
        CHECK(to_e4m3(1000.0f) == 0x7E);    // saturates
        CHECK(to_e4m3(-INFINITY) == 0xFE);
        CHECK(to_e4m3(-0.0f) == 0x80);
        CHECK((to_e4m3(NAN) & 0x7F) == 0x7F);
        for (int b = 0; b < 256; ++b) {
            if ((b & 0x7F) == 0x7F) continue;  // NaN
            REQUIRE(to_e4m3(from_e4m3(std::uint8_t(b))) == b);
        }
        // Between neighbours: the nearer one, a tie to the even one.
        for (int b = 0; b < 0x7E; ++b) {
            const float x = from_e4m3(std::uint8_t(b)), y = from_e4m3(std::uint8_t(b + 1));
            const float mid = (x + y) / 2;  // exact in float
            REQUIRE(to_e4m3(mid) == ((b & 1) ? b + 1 : b));
            REQUIRE(to_e4m3(std::nextafter(mid, x)) == b);
            REQUIRE(to_e4m3(std::nextafter(mid, y)) == b + 1);
        }
    }

    TEST_CASE("exercise 10.5 int4 blocks" * doctest::skip()) {
        CHECK(int4_row_bytes({NumberFormat::int8, 1, 32}) == 16 + 2);  // 4.5 bits a number
        CHECK(int4_row_bytes({NumberFormat::int8, 8, 128}) == 8 * 4 * 18);
        CHECK(int4_row_bytes({NumberFormat::int8, 2, 6}) == 2 * (3 + 2));
        CHECK(int4_row_bytes({NumberFormat::int8, 1, 33}) == 18 + 1 + 2);  // blocks of 32 and 1
        // Largest magnitude 7: the scale is exactly 1.
        const RowFormat small{NumberFormat::int8, 1, 6};
        const float x[6] = {7.0f, -2.5f, 3.5f, 0.4f, -7.0f, 6.6f};
        std::vector<std::byte> packed(int4_row_bytes(small));
        narrow_int4_row(small, x, packed.data());
        float back[6];
        widen_int4_row(small, packed.data(), back);
        CHECK(std::vector<float>(back, back + 6) ==
              std::vector<float>{7.0f, -2.0f, 4.0f, 0.0f, -7.0f, 7.0f});
        // Every number within half a step of its own block's scale.
        const RowFormat row{NumberFormat::int8, 2, 40};
        std::vector<float> y(80), z(80);
        Rng rng(10);
        for (float& v : y) v = rng.symmetric(2.0f);
        packed.assign(int4_row_bytes(row), std::byte{0});
        narrow_int4_row(row, y.data(), packed.data());
        widen_int4_row(row, packed.data(), z.data());
        const int starts[4] = {0, 32, 40, 72}, ends[4] = {32, 40, 72, 80};
        for (int b = 0; b < 4; ++b) {
            float largest = 0;
            for (int i = starts[b]; i < ends[b]; ++i)
                largest = std::max(largest, std::fabs(y[std::size_t(i)]));
            const float scale = from_float16(to_float16(largest / 7));
            for (int i = starts[b]; i < ends[b]; ++i)
                CHECK(std::fabs(z[std::size_t(i)] - y[std::size_t(i)]) <= scale / 2);
        }
        const float zeros[6] = {};
        narrow_int4_row(small, zeros, packed.data());
        widen_int4_row(small, packed.data(), back);
        for (float v : back) CHECK(v == 0.0f);
    }
}
