#include "machine_probes.h"

#include "../kit/program.h"  // Allocating
#include "../kit/report.h"   // format_bytes

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace kv {

// ------------------------------------------------------------ cache sizes

namespace {

// Adds one level's data cache to `sizes` (instruction caches hold no data).
void add_level(CacheSizes& sizes, int level, bool instruction, std::uint64_t bytes) {
    if (instruction || bytes == 0) return;
    if (level == 1) sizes.l1d = bytes;
    if (level == 2) sizes.l2 = bytes;
    if (level > sizes.last_level_number) {
        sizes.last_level_number = level;
        sizes.last_level = bytes;
    } else if (level == sizes.last_level_number) {  // the largest of a level's caches
        sizes.last_level = std::max(sizes.last_level, bytes);
    }
}

}  // namespace

CacheSizes cache_sizes_from_sysfs(const std::string& cpu_dir) {
    CacheSizes sizes;
    for (int index = 0; index < 8; ++index) {
        const std::string dir = cpu_dir + "/cpu0/cache/index" + std::to_string(index);
        std::ifstream level_file(dir + "/level"), type_file(dir + "/type"),
            size_file(dir + "/size");
        int level = 0;
        std::string type, size;  // size: "48K", "2048K", "266240K"
        if (!(level_file >> level) || !(type_file >> type)) continue;
        size_file >> size;
        char* unit = nullptr;
        std::uint64_t bytes = std::strtoull(size.c_str(), &unit, 10);  // 0 if unreadable
        if (*unit == 'K' || *unit == 'k') bytes <<= 10;
        if (*unit == 'M' || *unit == 'm') bytes <<= 20;
        add_level(sizes, level, type == "Instruction", bytes);
    }
    if (sizes.reported()) sizes.source = "sysfs";
    return sizes;
}

CacheLeaf decode_cache_leaf(std::uint32_t eax, std::uint32_t ebx, std::uint32_t ecx) {
    CacheLeaf leaf;
    leaf.type = eax & 0x1f;
    leaf.level = (eax >> 5) & 0x7;
    const std::uint64_t line = (ebx & 0xfff) + 1, partitions = ((ebx >> 12) & 0x3ff) + 1,
                        ways = ((ebx >> 22) & 0x3ff) + 1, sets = std::uint64_t(ecx) + 1;
    leaf.bytes = leaf.type == 0 ? 0 : ways * partitions * line * sets;
    return leaf;
}

CacheSizes cache_sizes_from_cpuid() {
    CacheSizes sizes;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return sizes;
    const unsigned max_leaf = a;
    char vendor[13] = {};
    std::memcpy(vendor, &b, 4);
    std::memcpy(vendor + 4, &d, 4);
    std::memcpy(vendor + 8, &c, 4);
    const std::string who = vendor;
    unsigned leaf = 0;
    if (who == "GenuineIntel" && max_leaf >= 4) leaf = 4;
    if (who == "AuthenticAMD" || who == "HygonGenuine") {
        // AMD's leaf exists where the topology extensions bit (leaf
        // 0x80000001, ECX bit 22) says so.
        const unsigned max_extended = __get_cpuid_max(0x80000000, nullptr);
        if (max_extended >= 0x8000001D && __get_cpuid(0x80000001, &a, &b, &c, &d) && (c >> 22 & 1))
            leaf = 0x8000001D;
    }
    if (leaf == 0) return sizes;
    for (unsigned index = 0; index < 16; ++index) {
        if (!__get_cpuid_count(leaf, index, &a, &b, &c, &d)) break;
        const CacheLeaf entry = decode_cache_leaf(a, b, c);
        if (entry.type == 0) break;  // no more caches
        add_level(sizes, int(entry.level), entry.type == 2, entry.bytes);
    }
    if (sizes.reported()) sizes.source = leaf == 4 ? "CPUID leaf 4" : "CPUID leaf 0x8000001D";
#endif
    return sizes;
}

CacheSizes cache_sizes() {
    const char* asked = std::getenv("KV_CACHE_SIZES");
    const std::string sources = asked ? asked : "sysfs,cpuid";
    std::size_t from = 0;
    while (from <= sources.size()) {
        const std::size_t comma = std::min(sources.find(',', from), sources.size());
        const std::string source = sources.substr(from, comma - from);
        CacheSizes sizes;
        if (source == "sysfs") sizes = cache_sizes_from_sysfs("/sys/devices/system/cpu");
        if (source == "cpuid") sizes = cache_sizes_from_cpuid();
        if (sizes.reported()) return sizes;
        from = comma + 1;
    }
    return {};
}

std::string describe(const CacheSizes& caches) {
    if (!caches.reported())
        return "none reported (no sysfs cache folders, no CPUID cache leaves, or "
               "KV_CACHE_SIZES=none)";
    std::string text;
    auto add = [&](const std::string& name, std::uint64_t bytes) {
        if (bytes == 0) return;
        if (!text.empty()) text += ", ";
        text += name;
        text += ' ';
        text += format_bytes(bytes);
    };
    add("L1d", caches.l1d);
    add("L2", caches.l2);
    if (caches.last_level_number >= 3) add(level_name(caches.last_level_number), caches.last_level);
    text += " (";
    text += caches.source;
    text += ')';
    return text;
}

// ------------------------------------------------------------ arithmetic

namespace {

// One chain is one vector register of the widest kind the build targets (a
// chain on the stack would time loads and stores). Each step waits for the
// one before (about 4 cycles) and two ports each start one a cycle, so at
// least 8 chains keep both busy: 16 where there are 32 vector registers, 12
// where there are 16, leaving room for the constants a and b.
#if defined(__AVX512F__)
constexpr int kLanes = 16, kChains = 16;  // zmm registers, 32 of them
#elif defined(__AVX__)
constexpr int kLanes = 8, kChains = 12;  // ymm registers, 16 of them
#elif defined(__aarch64__)
constexpr int kLanes = 4, kChains = 16;  // NEON registers, 32 of them
#else
constexpr int kLanes = 4, kChains = 12;  // xmm registers (SSE2, the x86-64 baseline), 16 of them
#endif
constexpr double kFlopsPerIteration = 2.0 * kChains * kLanes;  // a multiply and an add per lane

typedef float ProbeLanes __attribute__((vector_size(kLanes * sizeof(float))));

// The probes' loops: never inlined into the timing. Clang splits a 16-float
// vector into two ymm halves on cores where it prefers 256-bit vectors, and
// the halves would not fit in the registers, unless the function asks for zmm.
#if defined(__clang__) && defined(__AVX512F__)
#define KV_PROBE_LOOP __attribute__((noinline, min_vector_width(512)))
#else
#define KV_PROBE_LOOP __attribute__((noinline))
#endif

// a * b + c rounded once, with the instruction the build targets.
inline ProbeLanes fused(ProbeLanes a, ProbeLanes b, ProbeLanes c) {
#if defined(__AVX512F__)
    return ProbeLanes(_mm512_fmadd_ps(__m512(a), __m512(b), __m512(c)));
#elif defined(__FMA__)
    return ProbeLanes(_mm256_fmadd_ps(__m256(a), __m256(b), __m256(c)));
#elif defined(__aarch64__)
    return ProbeLanes(vfmaq_f32(float32x4_t(c), float32x4_t(a), float32x4_t(b)));
#else
    // No fused instruction in this build: a multiply and an add.
    return a * b + c;
#endif
}

template <bool Fused>
KV_PROBE_LOOP float chains(long iterations) {
    // Through a volatile: the compiler can neither run the chains at compile
    // time nor drop one whose value it can prove never changes.
    volatile float first = 2.0f;
    ProbeLanes acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = ProbeLanes{} + (first + float(i));
    // The values converge to 1: nothing overflows or goes subnormal.
    const ProbeLanes a = ProbeLanes{} + 0.999f, b = ProbeLanes{} + 0.001f;
    for (long it = 0; it < iterations; ++it)
        for (int i = 0; i < kChains; ++i) acc[i] = Fused ? fused(acc[i], a, b) : acc[i] * a + b;
    ProbeLanes sum = {};
    for (const ProbeLanes& v : acc) sum += v;
    float total = 0;  // every lane, or the compiler could compute only the ones returned
    for (int l = 0; l < kLanes; ++l) total += sum[l];
    return total;
}

// The best rate of `repeats` runs of `run`, each doing `work` (FLOP or bytes).
template <class Run>
double best_rate(int repeats, double work, Run run) {
    double best = 0;
    for (int r = 0; r < std::max(1, repeats); ++r) {
        const double start = thread_cpu_seconds();
        run();
        if (const double seconds = thread_cpu_seconds() - start; seconds > 0)
            best = std::max(best, work / seconds);
    }
    return best;
}

template <bool Fused>
double chain_flops(int repeats, long iterations) {
    // Volatile in and out: the compiler can neither skip the calls nor, the
    // probe being a pure function, fold the repeats into one.
    volatile long count = iterations;
    volatile float sink = 0;
    sink = sink + chains<Fused>(count / 10);  // warm-up: the core's clock comes up
    return best_rate(repeats, kFlopsPerIteration * double(iterations),
                     [&] { sink = sink + chains<Fused>(count); });
}

}  // namespace

bool has_fused_multiply_add() {
#if defined(__AVX512F__) || defined(__FMA__) || defined(__aarch64__)
    return true;
#else
    return false;
#endif
}

double peak_fused_flops(int repeats, long iterations) {
    return chain_flops<true>(repeats, iterations);
}

double peak_multiply_then_add_flops(int repeats, long iterations) {
    return chain_flops<false>(repeats, iterations);
}

// ------------------------------------------------------------ bandwidth

namespace {

// The sum of n floats (n a multiple of kFloatsPerStep), read as eight
// streams at once: as many cache-line misses in flight as a batch-1 decode,
// which walks 8 weight rows side by side (one stream reads DRAM slower than
// the decode does). Only the time is used, not the sum's order.
constexpr int kStreams = 8;
constexpr std::size_t kFloatsPerStep = kStreams * kLanes;  // one register from each stream

KV_PROBE_LOOP float sum_floats(const float* p, std::size_t n) {
    const std::size_t part = n / kStreams;
    ProbeLanes acc[kStreams] = {};
    for (std::size_t i = 0; i < part; i += kLanes)
        for (int a = 0; a < kStreams; ++a) {
            ProbeLanes v;
            std::memcpy(&v, p + a * part + i, sizeof v);
            acc[a] += v;
        }
    ProbeLanes total = {};
    for (const ProbeLanes& v : acc) total += v;
    float sum = 0;  // every lane, or the compiler could skip loading some
    for (int l = 0; l < kLanes; ++l) sum += total[l];
    return sum;
}

}  // namespace

ReadBandwidthProbe::ReadBandwidthProbe(std::uint64_t bytes) {
    const std::size_t floats =
        std::max<std::uint64_t>(bytes / sizeof(float) / kFloatsPerStep, 1) * kFloatsPerStep;
    // A failed allocation ends the program with one line naming it (program.h).
    const Allocating note("the read-bandwidth probe's buffer of " +
                          format_bytes(floats * sizeof(float)));
    floats_.assign(floats, 1.0f);  // filled: every page is mapped before anything is timed
}

std::uint64_t ReadBandwidthProbe::readable(std::uint64_t bytes) const {
    const std::uint64_t step = kFloatsPerStep * sizeof(float);
    return std::clamp<std::uint64_t>(bytes / step * step, step, this->bytes());
}

double ReadBandwidthProbe::read_rate(std::uint64_t bytes, int repeats,
                                     std::uint64_t min_bytes) const {
    const std::uint64_t read = readable(bytes);
    const std::uint64_t passes = std::max<std::uint64_t>(1, min_bytes / read);
    volatile float sink = 0;
    auto pass = [&] { sink = sink + sum_floats(floats_.data(), read / sizeof(float)); };
    pass();  // untimed: brings a small buffer into the cache
    return best_rate(repeats, double(passes) * double(read), [&] {
        for (std::uint64_t p = 0; p < passes; ++p) pass();
    });
}

std::uint64_t dram_probe_bytes(const CacheSizes& caches) {
    const std::uint64_t MiB = 1 << 20;
    if (!caches.reported()) return 1024 * MiB;
    return std::clamp<std::uint64_t>(8 * caches.last_level, 256 * MiB, 1024 * MiB);
}

}  // namespace kv
