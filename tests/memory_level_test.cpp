// The book's one rule for where a working set is read from
// (common/fast/memory_level.h): the last-level cache only if it fits the
// reported size and a read of its size ran more than 1.2 x DRAM's rate.
#include <doctest/doctest.h>

#include <cstdint>

#include "../common/fast/memory_level.h"

using namespace kv;

namespace {
constexpr std::uint64_t MiB = 1 << 20;
}

TEST_CASE("a working set fits the last level only if no larger than the reported size") {
    CHECK(fits_reported_last_level(1, 32 * MiB));
    CHECK(fits_reported_last_level(32 * MiB, 32 * MiB));
    CHECK_FALSE(fits_reported_last_level(32 * MiB + 1, 32 * MiB));
    // Nothing reported: nothing fits, not even nothing.
    CHECK_FALSE(fits_reported_last_level(0, 0));
    CHECK_FALSE(fits_reported_last_level(1, 0));
}

TEST_CASE("a read came from a cache only if more than 1.2 times DRAM's rate") {
    CHECK(read_faster_than_dram(27e9, 15e9));
    CHECK_FALSE(read_faster_than_dram(6.0, 5.0));  // exactly 1.2 times
    CHECK(read_faster_than_dram(6.01, 5.0));
    CHECK_FALSE(read_faster_than_dram(15e9, 15e9));
}

TEST_CASE("a working set is read from the last-level cache only if it fits and read faster") {
    const double dram = 15e9;
    // A Zen 4 or Zen 5 core, 32 MiB reported: the demo's 21.5 MiB fit, and a
    // read of that size faster than DRAM makes its roof the cache's, at the
    // rate measured (no fixed share of the reported size decides).
    CHECK(reads_from_last_level(21 * MiB + MiB / 2, 32 * MiB, 40e9, dram));
    CHECK(memory_roof(21 * MiB + MiB / 2, 32 * MiB, 40e9, dram) == 40e9);
    // The shared Xeon, 260 MiB reported: 200 MiB fit the reported size, but
    // a read of that size ran at about DRAM's rate: DRAM, its roof the
    // faster of the two reads (a step at 15.2 GB/s outran no measured rate).
    CHECK_FALSE(reads_from_last_level(200 * MiB, 260 * MiB, 15.5e9, dram));
    CHECK(memory_roof(200 * MiB, 260 * MiB, 15.5e9, dram) == 15.5e9);
    CHECK(memory_roof(200 * MiB, 260 * MiB, 14e9, dram) == dram);
    // Larger than the reported size: DRAM, whatever a read measured.
    CHECK_FALSE(reads_from_last_level(377 * MiB, 260 * MiB, 40e9, dram));
    CHECK(memory_roof(377 * MiB, 260 * MiB, 40e9, dram) == dram);
    // Nothing reported: DRAM.
    CHECK_FALSE(reads_from_last_level(1 * MiB, 0, 40e9, dram));
}
