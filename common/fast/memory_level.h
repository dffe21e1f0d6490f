// Where a working set is read from: the last-level cache or DRAM. One rule
// for the book (`make bench` picks each row's memory roof with it, chapter
// 04 each width's): a working set larger than the last-level cache Linux
// reports is read from DRAM; one that fits is read, as a buffer of its own
// size, by the read probe (machine_probes.h), and counts as read from the
// cache only if that ran faster than DRAM by more than a fifth. It measures
// because the reported size says little about what one core gets (a virtual
// machine may report the whole host's cache, a chiplet its own, shared).
#pragma once

#include <cstdint>

namespace kv {

// Whether `working_set_bytes` can be in the last-level cache at all: no
// larger than the size reported for it (0, not reported, holds nothing).
inline bool fits_reported_last_level(std::uint64_t working_set_bytes,
                                     std::uint64_t reported_last_level_bytes) {
    return reported_last_level_bytes > 0 && working_set_bytes <= reported_last_level_bytes;
}

// Whether a read measured at `rate` (bytes per second) came from a cache.
inline bool read_faster_than_dram(double rate, double dram_rate) {
    return rate > 1.2 * dram_rate;
}

// Whether a working set is read from the last-level cache: it fits, and a
// read of its size (`rate_at_its_size`) ran clearly faster than DRAM.
inline bool reads_from_last_level(std::uint64_t working_set_bytes,
                                  std::uint64_t reported_last_level_bytes, double rate_at_its_size,
                                  double dram_rate) {
    return fits_reported_last_level(working_set_bytes, reported_last_level_bytes) &&
           read_faster_than_dram(rate_at_its_size, dram_rate);
}

// The memory roof of that working set: DRAM's rate, or where it fits the
// reported size, the read of its size if that ran faster (from the cache,
// or too little faster to call it one, but this machine did read it so).
inline double memory_roof(std::uint64_t working_set_bytes, std::uint64_t reported_last_level_bytes,
                          double rate_at_its_size, double dram_rate) {
    const bool faster = rate_at_its_size > dram_rate;
    return fits_reported_last_level(working_set_bytes, reported_last_level_bytes) && faster
               ? rate_at_its_size
               : dram_rate;
}

}  // namespace kv
