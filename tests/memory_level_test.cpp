// The book's one rule for where a working set is read from
// (common/kit/memory_level.h), and that the last-level probe trusts the
// same share of the cache.
#include <doctest/doctest.h>

#include <cstdint>

#include "../common/kit/machine_probes.h"
#include "../common/kit/memory_level.h"

using namespace kv;

namespace {
constexpr std::uint64_t MiB = 1 << 20;
}

TEST_CASE("a working set is read from the last-level cache only if it fits in a quarter of it") {
    const std::uint64_t reported = 260 * MiB;
    CHECK(last_level_working_set_bytes(reported) == 65 * MiB);
    CHECK(fits_in_last_level(1, reported));
    CHECK(fits_in_last_level(65 * MiB, reported));
    CHECK_FALSE(fits_in_last_level(65 * MiB + 1, reported));
    CHECK_FALSE(fits_in_last_level(130 * MiB, reported));  // half: DRAM's rate on the Xeon
    CHECK_FALSE(fits_in_last_level(reported, reported));
    // Nothing reported: nothing is counted as cached, not even nothing.
    CHECK_FALSE(fits_in_last_level(0, 0));
    CHECK_FALSE(fits_in_last_level(1, 0));
}

TEST_CASE("the last-level probe reads no more than the rule's share unless four L2s are more") {
    // The Xeon of the README: 2 MiB of L2, 260 MiB reported. The probe asked
    // for more than the cache holds stops at the rule's quarter.
    const CacheSizes xeon{48 << 10, 2 * MiB, 260 * MiB};
    CHECK(last_level_probe_bytes(xeon, 1024 * MiB) == last_level_working_set_bytes(260 * MiB));
    CHECK(fits_in_last_level(last_level_probe_bytes(xeon, 21 * MiB), xeon.last_level));
    // A small last level (8 MiB, L2 1 MiB): the probe must still read beyond
    // the L2 (4 MiB), more than the rule's 2 MiB.
    const CacheSizes small{32 << 10, 1 * MiB, 8 * MiB};
    CHECK(last_level_probe_bytes(small, 1024 * MiB) == 4 * MiB);
    CHECK(last_level_working_set_bytes(small.last_level) == 2 * MiB);
}
