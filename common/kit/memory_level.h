// Where a working set is read from: the last-level cache or DRAM. One rule
// for the whole book: `make bench` (tests/bench/) picks each row's memory
// roof with it, chapter 04 each width's.
//
// The rule measures instead of assuming. A working set larger than the
// last-level cache Linux reports is read from DRAM. One that fits is read,
// as a buffer of its own size, by the read probe (machine_probes.h): if that
// read ran clearly faster than DRAM, by more than a fifth (1.2 x), the
// working set counts as read from the last-level cache, and its roof is the
// rate measured at its size; otherwise it is read from DRAM.
//
// Why measure: the reported size says little about what one core gets. A
// virtual machine may report the whole host's last-level cache; a chiplet
// reports its own, shared by its cores. No fixed share of the reported size
// is right on every machine, and a wrong one either prices a cached row
// against DRAM (then refused as above its roof) or a DRAM-bound one against
// a cache it does not fit. A read of the row's own size answers for the
// machine it runs on.
#pragma once

#include <cstdint>

namespace kv {

// Whether `working_set_bytes` can be in the last-level cache at all: no
// larger than the size reported for it. A size of 0 (not reported) holds
// nothing.
inline bool fits_reported_last_level(std::uint64_t working_set_bytes,
                                     std::uint64_t reported_last_level_bytes) {
    return reported_last_level_bytes > 0 && working_set_bytes <= reported_last_level_bytes;
}

// Whether a read measured at `rate` (bytes per second) came from a cache:
// only if it was clearly faster than DRAM's rate, by more than a fifth.
inline bool read_faster_than_dram(double rate, double dram_rate) {
    return rate > 1.2 * dram_rate;
}

// Whether a working set is read from the last-level cache (true) or from
// DRAM (false): it fits the reported last level, and a read of a buffer of
// its size (`rate_at_its_size`; anything if it does not fit, it is not
// looked at) ran clearly faster than DRAM.
inline bool reads_from_last_level(std::uint64_t working_set_bytes,
                                  std::uint64_t reported_last_level_bytes, double rate_at_its_size,
                                  double dram_rate) {
    return fits_reported_last_level(working_set_bytes, reported_last_level_bytes) &&
           read_faster_than_dram(rate_at_its_size, dram_rate);
}

// The memory roof of that working set: the rate measured at its size if it
// is read from the last-level cache; DRAM's otherwise, or the read of its
// size if that one ran faster (by less than a fifth: too little to call it
// a cache, but this machine was seen to read that working set that fast,
// so a step that does is no failed measurement).
inline double memory_roof(std::uint64_t working_set_bytes, std::uint64_t reported_last_level_bytes,
                          double rate_at_its_size, double dram_rate) {
    if (reads_from_last_level(working_set_bytes, reported_last_level_bytes, rate_at_its_size,
                              dram_rate))
        return rate_at_its_size;
    if (fits_reported_last_level(working_set_bytes, reported_last_level_bytes))
        return rate_at_its_size > dram_rate ? rate_at_its_size : dram_rate;
    return dram_rate;
}

}  // namespace kv
