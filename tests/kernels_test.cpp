// The arithmetic kernels against values worked out by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "../common/core/kernels.h"
#include "../common/core/rng.h"

using namespace kv;

namespace {

Matrix random_matrix(int rows, int cols, std::uint64_t seed) {
    Matrix m(rows, cols);
    Rng rng(seed);
    for (float& v : m.data) v = rng.symmetric(1.0f);
    return m;
}

// The bits of each float, so that vectors compare bit for bit (-0 against
// +0, NaN against NaN) and a failure prints the first place they differ.
template <class Floats>
std::vector<std::uint32_t> bits(const Floats& v) {
    std::vector<std::uint32_t> out;
    for (float f : v) out.push_back(std::bit_cast<std::uint32_t>(f));
    return out;
}

// Random numbers in [-1, 1], every seventh times 1,000: sums of mixed sizes,
// whose rounding depends on the order they are added in.
Matrix mixed_matrix(int rows, int cols, std::uint64_t seed) {
    Matrix m = random_matrix(rows, cols, seed);
    for (std::size_t i = 0; i < m.data.size(); i += 7) m.data[i] *= 1000.0f;
    return m;
}

}  // namespace

TEST_CASE("dot product of small vectors by hand") {
    const std::vector<float> a = {1, 2, 3}, b = {4, -5, 6};
    CHECK(dot(a.data(), b.data(), 3) == 12.0f);  // 4 - 10 + 18
    std::vector<float> ones(37, 1.0f);           // two full lane groups and a tail of 5
    CHECK(dot(ones.data(), ones.data(), 37) == 37.0f);
    CHECK(dot(a.data(), b.data(), 0) == 0.0f);
}

TEST_CASE("dot_in_book_order by hand: 16 partial sums then the pairwise tree") {
    // 17 terms: term 16 joins partial sum 0, after term 0.
    std::vector<float> a(17, 1.0f), b(17);
    for (int k = 0; k < 17; ++k) b[k] = float(k);
    CHECK(dot_in_book_order(a.data(), b.data(), 17) == 136.0f);  // 0 + 1 + ... + 16
    CHECK(dot_in_book_order(a.data(), b.data(), 0) == 0.0f);
    // The order is real: 2^24 + 1 rounds back to 2^24, so a left-to-right sum
    // of (2^24, 1, 0, 1) is 2^24, while here the two ones sit in partial sums
    // 1 and 3, meet each other first (at width 2) and survive: 2^24 + 2.
    const std::vector<float> big = {16777216.0f, 1.0f, 0.0f, 1.0f}, ones = {1, 1, 1, 1};
    CHECK(((16777216.0f + 1.0f) + 0.0f) + 1.0f == 16777216.0f);
    CHECK(dot_in_book_order(big.data(), ones.data(), 4) == 16777218.0f);
    CHECK(dot(big.data(), ones.data(), 4) == 16777218.0f);
}

TEST_CASE("dot and matmul equal the book order bit for bit") {
    // Every length from 0 to 300 (every tail of the 16 lanes, several times
    // over) and a few long ones, on random numbers of mixed size.
    std::vector<int> lengths;
    for (int n = 0; n <= 300; ++n) lengths.push_back(n);
    for (int n : {511, 512, 513, 1000, 4103}) lengths.push_back(n);
    for (int n : lengths) {
        const int n_rows = 3;
        const int stride = n + 5;
        const Matrix x = random_matrix(1, std::max(n, 1), 80 + n);
        Matrix rows = random_matrix(n_rows, std::max(stride, 1), 90 + n);
        for (std::size_t i = 0; i < rows.data.size(); i += 7) rows.data[i] *= 1000.0f;
        for (int j = 0; j < n_rows; ++j) {
            const float* row = rows.row(0) + std::size_t(j) * stride;
            INFO("length " << n << " row " << j);
            CHECK(std::bit_cast<std::uint32_t>(dot(x.row(0), row, n)) ==
                  std::bit_cast<std::uint32_t>(dot_in_book_order(x.row(0), row, n)));
        }
    }
    // matmul through the 4 x 4 tile, the 8-row decode stream and every leftover.
    for (int rows : {1, 2, 3, 4, 5, 7, 16})
        for (int in : {1, 15, 16, 17, 31, 33, 256, 257}) {
            const Matrix x = random_matrix(rows, in, 100 + rows * 7 + in);
            const Matrix w = random_matrix(19, in, 200 + in);
            Matrix y(rows, 19);
            matmul(x, w, y);
            for (int i = 0; i < rows; ++i)
                for (int j = 0; j < 19; ++j) {
                    INFO("rows " << rows << " in " << in << " output " << i << ", " << j);
                    CHECK(std::bit_cast<std::uint32_t>(y.at(i, j)) ==
                          std::bit_cast<std::uint32_t>(dot_in_book_order(x.row(i), w.row(j), in)));
                }
        }
}

TEST_CASE("every matmul kernel of every row class equals matmul_reference to the last bit") {
    // Each candidate the planner may choose, on every row count of every
    // class (and beyond: a kernel takes any number of rows, 1 to 17 here,
    // past every tile's height), lengths around the 16 lanes, the 8 and 4
    // of an AVX2 or SSE2 vector and their tails, and weight row counts
    // around every block of 16, 8, 6, 4, 3, 2 and 1 rows, so every leftover
    // path runs.
    for (RowClass c : {RowClass::one, RowClass::few, RowClass::many})
        for (const MatmulKernel& kernel : matmul_kernels(c)) {
            CHECK(kernel.rows == c);
            for (int rows = 1; rows <= 17; ++rows)
                for (int in : {1, 4, 7, 8, 9, 15, 16, 17, 33, 100})
                    for (int out : {1, 2, 3, 5, 7, 8, 11, 13, 16, 17, 25, 35}) {
                        const Matrix x = mixed_matrix(rows, in, 300 + rows * 31 + in);
                        const Matrix w = mixed_matrix(out, in, 400 + out * 37 + in);
                        Matrix fast(rows, out), plain(rows, out);
                        for (float& v : fast.data) v = -1.0f;
                        kernel.run(x, w, fast);
                        matmul_reference(x, w, plain);
                        INFO(kernel.name << ": rows " << rows << " in " << in << " out " << out);
                        CHECK(bits(fast.data) == bits(plain.data));
                    }
        }
}

TEST_CASE("row classes: one row, up to kFewRowsMost rows, more") {
    CHECK(row_class(1) == RowClass::one);
    CHECK(row_class(2) == RowClass::few);
    CHECK(row_class(kFewRowsMost) == RowClass::few);
    CHECK(row_class(kFewRowsMost + 1) == RowClass::many);
    CHECK(row_class(128) == RowClass::many);
    const MatmulChoice choice;  // the first candidate of each class
    CHECK(&choice.for_rows(1) == &matmul_kernels(RowClass::one)[0]);
    CHECK(&choice.for_rows(3) == &matmul_kernels(RowClass::few)[0]);
    CHECK(&choice.for_rows(16) == &matmul_kernels(RowClass::many)[0]);
}

TEST_CASE("matmul by hand: y = x times w transposed") {
    Matrix x(2, 3), w(2, 3), y(2, 2);
    x.data = {1, 2, 3, 4, 5, 6};
    w.data = {1, 0, -1, 2, 1, 0};  // rows are outputs
    matmul(x, w, y);
    CHECK(y.at(0, 0) == -2.0f);  // 1 - 3
    CHECK(y.at(0, 1) == 4.0f);   // 2 + 2
    CHECK(y.at(1, 0) == -2.0f);  // 4 - 6
    CHECK(y.at(1, 1) == 13.0f);  // 8 + 5
}

TEST_CASE("matmul equals matmul_reference to the last bit on odd sizes") {
    // Sizes around the lane count (16), the tiles and the one-row stream, so
    // every edge path runs.
    for (int rows : {1, 3, 4, 5, 6, 9, 11, 17})
        for (int in : {1, 3, 16, 17, 255})
            for (int out : {1, 3, 5, 6, 7, 8, 9, 13, 17}) {
                const Matrix x = random_matrix(rows, in, 1 + rows * 1000 + in);
                const Matrix w = random_matrix(out, in, 2 + out * 1000 + in);
                Matrix fast(rows, out), plain(rows, out);
                matmul(x, w, fast);
                matmul_reference(x, w, plain);
                INFO("rows " << rows << " in " << in << " out " << out);
                CHECK(fast.data == plain.data);
            }
}

TEST_CASE("every matmul output is bit-identical to dot of its row and column") {
    // This is what makes batching and the cache exact: the tile a number is
    // computed in does not change how it is rounded. 17 weight rows reach
    // the 8-row decode stream and the 6-row tile with leftovers; 1 to 9 input
    // rows reach full 4-row tiles and leftovers of 1, 2 and 3.
    for (int rows : {1, 2, 3, 4, 7, 9})
        for (int in : {5, 16, 33}) {
            const Matrix x = random_matrix(rows, in, 10 + rows);
            const Matrix w = random_matrix(17, in, 20 + in);
            Matrix y(rows, 17);
            matmul(x, w, y);
            for (int i = 0; i < rows; ++i)
                for (int j = 0; j < 17; ++j) CHECK(y.at(i, j) == dot(x.row(i), w.row(j), in));
        }
}

TEST_CASE("matmul rejects shapes that do not match") {
    Matrix x(2, 3), w(4, 5), y(2, 4);
    CHECK_THROWS_AS(matmul(x, w, y), std::invalid_argument);
}

TEST_CASE("rmsnorm of a known vector") {
    // x = (3, 4): mean square 12.5, rms sqrt(12.5 + 1e-5).
    const std::vector<float> x = {3, 4}, scale = {1, 2};
    std::vector<float> out(2);
    rmsnorm(out, x, scale);
    const double rms = std::sqrt(12.5 + 1e-5);
    CHECK(out[0] == doctest::Approx(3 / rms).epsilon(1e-6));
    CHECK(out[1] == doctest::Approx(2 * 4 / rms).epsilon(1e-6));
}

TEST_CASE("softmax sums to one and survives huge inputs") {
    std::vector<float> x = {1, 2, 3};
    softmax(x);
    const double e = std::exp(1.0), total = e + e * e + e * e * e;
    CHECK(x[0] == doctest::Approx(e / total));
    CHECK(x[2] == doctest::Approx(e * e * e / total));
    CHECK(x[0] + x[1] + x[2] == doctest::Approx(1.0f));

    std::vector<float> big = {1000.0f, 1000.0f, -1000.0f, 999.0f};  // exp(1000) overflows a float
    softmax(big);
    for (float v : big) CHECK(std::isfinite(v));
    CHECK(big[0] == big[1]);
    CHECK(big[2] == 0.0f);
    CHECK(std::accumulate(big.begin(), big.end(), 0.0f) == doctest::Approx(1.0f));
}

TEST_CASE("softmax finds the largest score wherever it is") {
    // The largest is searched kLanes at a time, then in a tail: put a score
    // of 1000 at every position of rows of every length up to three vectors
    // and a bit. Found, it gives 1 there and exp(-1000) = 0 elsewhere; missed,
    // exp(1000) overflows and the row is not finite.
    for (int n = 1; n <= 3 * kLanes + 1; ++n)
        for (int at = 0; at < n; ++at) {
            CAPTURE(n);
            CAPTURE(at);
            std::vector<float> x(std::size_t(n), 0.0f);
            x[std::size_t(at)] = 1000.0f;
            softmax(x);
            CHECK(x[std::size_t(at)] == 1.0f);
            CHECK(std::accumulate(x.begin(), x.end(), 0.0f) == 1.0f);
        }
}

TEST_CASE("silu by hand") {
    CHECK(silu(0.0f) == 0.0f);
    CHECK(silu(1.0f) == doctest::Approx(1.0 / (1.0 + std::exp(-1.0))));
    CHECK(silu(-2.0f) == doctest::Approx(-2.0 / (1.0 + std::exp(2.0))));
    CHECK(silu(-100.0f) == doctest::Approx(0.0).epsilon(1e-30));
}

TEST_CASE("rope turns the first pair by pos radians and the last pair slowest") {
    // head size 4: pair 0 turns by pos * 10000^0 = pos, pair 1 by pos * 10000^(-1/2) = pos / 100.
    std::vector<float> v = {1, 0, 1, 0};
    rope(v, 4, 2);
    CHECK(v[0] == doctest::Approx(std::cos(2.0)));
    CHECK(v[1] == doctest::Approx(std::sin(2.0)));
    CHECK(v[2] == doctest::Approx(std::cos(0.02)));
    CHECK(v[3] == doctest::Approx(std::sin(0.02)));
    std::vector<float> same = {0.5f, -0.25f, 2, 3};
    const std::vector<float> before = same;
    rope(same, 4, 0);  // position 0 is no rotation at all
    CHECK(same == before);
}

TEST_CASE("rope keeps lengths and makes q.k depend only on the distance") {
    const int hs = 8;
    Rng rng(7);
    std::vector<float> q(2 * hs), k(2 * hs);  // two heads
    for (float& v : q) v = rng.symmetric(1);
    for (float& v : k) v = rng.symmetric(1);
    auto rotated = [&](std::vector<float> v, int pos) {
        rope(v, hs, pos);
        return v;
    };
    const std::vector<float> q5 = rotated(q, 5);
    CHECK(dot(q5.data(), q5.data(), 2 * hs) == doctest::Approx(dot(q.data(), q.data(), 2 * hs)));
    // Query at 7, key at 3; query at 104, key at 100: the same distance, 4.
    const std::vector<float> a_q = rotated(q, 7), a_k = rotated(k, 3);
    const std::vector<float> b_q = rotated(q, 104), b_k = rotated(k, 100);
    for (int h = 0; h < 2; ++h) {
        const float near = dot(a_q.data() + h * hs, a_k.data() + h * hs, hs);
        const float far = dot(b_q.data() + h * hs, b_k.data() + h * hs, hs);
        CHECK(near == doctest::Approx(far).epsilon(1e-4));
    }
    // A different distance gives a different score.
    const std::vector<float> c_k = rotated(k, 6);
    CHECK(dot(a_q.data(), c_k.data(), hs) != doctest::Approx(dot(a_q.data(), a_k.data(), hs)));
}

TEST_CASE("dot_rows_for_group equals dot_rows_reference for each query to the last bit") {
    // Groups of 1 to 9 heads: whole slices of 4 and every leftover; key
    // counts around the blocks of 4, 2 and 1; lengths with and without a
    // tail of the 16 lanes; numbers of mixed size.
    for (int n_queries : {1, 2, 3, 4, 5, 8, 9})
        for (int n_rows : {0, 1, 2, 3, 4, 5, 9, 17, 40})
            for (int n : {0, 1, 2, 6, 16, 17, 33, 100}) {
                const int stride = n + 3, query_stride = n + 1, out_stride = n_rows + 2;
                const Matrix keys = mixed_matrix(std::max(n_rows, 1), stride, 80 + n_rows);
                const Matrix q = mixed_matrix(n_queries, query_stride, 90 + n);
                const RowRun run{keys.row(0), n_rows};
                std::vector<float> fast(std::size_t(n_queries) * out_stride, -1.0f), plain = fast;
                dot_rows_for_group(q.row(0), n_queries, std::size_t(query_stride),
                                   std::span(&run, 1), n_rows, std::size_t(stride), n, fast.data(),
                                   std::size_t(out_stride));
                for (int i = 0; i < n_queries; ++i)
                    dot_rows_reference(q.row(i), keys.row(0), n_rows, std::size_t(stride), n,
                                       plain.data() + i * out_stride);
                INFO("queries " << n_queries << " rows " << n_rows << " length " << n);
                CHECK(bits(fast) == bits(plain));  // the padding is left as it was
            }
}

TEST_CASE("weighted_sum_add_for_group equals the plain loop for each sum to the last bit") {
    // Widths of 4, 2 and 1 lane chunks with every scalar tail (0 to 80
    // outputs), sums that start from what out already holds, row counts long
    // enough that another order of addition rounds differently, groups of 1
    // to 9.
    for (int n_sums : {1, 2, 3, 4, 5, 8, 9})
        for (int n_rows : {0, 1, 2, 9, 100})
            for (int width = 0; width <= 80; ++width) {
                const int stride = width + 2, weights_stride = n_rows + 1, out_stride = width + 5;
                const Matrix rows = mixed_matrix(std::max(n_rows, 1), stride, 100 + width);
                const Matrix weights = random_matrix(n_sums, weights_stride, 110 + n_rows);
                const Matrix start = mixed_matrix(n_sums, out_stride, 120 + n_sums);
                const RowRun run{rows.row(0), n_rows};
                std::vector<float> fast(start.data.begin(), start.data.end()), plain = fast;
                weighted_sum_add_for_group(weights.row(0), n_sums, std::size_t(weights_stride),
                                           std::span(&run, 1), n_rows, std::size_t(stride), width,
                                           fast.data(), std::size_t(out_stride));
                for (int i = 0; i < n_sums; ++i)
                    weighted_sum_add_reference(weights.row(i), n_rows, rows.row(0),
                                               std::size_t(stride), width,
                                               plain.data() + i * out_stride);
                INFO("sums " << n_sums << " rows " << n_rows << " width " << width);
                CHECK(bits(fast) == bits(plain));
            }
}

TEST_CASE("the group kernels over runs equal them over one range to the last bit") {
    // The rows cut into runs of every block size a paged cache may have (1,
    // 3, 4, 16, 17 rows, the last run short), and only the first n_rows of
    // them used: the runs change where rows sit, never a number.
    for (int block : {1, 3, 4, 16, 17})
        for (int n_rows : {1, 5, 16, 33, 70})
            for (int width : {6, 16, 32, 35}) {
                const int n_queries = 4, stride = width + 5, total = n_rows + 7;
                const Matrix rows = mixed_matrix(total, stride, 500 + width);
                const Matrix q = mixed_matrix(n_queries, width, 510 + n_rows);
                const Matrix weights = random_matrix(n_queries, n_rows, 520 + block);
                // The same rows again, each run copied to its own place, out of order.
                Matrix scattered(total + 3 * (total / block + 1), stride);
                std::vector<RowRun> runs;
                int at = scattered.rows;
                for (int first = 0; first < total; first += block) {
                    const int count = std::min(block, total - first);
                    at -= count + 3;
                    std::copy_n(rows.row(first), std::size_t(count) * stride, scattered.row(at));
                    runs.push_back({scattered.row(at), count});
                }
                INFO("block " << block << " rows " << n_rows << " width " << width);
                const RowRun whole{rows.row(0), total};
                const std::span<const RowRun> one_run(&whole, 1);
                std::vector<float> one(std::size_t(n_queries) * n_rows, -1.0f), split = one;
                dot_rows_for_group(q.row(0), n_queries, std::size_t(width), one_run, n_rows,
                                   std::size_t(stride), width, one.data(), std::size_t(n_rows));
                dot_rows_for_group(q.row(0), n_queries, std::size_t(width), runs, n_rows,
                                   std::size_t(stride), width, split.data(), std::size_t(n_rows));
                CHECK(bits(split) == bits(one));
                std::vector<float> sum_one(std::size_t(n_queries) * width, 0.5f),
                    sum_split = sum_one;
                weighted_sum_add_for_group(weights.row(0), n_queries, std::size_t(n_rows), one_run,
                                           n_rows, std::size_t(stride), width, sum_one.data(),
                                           std::size_t(width));
                weighted_sum_add_for_group(weights.row(0), n_queries, std::size_t(n_rows), runs,
                                           n_rows, std::size_t(stride), width, sum_split.data(),
                                           std::size_t(width));
                CHECK(bits(sum_split) == bits(sum_one));
            }
}

TEST_CASE("softmax_for_group equals softmax row by row to the last bit") {
    for (int n_rows : {1, 3, 4, 6, 9})
        for (int n : {1, 5, 17, 40}) {
            const int stride = n + 3;
            Matrix fast = random_matrix(n_rows, stride, 130 + n);
            for (float& v : fast.data) v *= 8.0f;  // scores of several units, as attention's are
            Matrix plain = fast;
            softmax_for_group(fast.row(0), n_rows, std::size_t(stride), n);
            for (int i = 0; i < n_rows; ++i) softmax(std::span(plain.row(i), std::size_t(n)));
            CHECK(fast.data == plain.data);  // the padding between rows is left as it was
        }
}

TEST_CASE("the rope table rotates exactly as rope does") {
    const RopeTable table(8, 300);
    Rng rng(3);
    for (int pos : {0, 1, 17, 299}) {
        std::vector<float> a(24), b;
        for (float& v : a) v = rng.symmetric(1);
        b = a;
        rope(a, 8, pos);
        table.apply(b, pos);
        CHECK(a == b);
    }
}

TEST_CASE("exp_float equals exp_float_reference to the last bit in vector loops") {
    // Every 1,000th float from -100 to 100 and the edges: the ends of the
    // clamp, ties of the rounding to n, subnormal results, zeros,
    // infinities and NaN. The loop below is the kind the compiler turns into
    // vector code (as in softmax and SiLU); the reference takes one at a time.
    std::vector<float> x;
    for (std::uint32_t b = 0; b < 0x42c80000u; b += 1000)  // 0 up to 100
        for (float sign : {1.0f, -1.0f}) x.push_back(sign * std::bit_cast<float>(b));
    for (float v :
         {-87.0f, 88.0f, std::nextafter(-87.0f, -INFINITY), std::nextafter(88.0f, INFINITY), -86.9f,
          87.9f, 0.5f * 0.693147181f, 1.5f * 0.693147181f, -0.0f, INFINITY, -INFINITY, NAN})
        x.push_back(v);
    std::vector<float> fast(x.size()), plain(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) fast[i] = exp_float(x[i]);
    for (std::size_t i = 0; i < x.size(); ++i) plain[i] = exp_float_reference(x[i]);
    std::size_t differ = 0;
    float first = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        if (std::bit_cast<std::uint32_t>(fast[i]) != std::bit_cast<std::uint32_t>(plain[i]))
            if (differ++ == 0) first = x[i];
    INFO(differ << " of " << x.size() << " inputs differ, the first at x = " << first);
    CHECK(differ == 0);
}

TEST_CASE("exp_float is within a few units in the last place of e^x") {
    double worst_ulps = 0;
    for (int i = 0; i <= 200000; ++i) {
        const float x = -87.0f + 175.0f * float(i) / 200000.0f;
        const double truth = std::exp(double(x));
        const double ulp = std::nextafter(float(truth), INFINITY) - float(truth);
        worst_ulps = std::max(worst_ulps, std::fabs(double(exp_float(x)) - truth) / ulp);
    }
    INFO("largest error: " << worst_ulps << " units in the last place (tolerance 4)");
    CHECK(worst_ulps < 4);
    CHECK(exp_float(0.0f) == 1.0f);
    CHECK(exp_float(-100.0f) == 0.0f);
    CHECK(std::isinf(exp_float(100.0f)));
    CHECK(std::isnan(exp_float(NAN)));
}
