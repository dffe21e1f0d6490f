// Probes of the machine a program runs on: its memory, its largest CPU
// cache, and how much of its memory this process holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kv {

// Physical memory of this machine in bytes (0 if it cannot be read).
std::uint64_t physical_memory_bytes();

// What this process may really get: the smallest of the machine's physical
// memory, its address-space and data limits (RLIMIT_AS, RLIMIT_DATA: `ulimit
// -v`, `ulimit -d`) where set, and its cgroup's memory.max where readable.
struct MemoryLimit {
    std::uint64_t bytes = 0;  // 0: nothing could be read
    std::string what;         // which limit it is: "this machine's physical memory", ...
};
MemoryLimit usable_memory();

// The one check of "will it fit": "" when `bytes` stay within `fraction`
// of the memory this process may use (usable_memory(); 1/2: at most half),
// or where nothing can be read; otherwise the limit, with its share and
// size, as a refusal quotes it (never physical memory when a lower limit
// refused): "more than half of this process's address-space limit
// (ulimit -v), 390 MiB".
std::string beyond_memory(double bytes, double fraction);
std::string beyond_memory(double bytes, double fraction, const MemoryLimit& have);

// Size in bytes of the largest data cache of CPU 0, as Linux reports it in
// /sys (cache_sizes() in machine_probes.h reads it); 0 where that cannot be
// read (another OS). sysconf()'s _SC_LEVEL3_CACHE_SIZE is not used: under
// some hypervisors it reports the whole host's cache, not what this core
// can use.
std::uint64_t last_level_cache_bytes();

// The unit the system hands memory out in (4096 where it cannot be read).
std::uint64_t page_size();

// Bytes of this process in physical memory now: the second number of
// /proc/self/statm counts resident pages. Empty where there is no /proc.
std::optional<std::uint64_t> resident_bytes();

}  // namespace kv
