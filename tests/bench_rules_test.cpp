// make bench's rules (tests/bench/measurement_rules.h), apart from any
// timing: a sample set's best and spread, where a row's bytes come from,
// which rows are measurements and which targets are met.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>

#include "bench/measurement_rules.h"

using namespace kv::bench;

namespace {

constexpr std::uint64_t MiB = 1 << 20;

RowFractions row(double of_peak, double of_roof, bool from_last_level) {
    RowFractions r;
    r.of_peak = of_peak;
    r.of_roof = of_roof;
    r.from_last_level = from_last_level;
    return r;
}

}  // namespace

// ------------------------------------------------------------- samples

TEST_CASE("a figure's best sample is its highest rate or its shortest time") {
    const Samples rate{true, {8.0, 10.0, 9.0}};
    const Samples time{false, {0.9, 0.8, 1.0}};
    CHECK(rate.best() == 10.0);
    CHECK(time.best() == 0.8);
    CHECK(Samples{true, {}}.best() == 0.0);
}

TEST_CASE("the spread is the slowest sample over the fastest less one for rates and times alike") {
    // Times: the slowest round took 1.0 s, the fastest 0.8 s: 25 % longer.
    CHECK(Samples{false, {0.8, 1.0, 0.9}}.spread() == doctest::Approx(0.25));
    // Rates of 10 and 8 per second for the same work are times of 0.1 and
    // 0.125 s: also 25 % longer, not (10 - 8) / 10 = 20 %.
    CHECK(Samples{true, {10.0, 8.0, 9.0}}.spread() == doctest::Approx(0.25));
    // The same runs as rates and as times give the same spread.
    const double work = 3e9;
    const Samples times{false, {0.031, 0.027, 0.044, 0.029}};
    Samples rates{true, {}};
    for (double t : times.values) rates.values.push_back(work / t);
    CHECK(rates.spread() == doctest::Approx(times.spread()));
    CHECK(times.spread() == doctest::Approx(0.044 / 0.027 - 1));
}

TEST_CASE(
    "the spread of fewer than two samples is 0 and of a sample that is not positive infinite") {
    CHECK(Samples{true, {}}.spread() == 0.0);
    CHECK(Samples{true, {5.0}}.spread() == 0.0);
    CHECK(Samples{true, {5.0, 5.0}}.spread() == 0.0);
    CHECK(std::isinf(Samples{true, {5.0, 0.0}}.spread()));
}

// ---------------------------------------------------------------- rows

TEST_CASE("a row's bytes come from the last-level cache only if they fit in a quarter of it") {
    const std::uint64_t reported = 260 * MiB;          // the Xeon of the bench's README
    CHECK(bytes_from_last_level(21 * MiB, reported));  // the demo model
    CHECK(bytes_from_last_level(65 * MiB, reported));  // exactly a quarter
    CHECK_FALSE(bytes_from_last_level(65 * MiB + 1, reported));
    CHECK_FALSE(bytes_from_last_level(195 * MiB, reported));  // three quarters: not any more
    CHECK_FALSE(bytes_from_last_level(377 * MiB, reported));  // the large model
}

TEST_CASE("the last-level probe is resident only if it read more than 1.2 times DRAM's rate") {
    CHECK(last_level_probe_resident(27e9, 15e9));
    CHECK_FALSE(last_level_probe_resident(6.0, 5.0));  // exactly 1.2 times
    CHECK(last_level_probe_resident(6.01, 5.0));
    CHECK_FALSE(last_level_probe_resident(15e9, 15e9));
}

TEST_CASE("a row at 100.1 % of the peak is refused and at 100.0 % kept") {
    CHECK(valid_measurement(row(1.000, 0.5, false), true));
    CHECK_FALSE(valid_measurement(row(1.001, 0.5, false), true));
    // Above the peak is refused whatever the last-level probe did.
    CHECK_FALSE(valid_measurement(row(1.001, 0.5, true), false));
}

TEST_CASE(
    "a row above its roof is refused unless its bytes come from a last-level cache not resident") {
    // At the roof: kept, from either level.
    CHECK(valid_measurement(row(0.1, 1.000, false), true));
    CHECK(valid_measurement(row(0.1, 1.000, true), true));
    // Above DRAM's roof: refused, resident or not.
    CHECK_FALSE(valid_measurement(row(0.1, 1.001, false), true));
    CHECK_FALSE(valid_measurement(row(0.1, 1.001, false), false));
    // Above the last-level roof: refused if the probe was resident (the
    // roof was real), kept if it was not (the roof was DRAM's in disguise).
    CHECK_FALSE(valid_measurement(row(0.1, 1.001, true), true));
    CHECK(valid_measurement(row(0.1, 1.5, true), false));
}

// ------------------------------------------------------------- targets

TEST_CASE("a target reads the fraction of the limit it names") {
    const RowFractions r = row(0.3, 0.9, true);
    CHECK(target_fraction(r, Against::peak) == 0.3);
    CHECK(target_fraction(r, Against::memory_roof) == 0.9);
}

TEST_CASE("a target below its goal or on a refused row is not met") {
    CHECK(target_met(row(0.1, 0.80, false), Against::memory_roof, 0.80, true));
    CHECK_FALSE(target_met(row(0.1, 0.799, false), Against::memory_roof, 0.80, true));
    CHECK(target_met(row(0.60, 0.3, true), Against::peak, 0.60, true));
    CHECK_FALSE(target_met(row(0.599, 0.3, true), Against::peak, 0.60, true));
    // A refused row meets no target, though its fraction is above the goal.
    CHECK_FALSE(target_met(row(0.1, 1.05, false), Against::memory_roof, 0.80, true));
    CHECK_FALSE(target_met(row(1.05, 0.3, true), Against::peak, 0.60, true));
    // Refused for its bytes, it meets no arithmetic target either.
    CHECK_FALSE(target_met(row(0.7, 1.05, false), Against::peak, 0.60, true));
}

TEST_CASE(
    "a target against the last-level roof is not met when the last-level probe was not resident") {
    const RowFractions from_cache = row(0.1, 0.95, true);
    CHECK(target_met(from_cache, Against::memory_roof, 0.80, true));
    CHECK_FALSE(target_met(from_cache, Against::memory_roof, 0.80, false));
    // A row kept above its roof because the probe was not resident meets nothing.
    CHECK_FALSE(target_met(row(0.1, 1.5, true), Against::memory_roof, 0.80, false));
    // Targets the last-level probe has nothing to do with stand as they are.
    CHECK(target_met(row(0.1, 0.95, false), Against::memory_roof, 0.80, false));
    CHECK(target_met(row(0.7, 0.3, true), Against::peak, 0.60, false));
}
