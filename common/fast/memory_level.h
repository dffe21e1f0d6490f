// The roof a step's bytes are held to, and the name of the level they come
// from. One rule for the book (`make bench` prices each row with it,
// chapter 04 each batch): a working set's roof is a read measured in the
// same run on a buffer of its own size, never a size the OS reports. The OS
// can be wrong or silent (a virtual machine may report the whole host's
// cache, or none), so what it reports only names the level for the reader,
// and a share above 100 % of a measured roof is a fault of the probe,
// printed as one, never as a result.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace kv {

// The data caches one core sees, in bytes (0 where nothing was read), and
// where they were read: machine_probes.h reads sysfs, else CPUID.
struct CacheSizes {
    std::uint64_t l1d = 0;
    std::uint64_t l2 = 0;
    std::uint64_t last_level = 0;  // the largest level's size
    int last_level_number = 0;     // 3 for an L3; 0 if nothing was read
    std::string source;            // "sysfs", "CPUID leaf 0x8000001D", "CPUID leaf 4"; "" if none

    bool reported() const { return last_level > 0; }
};

// "L3" for level 3. (Appended, not added: GCC 12 warns falsely about a
// string built by adding two temporaries.)
inline std::string level_name(int level) {
    std::string name = "L";
    name += std::to_string(level);
    return name;
}

// What a level is called when no size was read to name it.
inline const std::string kMeasuredAtItsSize = "measured at its size";

// One read the probe measured: a buffer of `bytes`, read at
// `bytes_per_second` (its best sample).
struct MeasuredRead {
    std::uint64_t bytes = 0;
    double bytes_per_second = 0;
};

// The roof of a working set: the fastest read measured of a buffer of its
// own size or larger (0 if none was). Reading fewer bytes is never slower,
// so a larger buffer read faster only shows that the read at its own size
// was slowed; every roof is a rate this run measured, and a smaller working
// set's roof is never below a larger one's.
inline double measured_roof(std::uint64_t working_set_bytes, std::span<const MeasuredRead> reads) {
    double roof = 0;
    for (const MeasuredRead& r : reads)
        if (r.bytes >= working_set_bytes && r.bytes_per_second > roof) roof = r.bytes_per_second;
    return roof;
}

// Whether a read measured at `rate` (bytes per second) came from a cache.
inline bool read_faster_than_dram(double rate, double dram_rate) {
    return rate > 1.2 * dram_rate;
}

// The level a working set is read from, as the reader is told it: the
// smallest reported cache that holds it ("L1d", "L2", "L3"), if a read of
// its size ran clearly faster than DRAM (a cache reported by a virtual
// machine may be the host's, not this core's); "DRAM" if it is larger than
// every reported cache or was read no faster; kMeasuredAtItsSize if no
// cache size was read. Only the words depend on the report: the roof is
// measured_roof's whichever name it gets.
inline std::string memory_level_name(std::uint64_t working_set_bytes, const CacheSizes& caches,
                                     double read_at_its_size, double dram_rate) {
    if (!caches.reported()) return kMeasuredAtItsSize;
    if (working_set_bytes > caches.last_level ||
        !read_faster_than_dram(read_at_its_size, dram_rate))
        return "DRAM";
    if (working_set_bytes <= caches.l1d) return "L1d";
    if (working_set_bytes <= caches.l2 || caches.last_level_number <= 2) return "L2";
    return level_name(caches.last_level_number);
}

// A rate against the limit it cannot pass: bytes per second against a
// memory roof, or FLOP/s against the arithmetic peak.
struct Share {
    double ratio = 0;  // attained / limit

    // Above its limit (or against no limit): a measurement cannot run
    // faster than the machine, so the probe of the limit, not the step, is
    // wrong. The ratio is then not a share and is never printed as one.
    bool probe_failed() const { return !(ratio >= 0 && ratio <= 1.0); }
    // The share, at most 1 by construction: only called when the probe held.
    double share() const { return probe_failed() ? 0.0 : ratio; }
};

inline Share share_of(double attained, double limit) {
    return {limit > 0 ? attained / limit : -1.0};
}

// A step above a limit has the limit measured again before its probe is
// called failed: while failed() (the step over its limits, best samples
// so far), again() samples the limits and the step once more, at most
// `tries` times. Returns how many times it did.
template <class Failed, class Again>
int measure_again_while(Failed&& failed, int tries, Again&& again) {
    int done = 0;
    while (done < tries && failed()) {
        again();
        ++done;
    }
    return done;
}

}  // namespace kv
