#include "machine.h"

#include "report.h"  // fixed, format_bytes

#include <sys/resource.h>
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

namespace {

// The memory.max of this process's cgroup (v2), or memory.limit_in_bytes
// (v1); empty where there is none or it cannot be read.
std::optional<std::uint64_t> cgroup_memory_limit() {
    std::ifstream groups("/proc/self/cgroup");
    std::string line;
    while (std::getline(groups, line)) {
        if (line.rfind("0::", 0) == 0) {  // cgroup v2: "0::/the/group"
            std::ifstream max("/sys/fs/cgroup" + line.substr(3) + "/memory.max");
            std::string text;
            if (max >> text && text != "max") {
                try {
                    return std::stoull(text);
                } catch (const std::exception&) {
                }
            }
            return std::nullopt;
        }
    }
    std::ifstream v1("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    std::uint64_t bytes = 0;
    if (v1 >> bytes && bytes < (std::uint64_t(1) << 62)) return bytes;  // huge: unlimited
    return std::nullopt;
}

}  // namespace

MemoryLimit usable_memory() {
    MemoryLimit limit{physical_memory_bytes(), "this machine's physical memory"};
    auto lower = [&](std::uint64_t bytes, const char* what) {
        if (bytes > 0 && (limit.bytes == 0 || bytes < limit.bytes)) limit = {bytes, what};
    };
    struct rlimit r {};
    if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
        lower(std::uint64_t(r.rlim_cur), "this process's address-space limit (ulimit -v)");
    if (getrlimit(RLIMIT_DATA, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
        lower(std::uint64_t(r.rlim_cur), "this process's data limit (ulimit -d)");
    if (const auto cgroup = cgroup_memory_limit()) lower(*cgroup, "its cgroup's memory.max");
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
