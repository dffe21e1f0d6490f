// The machine's limits, measured on one thread: how fast it multiplies and
// adds, and how fast it reads a buffer of a working set's size and DRAM. A
// decode step is bound by one of them; `make bench` (tests/bench/) prints
// how close the engine comes to each. Every probe is timed in this thread's
// CPU time, which leaves out the moments the core ran other work, and keeps
// its best run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../core/timing.h"
#include "memory_level.h"

namespace kv {

// The data caches one core sees (memory_level.h), read from the sources
// the environment variable KV_CACHE_SIZES names, in its order, the first
// that reports a last level winning: "sysfs" (/sys/devices/system/cpu/cpu0/
// cache) and "cpuid" (leaf 4 on Intel, 0x8000001D on AMD), both by default;
// "cpuid" alone is a machine without sysfs's cache folders, and "none" one
// that reports nothing (KV_CACHE_SIZES=none make bench). The sizes only
// name levels: every roof is measured.
CacheSizes cache_sizes();
// The sizes as sysfs reports them under `cpu_dir` (cpu0/cache/index*).
CacheSizes cache_sizes_from_sysfs(const std::string& cpu_dir);
// The sizes as this CPU's CPUID reports them (none on other processors).
CacheSizes cache_sizes_from_cpuid();

// One entry of CPUID's cache leaves (leaf 4 and leaf 0x8000001D share the
// layout): type (0 none, 1 data, 2 instruction, 3 unified), level, and
// bytes = ways x partitions x line size x sets, each field stored less one.
struct CacheLeaf {
    unsigned type = 0, level = 0;
    std::uint64_t bytes = 0;
};
CacheLeaf decode_cache_leaf(std::uint32_t eax, std::uint32_t ebx, std::uint32_t ecx);

// One line for the reader: "L1d 32 KiB, L2 1 MiB, L3 32 MiB (sysfs)", or
// that none was reported.
std::string describe(const CacheSizes& caches);

// Float32 FLOP/s of independent chains acc = acc * a + b (one vector
// register each, enough to keep both arithmetic ports busy), over
// `iterations` steps, the best of `repeats` runs:
//   fused:    one fused multiply-add per step where the build targets an
//             instruction for it (has_fused_multiply_add()), else separate;
//   separate: a multiply, then an add, rounded twice: the arithmetic the
//             book's kernels do (-ffp-contract=off, common/core/kernels.h).
double peak_fused_flops(int repeats = 3, long iterations = 20'000'000);
double peak_multiply_then_add_flops(int repeats = 3, long iterations = 20'000'000);
bool has_fused_multiply_add();

// Bytes per second one thread reads by summing a buffer over and over, as
// eight streams. Made at a working set's own size (or read over its first
// that many bytes), it says how fast that working set is read, from
// whichever level holds it. The buffer is allocated and touched once, here,
// so a run times reads only.
class ReadBandwidthProbe {
  public:
    explicit ReadBandwidthProbe(std::uint64_t bytes);
    // The best of `repeats` runs over the whole buffer, each of at least
    // `min_bytes` (the buffer as many times as that takes), after one
    // untimed pass that brings a cache-sized buffer into the cache.
    double bytes_per_second(int repeats = 3, std::uint64_t min_bytes = 256ull << 20) const {
        return read_rate(bytes(), repeats, min_bytes);
    }
    // The same over the buffer's first readable(bytes) bytes: one buffer
    // serves every working set no larger than itself.
    double read_rate(std::uint64_t bytes, int repeats = 3,
                     std::uint64_t min_bytes = 256ull << 20) const;
    // `bytes` rounded to what a read covers (whole steps of the sum, at
    // least one, at most the buffer).
    std::uint64_t readable(std::uint64_t bytes) const;
    std::uint64_t bytes() const { return floats_.size() * sizeof(float); }

  private:
    std::vector<float> floats_;
};

// The DRAM probe's working set: eight times the last-level cache, within
// 256 MiB..1 GiB, so that nothing of the pass before is left in any cache;
// 1 GiB where no cache size was reported.
std::uint64_t dram_probe_bytes(const CacheSizes& caches);

}  // namespace kv
