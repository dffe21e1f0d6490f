#include "machine.h"

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
    std::uint64_t best = 0;
    int best_level = 0;
    for (int index = 0; index < 8; ++index) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
        std::ifstream level_file(dir + "/level"), size_file(dir + "/size");
        int level = 0;
        std::string size;
        if (!(level_file >> level) || !(size_file >> size) || size.empty()) continue;
        std::uint64_t unit = 1;
        if (size.back() == 'K') unit = 1024;
        if (size.back() == 'M') unit = 1024 * 1024;
        std::uint64_t number = 0;
        for (char ch : size) {
            if (ch < '0' || ch > '9' || number > (1ull << 40)) break;
            number = number * 10 + std::uint64_t(ch - '0');
        }
        if (level > best_level && number > 0) best_level = level, best = number * unit;
    }
    return best;
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
