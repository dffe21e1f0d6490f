// The machine's limits, measured on one thread: how fast it multiplies and
// adds, and how fast it reads from its last-level cache and from DRAM. A
// decode step is bound by one of them; `make bench` (tests/bench/) prints
// how close the engine comes to each. Every probe is timed in this thread's
// CPU time, which leaves out the moments the core ran other work, and keeps
// its best run.
#pragma once

#include <cstdint>
#include <vector>

#include "../core/timing.h"

namespace kv {

// The data caches one core sees, in bytes, as Linux reports them under
// /sys/devices/system/cpu/cpu0/cache (0 where unreadable). Under a
// hypervisor the last level may be the whole host's: memory_level.h
// measures before trusting it.
struct CacheSizes {
    std::uint64_t l1d = 0;
    std::uint64_t l2 = 0;
    std::uint64_t last_level = 0;
};
CacheSizes cache_sizes();

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

// Bytes per second one thread reads by summing a buffer of `bytes` over and
// over, as eight streams. Made at a working set's own size, it says how fast
// that working set is read: from a cache if it fits one, else from DRAM.
// The buffer is allocated and touched once, here, so a run times reads only.
class ReadBandwidthProbe {
  public:
    explicit ReadBandwidthProbe(std::uint64_t bytes);
    // The best of `repeats` runs, each of at least `min_bytes` (the buffer
    // as many times as that takes), after one untimed pass that brings a
    // cache-sized buffer into the cache.
    double bytes_per_second(int repeats = 3, std::uint64_t min_bytes = 256ull << 20) const;
    std::uint64_t bytes() const { return floats_.size() * sizeof(float); }

  private:
    std::vector<float> floats_;
};

// The DRAM probe's working set: eight times the last-level cache, within
// 256 MiB..1 GiB, so that nothing of the pass before is left in any cache.
std::uint64_t dram_probe_bytes(const CacheSizes& caches);

}  // namespace kv
