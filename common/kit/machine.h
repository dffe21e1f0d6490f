// The memory of the machine a program runs on, and how much of it this
// process may use and holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kv {

// Physical memory of this machine in bytes (0 if it cannot be read).
std::uint64_t physical_memory_bytes();

// What this process may really get: the smallest of physical memory, its
// address-space and data limits (`ulimit -v`, `ulimit -d`) and its
// cgroup's memory.max, where set and readable.
struct MemoryLimit {
    std::uint64_t bytes = 0;  // 0: nothing could be read
    std::string what;         // which limit it is: "this machine's physical memory", ...
};
MemoryLimit usable_memory();

// The one check of "will it fit": "" when `bytes` stay within `fraction` of
// usable_memory() (or nothing can be read), else the limit as a refusal
// quotes it: "more than half of this process's address-space limit (ulimit
// -v), 390 MiB".
std::string beyond_memory(double bytes, double fraction);
std::string beyond_memory(double bytes, double fraction, const MemoryLimit& have);

// The unit the system hands memory out in (4096 where it cannot be read).
std::uint64_t page_size();

// Bytes of this process in physical memory now (resident pages, the second
// number of /proc/self/statm); empty where there is no /proc.
std::optional<std::uint64_t> resident_bytes();

}  // namespace kv
