// make bench's rules (tests/bench/measurement_rules.h), apart from any
// timing: a sample set's best and spread, which sizes the read probe
// measures, which rows are measurements and which targets are met.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/measurement_rules.h"

using namespace kv;
using namespace kv::bench;

namespace {

constexpr std::uint64_t MiB = 1 << 20;

RowFractions row(double of_peak, double of_roof, const std::string& level = "L3") {
    RowFractions r;
    r.of_peak = Share{of_peak};
    r.of_roof = Share{of_roof};
    r.level = level;
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

TEST_CASE("the read probe measures every distinct row size whatever the OS reports") {
    const std::vector<std::uint64_t> rows = {22 * MiB, 25 * MiB,  22 * MiB, 11 * MiB,
                                             33 * MiB, 377 * MiB, 11 * MiB, 32 * MiB};
    const std::vector<std::uint64_t> want = {11 * MiB, 22 * MiB, 25 * MiB,
                                             32 * MiB, 33 * MiB, 377 * MiB};
    CHECK(probe_sizes(rows) == want);
    CHECK(probe_sizes({}).empty());
}

TEST_CASE("each row is priced by the read of its own size whatever order the reads are in") {
    // Reads listed in another order than the rows ask for them: each row
    // must find the rate measured at its own size.
    const std::vector<std::uint64_t> sizes = {22 * MiB, 11 * MiB, 33 * MiB};
    const std::vector<double> rates = {27e9, 29e9, 25e9};
    CHECK(read_at_size(11 * MiB, sizes, rates) == 29e9);
    CHECK(read_at_size(22 * MiB, sizes, rates) == 27e9);
    CHECK(read_at_size(33 * MiB, sizes, rates) == 25e9);
    CHECK(read_at_size(377 * MiB, sizes, rates) == 0.0);
}

TEST_CASE("a row at 100.1 % of the peak is a probe failure and at 100.0 % a share") {
    CHECK(valid_measurement(row(1.000, 0.5)));
    CHECK_FALSE(valid_measurement(row(1.001, 0.5)));
    CHECK_FALSE(valid_measurement(row(1.001, 0.5, "DRAM")));
}

TEST_CASE("a row above its roof is a probe failure whatever its level is named") {
    for (const char* level : {"L3", "DRAM", "measured at its size"}) {
        INFO(level);
        CHECK(valid_measurement(row(0.1, 1.000, level)));
        CHECK_FALSE(valid_measurement(row(0.1, 1.001, level)));
        CHECK_FALSE(valid_measurement(row(0.1, 1.5, level)));
    }
    // Against no roof at all: a failure, not a share.
    CHECK_FALSE(valid_measurement(row(0.1, -1.0)));
}

// ------------------------------------------------------------- targets

TEST_CASE("a target reads the fraction of the limit it names") {
    const RowFractions r = row(0.3, 0.9);
    CHECK(target_fraction(r, Against::peak) == 0.3);
    CHECK(target_fraction(r, Against::memory_roof) == 0.9);
}

TEST_CASE("a target below its goal or on a refused row is not met") {
    CHECK(target_met(row(0.1, 0.80, "DRAM"), Against::memory_roof, 0.80));
    CHECK(target_met(row(0.1, 0.95), Against::memory_roof, 0.80));
    CHECK_FALSE(target_met(row(0.1, 0.799, "DRAM"), Against::memory_roof, 0.80));
    CHECK(target_met(row(0.60, 0.3), Against::peak, 0.60));
    CHECK_FALSE(target_met(row(0.599, 0.3), Against::peak, 0.60));
    // A probe failure meets no target, though its ratio is above the goal.
    CHECK_FALSE(target_met(row(0.1, 1.05, "DRAM"), Against::memory_roof, 0.80));
    CHECK_FALSE(target_met(row(0.1, 1.5), Against::memory_roof, 0.80));
    CHECK_FALSE(target_met(row(1.05, 0.3), Against::peak, 0.60));
    // Failed for its bytes, it meets no arithmetic target either.
    CHECK_FALSE(target_met(row(0.7, 1.05, "DRAM"), Against::peak, 0.60));
}
