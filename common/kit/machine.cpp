#include "machine.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

#include "report.h"  // fixed, format_bytes

namespace kv {

std::uint64_t physical_memory_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES);
    return pages > 0 ? std::uint64_t(pages) * page_size() : 0;
}

MemoryLimit usable_memory() {
    MemoryLimit limit{physical_memory_bytes(), "this machine's physical memory"};
    auto lower = [&](std::uint64_t bytes, const char* what) {
        if (bytes > 0 && (limit.bytes == 0 || bytes < limit.bytes)) limit = {bytes, what};
    };
    struct rlimit r {};
    if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
        lower(r.rlim_cur, "this process's address-space limit (ulimit -v)");
    if (getrlimit(RLIMIT_DATA, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
        lower(r.rlim_cur, "this process's data limit (ulimit -d)");
    // The cgroup's memory.max: v2 names the group on a line "0::/the/group"
    // ("max" reads as no number); v1 has a limit, a huge one meaning none.
    std::ifstream groups("/proc/self/cgroup");
    std::uint64_t bytes = 0;
    for (std::string line; std::getline(groups, line);)
        if (line.starts_with("0::") &&
            std::ifstream("/sys/fs/cgroup" + line.substr(3) + "/memory.max") >> bytes)
            lower(bytes, "its cgroup's memory.max");
    if (std::ifstream("/sys/fs/cgroup/memory/memory.limit_in_bytes") >> bytes &&
        bytes < (std::uint64_t(1) << 62))
        lower(bytes, "its cgroup's memory.max");
    return limit;
}

std::string beyond_memory(double bytes, double fraction) {
    return beyond_memory(bytes, fraction, usable_memory());
}

std::string beyond_memory(double bytes, double fraction, const MemoryLimit& have) {
    if (have.bytes == 0 || bytes <= double(have.bytes) * fraction) return "";  // 0: unknown
    const std::string share = fraction == 0.5    ? "half of "
                              : fraction == 0.25 ? "a quarter of "
                              : fraction == 1    ? ""
                                                 : fixed(100 * fraction, 0) + "% of ";
    return "more than " + share + have.what + ", " + format_bytes(have.bytes);
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
