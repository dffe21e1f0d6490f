// Where a working set is read from: the last-level cache or DRAM. One rule
// for the whole book: `make bench` (tests/bench/) picks each row's memory
// roof with it, chapter 04 each width's.
//
// A working set that one core reads over and over counts as read from the
// last-level cache if it takes at most a quarter of the size Linux reports
// for that cache; anything larger is read from DRAM.
//
// Why a quarter and not all of it: the reported size is shared, and under
// a hypervisor it may be the whole host's. On the shared Intel Xeon the
// book's numbers were measured on (Emerald Rapids, a 2-vCPU KVM guest that
// reports 260 MiB), one core read 27.5 GB/s at every size from 6 to 64 MiB
// but 15 GB/s, DRAM's rate, from 128 MiB on (machine_probes.h): a quarter,
// 65 MiB, is about the largest size measured cache-resident there; half,
// 130 MiB, is past the size where DRAM's rate began. The last-level probe's
// buffer is held to the same quarter (last_level_probe_bytes; four times
// the L2 where that is more), so the rule and the probe trust the same
// share of the cache.
//
// The rule errs towards DRAM. On a machine whose cache is the core's own, a
// working set between a quarter and all of it is called DRAM's though it
// may be read faster; the bench then finds the row above the DRAM roof and
// refuses it as a failed measurement instead of counting it.
#pragma once

#include <cstdint>

namespace kv {

// The largest working set counted as read from the last-level cache.
inline std::uint64_t last_level_working_set_bytes(std::uint64_t reported_last_level_bytes) {
    return reported_last_level_bytes / 4;
}

// Whether `working_set_bytes`, read over and over, come from the last-level
// cache (true) or from DRAM (false). A size of 0 (not reported) fits nothing.
inline bool fits_in_last_level(std::uint64_t working_set_bytes,
                               std::uint64_t reported_last_level_bytes) {
    return working_set_bytes <= last_level_working_set_bytes(reported_last_level_bytes) &&
           reported_last_level_bytes > 0;
}

}  // namespace kv
