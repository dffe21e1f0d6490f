// Chapter 03: the cache's price, worked by hand; its overflow guard; the
// budget count at its edges; and the formula against real KVCaches.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../chapters/03_memory_arithmetic/experiment.h"
#include "../chapters/03_memory_arithmetic/report.h"
#include "../common/core/memory_arithmetic.h"
#include "../common/core/transformer.h"
#include "../common/kit/report.h"
#include "tiny_models.h"

using namespace kv;
using namespace kv::ch03;  // the experiment's options and the report

namespace {

constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;
constexpr std::uint64_t u64_max = std::numeric_limits<std::uint64_t>::max();

CacheShape shape(std::uint64_t layers, std::uint64_t kv_heads, std::uint64_t head_size,
                 std::uint64_t bytes) {
    return {layers, kv_heads, head_size, bytes};
}

}  // namespace

TEST_CASE("the seed shape costs 128 KiB per token and 512 MiB per 4096-token conversation") {
    const CacheShape seed;  // 32 layers, 8 KV heads, head size 128, 16-bit
    CHECK(bytes_per_token(seed) == 131072);
    CHECK(bytes_per_token(seed) == 128 * KiB);
    CHECK(cache_bytes(seed, 4096) == 536870912);
    CHECK(cache_bytes(seed, 4096) == 512 * MiB);
    CHECK(format_bytes(bytes_per_token(seed)) == "128 KiB");
    CHECK(format_bytes(cache_bytes(seed, 4096)) == "512 MiB");
    CHECK(cache_bytes(seed, 0) == 0);
    CHECK(cache_bytes(seed, 1) == bytes_per_token(seed));
}

TEST_CASE("the derivation multiplies one factor at a time and ends at bytes per token") {
    const std::vector<PriceFactor> steps = price_factors(CacheShape{});
    REQUIRE(steps.size() == 5);
    const std::uint64_t factors[] = {2, 32, 8, 128, 2};
    const std::uint64_t products[] = {2, 64, 512, 65536, 131072};
    const char* units[] = {"vectors", "vectors", "vectors", "numbers", "bytes"};
    for (std::size_t i = 0; i < steps.size(); ++i) {
        CHECK(steps[i].factor == factors[i]);
        CHECK(steps[i].product == products[i]);
        CHECK(steps[i].unit == units[i]);
    }
    for (const CacheShape& s : {shape(1, 1, 1, 1), shape(80, 8, 128, 2), shape(3, 5, 7, 4)})
        CHECK(price_factors(s).back().product == bytes_per_token(s));
}

TEST_CASE("the README's worked examples") {
    // Attention layouts at 16-bit, 32 layers, head size 128, context 4,096.
    CHECK(bytes_per_token(shape(32, 32, 128, 2)) == 512 * KiB);  // multi-head
    CHECK(cache_bytes(shape(32, 32, 128, 2), 4096) == 2 * GiB);
    CHECK(bytes_per_token(shape(32, 1, 128, 2)) == 16 * KiB);  // multi-query
    CHECK(cache_bytes(shape(32, 1, 128, 2), 4096) == 64 * MiB);
    // Number widths for grouped-query.
    CHECK(bytes_per_token(shape(32, 8, 128, 4)) == 256 * KiB);
    CHECK(cache_bytes(shape(32, 8, 128, 4), 4096) == 1 * GiB);
    CHECK(bytes_per_token(shape(32, 8, 128, 1)) == 64 * KiB);
    CHECK(cache_bytes(shape(32, 8, 128, 1), 4096) == 256 * MiB);
    // An 80-layer model with 8 KV heads, 8,192 tokens of context.
    CHECK(bytes_per_token(shape(80, 8, 128, 2)) == 327680);
    CHECK(cache_bytes(shape(80, 8, 128, 2), 8192) == 2684354560ull);
    CHECK(format_bytes(cache_bytes(shape(80, 8, 128, 2), 8192)) == "2.50 GiB");
    // The demo model: 6 layers, 2 KV heads, head size 256 / 8 = 32, float32.
    const Config demo;
    CHECK(bytes_per_token(cache_shape_of(demo)) == 3072);
    CHECK(cache_bytes(cache_shape_of(demo), 16384) == 48 * MiB);
    // The budget table: 64 GiB, a 4,096-token context, 1,024 tokens held on average.
    const BudgetFit gqa = fit_budget(CacheShape{}, 64 * GiB, 4096, 1024);
    CHECK(gqa.reserved_bytes == 512 * MiB);
    CHECK(gqa.held_bytes == 128 * MiB);
    CHECK(gqa.fit_reserving == 128);
    CHECK(gqa.fit_holding == 512);
    CHECK(gqa.waste_percent == doctest::Approx(75.0));
    const BudgetFit mha = fit_budget(shape(32, 32, 128, 2), 64 * GiB, 4096, 1024);
    CHECK(mha.fit_reserving == 32);
    CHECK(mha.fit_holding == 128);
    const BudgetFit mqa = fit_budget(shape(32, 1, 128, 2), 64 * GiB, 4096, 1024);
    CHECK(mqa.fit_reserving == 1024);
    CHECK(mqa.fit_holding == 4096);
    // 64 GiB holds 524,288 tokens of the seed shape: all conversations together.
    CHECK(tokens_that_fit(64 * GiB, CacheShape{}) == 524288);
}

TEST_CASE("byte counts near the 64-bit limit are refused and never wrapped") {
    // 2 x 2^62 = 2^63 fits; 2 x 2^63 = 2^64 does not.
    CHECK(bytes_per_token(shape(std::uint64_t(1) << 62, 1, 1, 1)) == std::uint64_t(1) << 63);
    CHECK_THROWS_AS(bytes_per_token(shape(std::uint64_t(1) << 63, 1, 1, 1)), std::overflow_error);
    // Each factor alone can push it over.
    CHECK_THROWS_AS(bytes_per_token(shape(1, u64_max, 1, 1)), std::overflow_error);
    CHECK_THROWS_AS(bytes_per_token(shape(1, 1, u64_max / 2 + 1, 1)), std::overflow_error);
    CHECK_THROWS_AS(bytes_per_token(shape(32, 8, 128, u64_max / 65536 + 1)), std::overflow_error);
    CHECK_THROWS_AS(price_factors(shape(u64_max, 1, 1, 1)), std::overflow_error);
    // Tokens: 2 bytes per token times (2^64 - 1) / 2 tokens is the largest that fits.
    const CacheShape two_bytes = shape(1, 1, 1, 1);
    CHECK(cache_bytes(two_bytes, u64_max / 2) == u64_max - 1);
    CHECK_THROWS_AS(cache_bytes(two_bytes, u64_max / 2 + 1), std::overflow_error);
    // The seed shape (2^17 bytes per token) overflows at 2^47 tokens, not before.
    CHECK(cache_bytes(CacheShape{}, (std::uint64_t(1) << 47) - 1) ==
          u64_max - (std::uint64_t(1) << 17) + 1);  // 2^64 - 2^17
    CHECK_THROWS_AS(cache_bytes(CacheShape{}, std::uint64_t(1) << 47), std::overflow_error);
    // A zero factor is a mistake, not a free cache.
    CHECK_THROWS_AS(bytes_per_token(shape(0, 8, 128, 2)), std::invalid_argument);
    CHECK_THROWS_AS(bytes_per_token(shape(32, 8, 128, 0)), std::invalid_argument);
}

TEST_CASE("conversations that fit at the edges of the budget") {
    const std::uint64_t one = cache_bytes(CacheShape{}, 4096);
    CHECK(conversations_that_fit(one, one) == 1);      // exactly one conversation
    CHECK(conversations_that_fit(one - 1, one) == 0);  // one byte short
    CHECK(conversations_that_fit(one + 1, one) == 1);
    CHECK(conversations_that_fit(2 * one - 1, one) == 1);
    CHECK(conversations_that_fit(2 * one, one) == 2);
    CHECK(conversations_that_fit(0, one) == 0);
    CHECK(conversations_that_fit(u64_max, 1) == u64_max);
    CHECK_THROWS_AS(conversations_that_fit(one, 0), std::invalid_argument);
    CHECK(tokens_that_fit(bytes_per_token(CacheShape{}) - 1, CacheShape{}) == 0);
    CHECK(tokens_that_fit(bytes_per_token(CacheShape{}), CacheShape{}) == 1);
}

TEST_CASE("reserving the whole context vs holding only the tokens") {
    const CacheShape s;
    CHECK(fit_budget(s, GiB, 4096, 10).reserved_bytes == 512 * MiB);
    CHECK(fit_budget(s, GiB, 4096, 10).held_bytes == 10 * 128 * KiB);
    CHECK(fit_budget(s, GiB, 4096, 4096).held_bytes == fit_budget(s, GiB, 4096, 1).reserved_bytes);
    CHECK_THROWS_AS(fit_budget(s, GiB, 4096, 4097), std::invalid_argument);
    // A full conversation wastes nothing; a one-token one wastes all but 1/4096.
    CHECK(fit_budget(s, GiB, 4096, 4096).waste_percent == 0.0);
    CHECK(fit_budget(s, GiB, 4096, 1).waste_percent == doctest::Approx(100.0 * 4095 / 4096));
    CHECK_THROWS_AS(fit_budget(s, GiB, 4096, 0), std::invalid_argument);
}

TEST_CASE("a budget in GiB becomes whole bytes") {
    CHECK(gib_to_bytes(64) == 68719476736ull);
    CHECK(gib_to_bytes(0.5) == 512 * MiB);
    CHECK(gib_to_bytes(0) == 0);
    CHECK(gib_to_bytes(0.001) == 1073741);  // 1,073,741.824 rounded down
    CHECK(gib_to_bytes(16.0 * 1024 * 1024 * 1024 - 1) == u64_max - GiB + 1);        // 2^64 - 2^30
    CHECK_THROWS_AS(gib_to_bytes(16.0 * 1024 * 1024 * 1024), std::overflow_error);  // 2^64
    CHECK_THROWS_AS(gib_to_bytes(-1), std::invalid_argument);
    CHECK_THROWS_AS(gib_to_bytes(std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
    CHECK_THROWS_AS(gib_to_bytes(std::numeric_limits<double>::infinity()), std::invalid_argument);
}

TEST_CASE("the layouts and widths the chapter compares") {
    const std::vector<AttentionLayout> layouts = attention_layouts(32, 8);
    REQUIRE(layouts.size() == 3);
    CHECK(layouts[0].kv_heads == 32);
    CHECK(layouts[1].kv_heads == 8);
    CHECK(layouts[2].kv_heads == 1);
    // Grouped-query with as many KV heads as query heads is multi-head; with one, multi-query.
    CHECK(attention_layouts(32, 32).size() == 2);
    CHECK(attention_layouts(32, 1).size() == 2);
    CHECK(attention_layouts(32, 1)[1].name == "multi-query");
    CHECK(attention_layouts(1, 1).size() == 1);
    CHECK(number_widths(2) == std::vector<std::uint64_t>{4, 2, 1});
    CHECK(number_widths(8) == std::vector<std::uint64_t>{8, 4, 2, 1});
    CHECK(number_widths(3) == std::vector<std::uint64_t>{4, 3, 2, 1});
}

TEST_CASE("price flags that cannot be priced are usage errors naming the flags") {
    auto refused_with = [](const PriceOptions& o, const std::string& fragment) {
        try {
            check_price_options(o);
        } catch (const UsageError& e) {
            INFO(e.what());
            CHECK(std::string(e.what()).find(fragment) != std::string::npos);
            return;
        }
        FAIL("check_price_options accepted options it cannot price");
    };
    CHECK_NOTHROW(check_price_options(PriceOptions{}));
    PriceOptions o;
    o.shape.kv_heads = 3;
    refused_with(o, "--kv-heads 3");
    o = PriceOptions{};
    o.mean_tokens = 4097;
    refused_with(o, "--mean-len 4097");
    o = PriceOptions{};
    o.shape.layers = u64_max;
    refused_with(o, "--layers 18446744073709551615");
    // The 16-bit grouped-query cache fits, but the 32-bit multi-head row of
    // the table would not: 2^20 bytes per token x 2^44 tokens = 2^64.
    o = PriceOptions{};
    o.context = std::uint64_t(1) << 44;
    CHECK_NOTHROW(cache_bytes(o.shape, o.context));
    refused_with(o, "multi-head, 32-bit");
}

TEST_CASE("a KVCache reports exactly the bytes the formula says for several shapes") {
    for (const Config& c : test::shapes_to_check()) {
        const CacheShape s = cache_shape_of(c);
        CHECK(bytes_per_token(s) == c.kv_bytes_per_token());
        KVCache cache(c, 12);
        CHECK(cache.bytes_allocated() == cache_bytes(s, 12));
        Transformer model(c, 7);
        const std::vector<int> prompt = {3, 1, 4, 1, 5};
        model.forward(prompt, cache);
        CHECK(cache.bytes_used() == cache_bytes(s, 5));
        const int next = 9;
        for (int step = 0; step < 4; ++step) model.forward(std::span(&next, 1), cache);
        CHECK(cache.bytes_used() == cache_bytes(s, 9));
        CHECK(cache.bytes_allocated() == cache_bytes(s, 12));
    }
}

TEST_CASE("the demo cache read while decoding agrees with the formula at every moment") {
    const Config c = test::tiny_config();
    const std::vector<CacheReading> readings = read_cache_while_decoding(c, 5, 7, 1);
    REQUIRE(readings.size() == 3);
    CHECK(readings[0].tokens == 5);
    CHECK(readings[1].tokens == 12);
    CHECK(readings[2].tokens == 12);
    for (const CacheReading& r : readings) {
        CHECK(r.agree());
        CHECK(r.cache_says == r.tokens * bytes_per_token(cache_shape_of(c)));
    }
}

TEST_CASE("resident memory is read in whole pages and a filled cache is priced") {
    const std::optional<std::uint64_t> resident = resident_bytes();
    REQUIRE(resident.has_value());  // the book runs on Linux
    CHECK(*resident > 0);
    const ResidentGrowth g = measure_resident_growth(test::tiny_config(), 1000);
    CHECK(g.tokens == 1000);
    CHECK(g.formula == cache_bytes(cache_shape_of(test::tiny_config()), 1000));
    CHECK(g.allocated == g.formula);
    CHECK(g.growth.has_value());
    // How much it grew depends on what the allocator recycles in a process
    // that has run other tests; the program measures it in a fresh process.
}

TEST_CASE("the resident-memory report counts the difference in pages") {
    // The README's line: 48 MiB allocated, resident memory grew 2 pages more.
    ResidentGrowth g{16384, 50331648, 50331648, 50339840, 4096};
    auto findings = [&] {
        Findings f("T");
        ch03::add_resident(f, g);
        return f;
    };
    auto shown = [&] {
        std::ostringstream out;
        findings().print(out);
        return out.str();
    };
    CHECK(shown().find("\n  difference: ") != std::string::npos);
    CHECK(shown().find(" +8,192 bytes = 2 pages of 4,096 bytes (0.016% of the cache)\n") !=
          std::string::npos);
    // The JSON carries the counts as numbers, from the same list.
    CHECK(findings().json().str().find("\"difference\": 8192") != std::string::npos);
    // Less than allocated (pages the allocator already held), and part of a page.
    g.growth = 50331648 - 2048;
    CHECK(shown().find("-2,048 bytes = 0.5 pages") != std::string::npos);
    CHECK(findings().json().str().find("\"difference\": -2048") != std::string::npos);
    g.growth.reset();
    CHECK(shown().find("not readable here") != std::string::npos);
    CHECK(findings().json().str().find("\"growth\": null") != std::string::npos);
}

// A planted fault: a reading whose cache says one byte more than the
// formula. The chapter's "agree" column then says no, and so does the run.
TEST_CASE("a reading that differs from the formula by one byte does not agree") {
    const Config c = test::tiny_config();
    Results r{};
    r.readings = read_cache_while_decoding(c, 5, 3, 1);
    REQUIRE(r.all_agree());
    r.readings[1].cache_says += 1;
    CHECK_FALSE(r.readings[1].agree());
    CHECK_FALSE(r.all_agree());
}
