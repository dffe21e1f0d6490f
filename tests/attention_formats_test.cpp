// Attention read where the cache lies (common/core/attention.h): the group
// kernels on bfloat16, float16 and int8 rows, widened in registers, against
// the plain loops on the same rows widened first by the plain conversions
// (number_format.h), to the last bit; in one run and cut into the runs of
// a paged cache; and the widening itself (common/fast/widen.h) against the
// plain conversions for every 16-bit pattern and every int8 number.
#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../common/core/attention.h"
#include "../common/core/kernels.h"
#include "../common/core/number_format.h"
#include "../common/core/rng.h"
#include "../common/fast/widen.h"

using namespace kv;

namespace {

template <class Floats>
std::vector<std::uint32_t> bits(const Floats& v) {
    std::vector<std::uint32_t> out;
    for (float f : v) out.push_back(std::bit_cast<std::uint32_t>(f));
    return out;
}

std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (float& x : v) x = rng.symmetric(1.0f);
    for (std::size_t i = 0; i < n; i += 7) v[i] *= 1000.0f;  // sums of mixed sizes
    return v;
}

// `rows` positions of `heads` KV heads of `width` numbers, as a cache of
// `format` stores them, and the same rows widened by the plain conversions.
struct Rows {
    RowFormat format;
    std::vector<std::byte> stored;  // (rows, format.bytes())
    std::vector<float> widened;     // (rows, heads * width)

    Rows(NumberFormat f, int heads, int width, int rows, std::uint64_t seed)
        : format{f, heads, width}, stored(std::size_t(rows) * format.bytes()) {
        const std::vector<float> numbers =
            random_floats(std::size_t(rows) * format.numbers(), seed);
        widened.resize(numbers.size());
        for (int r = 0; r < rows; ++r) {
            std::byte* row = stored.data() + std::size_t(r) * format.bytes();
            narrow_row_plain(format, numbers.data() + std::size_t(r) * format.numbers(), row);
            widen_rows_plain(format, row, 1, widened.data() + std::size_t(r) * format.numbers());
        }
    }
    // Head h's rows, from position `first` on.
    const std::byte* head(int h, int first = 0) const {
        return stored.data() + std::size_t(first) * format.bytes() +
               std::size_t(h) * (format.bytes() / std::size_t(format.kv_heads));
    }
    StoredRows layout() const { return {format.format, format.bytes(), format.head_size}; }
};

const NumberFormat kFormats[] = {NumberFormat::float32, NumberFormat::bfloat16,
                                 NumberFormat::float16, NumberFormat::int8};

// The runs of a paged cache of `block` positions per block (the last short).
std::vector<StoredRun> cut(const Rows& rows, int h, int total, int block) {
    std::vector<StoredRun> runs;
    for (int first = 0; first < total; first += block)
        runs.push_back({rows.head(h, first), std::min(block, total - first)});
    return runs;
}

}  // namespace

TEST_CASE("the group kernels read every format in place to the plain loops' last bit") {
    // Head widths with and without a tail of the 16 lanes, int8 heads of
    // one short block, one whole block, and a whole block and a short one;
    // groups of 1 to 5 heads; key counts around the blocks of 4, 2 and 1;
    // the second KV head, so that a head's offset in the row counts.
    for (const NumberFormat format : kFormats)
        for (int width : {6, 16, 17, 32, 40, 48, 64, 100})
            for (int n_queries : {1, 3, 4, 5})
                for (int n_rows : {1, 2, 3, 5, 17, 70}) {
                    const int heads = 2, h = 1, total = n_rows + 3;
                    const Rows rows(format, heads, width, total, 700 + width);
                    const std::vector<float> q =
                        random_floats(std::size_t(n_queries) * width, 710 + n_rows);
                    const std::vector<float> weights =
                        random_floats(std::size_t(n_queries) * n_rows, 720 + n_queries);
                    const std::size_t kv_dim = std::size_t(heads) * width;
                    const float* plain_rows = rows.widened.data() + std::size_t(h) * width;
                    const std::string name = format_name(format);
                    INFO(name << " width " << width << " queries " << n_queries << " rows "
                              << n_rows);

                    std::vector<float> plain(std::size_t(n_queries) * n_rows);
                    for (int i = 0; i < n_queries; ++i)
                        dot_rows_reference(q.data() + std::size_t(i) * width, plain_rows, n_rows,
                                           kv_dim, width, plain.data() + std::size_t(i) * n_rows);
                    std::vector<float> sums_plain(std::size_t(n_queries) * width, 0.25f);
                    for (int i = 0; i < n_queries; ++i)
                        weighted_sum_add_reference(weights.data() + std::size_t(i) * n_rows, n_rows,
                                                   plain_rows, kv_dim, width,
                                                   sums_plain.data() + std::size_t(i) * width);

                    for (int block : {total, 1, 4, 16}) {  // contiguous, then paged
                        INFO("positions per run " << block);
                        const std::vector<StoredRun> runs = cut(rows, h, total, block);
                        std::vector<float> fast(plain.size(), -1.0f);
                        dot_rows_for_group(q.data(), n_queries, std::size_t(width), runs, n_rows,
                                           rows.layout(), fast.data(), std::size_t(n_rows));
                        CHECK(bits(fast) == bits(plain));
                        std::vector<float> sums(sums_plain.size(), 0.25f);
                        weighted_sum_add_for_group(weights.data(), n_queries, std::size_t(n_rows),
                                                   runs, n_rows, rows.layout(), sums.data(),
                                                   std::size_t(width));
                        CHECK(bits(sums) == bits(sums_plain));
                    }
                }
}

TEST_CASE(
    "a score whose products are all zeros is +0 as the plain loops' is, whatever their signs") {
    // Keys of zeros against negative queries: every product is -0. The
    // plain loops start each partial sum at +0, so the score is +0; a
    // kernel that starts a sum at its first product must put the sign right.
    for (const NumberFormat format : kFormats)
        for (int width : {6, 16, 32, 40}) {
            const int heads = 1, n_rows = 9;
            const RowFormat row_format{format, heads, width};
            std::vector<std::byte> stored(std::size_t(n_rows) * row_format.bytes());
            const std::vector<float> zeros(std::size_t(width), 0.0f);
            for (int r = 0; r < n_rows; ++r)
                narrow_row_plain(row_format, zeros.data(),
                                 stored.data() + std::size_t(r) * row_format.bytes());
            std::vector<float> q(std::size_t(4) * width, -0.5f);
            q[1] = 0.0f;  // and one +0 product among the -0 ones
            const StoredRun run{stored.data(), n_rows};
            std::vector<float> scores(std::size_t(4) * n_rows, -1.0f);
            dot_rows_for_group(q.data(), 4, std::size_t(width), std::span(&run, 1), n_rows,
                               {format, row_format.bytes(), width}, scores.data(),
                               std::size_t(n_rows));
            INFO(format_name(format) << " width " << width);
            for (const float s : scores) CHECK(std::bit_cast<std::uint32_t>(s) == 0u);
        }
}

TEST_CASE("widening in registers gives the plain conversions' bits for every 16-bit pattern") {
    std::vector<std::uint16_t> patterns(1 << 16);
    for (std::size_t i = 0; i < patterns.size(); ++i) patterns[i] = std::uint16_t(i);
    const auto* bytes = reinterpret_cast<const std::byte*>(patterns.data());
    int bf16_wrong = 0, f16_wrong = 0;
    for (std::size_t i = 0; i < patterns.size(); i += fast::kNativeWidth) {
        const fast::Native bf = fast::widen_bfloat16(bytes + 2 * i);
        const fast::Native f16 = fast::widen_float16(bytes + 2 * i);
        for (int l = 0; l < fast::kNativeWidth; ++l) {
            const std::uint16_t p = patterns[i + std::size_t(l)];
            bf16_wrong += std::bit_cast<std::uint32_t>(bf[l]) !=
                          std::bit_cast<std::uint32_t>(from_bfloat16(p));
            f16_wrong += std::bit_cast<std::uint32_t>(f16[l]) !=
                         std::bit_cast<std::uint32_t>(from_float16(p));
        }
    }
    CHECK(bf16_wrong == 0);
    CHECK(f16_wrong == 0);
}

TEST_CASE("an int8 number widens to q x scale exactly for every q and scales of every size") {
    std::int8_t q[256];
    for (int i = 0; i < 256; ++i) q[i] = std::int8_t(i - 128);
    const auto* bytes = reinterpret_cast<const std::byte*>(q);
    // A subnormal float16 scale, small and large normal ones, the largest.
    for (const std::uint16_t scale_bits : {0x0001, 0x03FF, 0x0400, 0x2E66, 0x3C00, 0x7BFF}) {
        const float scale = from_float16(scale_bits);
        CHECK(fast::int8_scale(reinterpret_cast<const std::byte*>(&scale_bits)) == scale);
        for (int i = 0; i < 256; i += fast::kNativeWidth) {
            const fast::Native v = fast::widen_int8(bytes + i, scale);
            for (int l = 0; l < fast::kNativeWidth; ++l) CHECK(v[l] == float(q[i + l]) * scale);
        }
    }
}
