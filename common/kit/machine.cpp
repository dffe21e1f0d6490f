#include "machine.h"

#include "machine_probes.h"  // cache_sizes

#include <unistd.h>

#include <fstream>
#include <string>

namespace kv {

std::uint64_t physical_memory_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) return 0;
    return std::uint64_t(pages) * std::uint64_t(page_size);
}

bool fits_in_memory(double bytes, double fraction) {
    const double have = double(physical_memory_bytes());  // 0: unknown
    return have == 0 || bytes <= have * fraction;
}

std::uint64_t last_level_cache_bytes() {
    return cache_sizes().last_level;
}

std::uint64_t page_size() {
    const long size = sysconf(_SC_PAGESIZE);
    return size > 0 ? std::uint64_t(size) : 4096;
}

std::optional<std::uint64_t> resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    std::uint64_t total_pages = 0, resident_pages = 0;
    if (!(statm >> total_pages >> resident_pages)) return std::nullopt;
    return resident_pages * page_size();
}

}  // namespace kv
