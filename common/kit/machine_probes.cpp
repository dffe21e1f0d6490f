#include "machine_probes.h"

#include "program.h"  // Allocating
#include "report.h"   // format_bytes

#include <time.h>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>

#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace kv {

double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// ------------------------------------------------------------ cache sizes

namespace {

// "48K", "2048K", "266240K" -> bytes; 0 if unreadable.
std::uint64_t read_cache_size(const std::string& dir) {
    std::ifstream in(dir + "/size");
    std::string text;
    if (!(in >> text) || text.empty()) return 0;
    std::uint64_t value = 0;
    std::size_t i = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i)
        value = value * 10 + (text[i] - '0');
    if (i < text.size() && (text[i] == 'K' || text[i] == 'k')) value <<= 10;
    if (i < text.size() && (text[i] == 'M' || text[i] == 'm')) value <<= 20;
    return value;
}

}  // namespace

CacheSizes cache_sizes() {
    CacheSizes sizes;
    for (int index = 0; index < 8; ++index) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
        std::ifstream level_file(dir + "/level"), type_file(dir + "/type");
        int level = 0;
        std::string type;
        if (!(level_file >> level) || !(type_file >> type)) continue;
        if (type == "Instruction") continue;
        const std::uint64_t bytes = read_cache_size(dir);
        if (level == 1) sizes.l1d = bytes;
        if (level == 2) sizes.l2 = bytes;
        if (level >= 3) sizes.last_level = std::max(sizes.last_level, bytes);
    }
    if (sizes.last_level == 0) sizes.last_level = sizes.l2;
    return sizes;
}

// ------------------------------------------------------------ arithmetic

namespace {

typedef float ProbeLanes __attribute__((vector_size(16 * sizeof(float))));
constexpr int kChains = 16;  // independent chains: throughput, not latency, sets the pace
constexpr double kFlopsPerIteration = 2.0 * kChains * 16;

// a * b + c rounded once, with the instruction the build targets.
inline ProbeLanes fused(ProbeLanes a, ProbeLanes b, ProbeLanes c) {
#if defined(__AVX512F__)
    return ProbeLanes(_mm512_fmadd_ps(__m512(a), __m512(b), __m512(c)));
#elif defined(__FMA__)
    __m256 lo[3], hi[3];
    const ProbeLanes* in[3] = {&a, &b, &c};
    for (int i = 0; i < 3; ++i) {
        std::memcpy(&lo[i], in[i], sizeof lo[i]);
        std::memcpy(&hi[i], reinterpret_cast<const char*>(in[i]) + 32, sizeof hi[i]);
    }
    const __m256 rlo = _mm256_fmadd_ps(lo[0], lo[1], lo[2]);
    const __m256 rhi = _mm256_fmadd_ps(hi[0], hi[1], hi[2]);
    ProbeLanes out;
    std::memcpy(&out, &rlo, 32);
    std::memcpy(reinterpret_cast<char*>(&out) + 32, &rhi, 32);
    return out;
#elif defined(__aarch64__)
    ProbeLanes out;
    for (int q = 0; q < 4; ++q) {
        float32x4_t va, vb, vc;
        std::memcpy(&va, reinterpret_cast<const char*>(&a) + 16 * q, 16);
        std::memcpy(&vb, reinterpret_cast<const char*>(&b) + 16 * q, 16);
        std::memcpy(&vc, reinterpret_cast<const char*>(&c) + 16 * q, 16);
        const float32x4_t r = vfmaq_f32(vc, va, vb);
        std::memcpy(reinterpret_cast<char*>(&out) + 16 * q, &r, 16);
    }
    return out;
#else
    return a * b + c;  // no fused instruction in this build: a multiply and an add
#endif
}

template <bool Fused>
__attribute__((noinline)) float chains(long iterations) {
    ProbeLanes acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = ProbeLanes{} + float(i);
    // The values converge to 1: nothing overflows or goes subnormal.
    const ProbeLanes a = ProbeLanes{} + 0.999f, b = ProbeLanes{} + 0.001f;
    for (long it = 0; it < iterations; ++it)
        for (int i = 0; i < kChains; ++i) acc[i] = Fused ? fused(acc[i], a, b) : acc[i] * a + b;
    ProbeLanes sum = {};
    for (const ProbeLanes& v : acc) sum += v;
    return sum[0];
}

template <bool Fused>
double chain_flops(int repeats, long iterations) {
    // Volatile in and out: the compiler can neither skip the calls nor, the
    // probe being a pure function, fold the repeats into one.
    volatile long count = iterations;
    volatile float sink = 0;
    sink = sink + chains<Fused>(count / 10);  // warm-up: the core's clock comes up
    double best = 0;
    for (int r = 0; r < std::max(1, repeats); ++r) {
        const double start = thread_cpu_seconds();
        sink = sink + chains<Fused>(count);
        const double seconds = thread_cpu_seconds() - start;
        if (seconds > 0) best = std::max(best, kFlopsPerIteration * double(iterations) / seconds);
    }
    return best;
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

typedef float ReadLanes __attribute__((vector_size(16 * sizeof(float))));
constexpr std::size_t kFloatsPerStep = 8 * 16;  // eight accumulators of 16 lanes

// The sum of n floats (n a multiple of kFloatsPerStep), read as eight
// streams at once: accumulator a sums the a-th eighth of the buffer, 64
// bytes a step. Eight streams keep as many cache-line misses in flight as
// the kernels do (a batch-1 decode walks 8 weight rows side by side); a
// single front-to-back stream read DRAM at 13.7 GB/s on the Xeon this was
// written on while the decode streamed its weights at 15.1, and the bench
// refused the row as above a measured limit. The order of the additions
// does not matter here: only the time is used.
__attribute__((noinline)) float sum_floats(const float* p, std::size_t n) {
    const std::size_t part = n / 8;
    ReadLanes acc[8] = {};
    for (std::size_t i = 0; i < part; i += 16)
        for (int a = 0; a < 8; ++a) {
            ReadLanes v;
            std::memcpy(&v, p + a * part + i, sizeof v);
            acc[a] += v;
        }
    ReadLanes total = {};
    for (const ReadLanes& v : acc) total += v;
    float sum = 0;  // every lane, or the compiler could skip loading some
    for (int l = 0; l < 16; ++l) sum += total[l];
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

double ReadBandwidthProbe::bytes_per_second(int repeats, std::uint64_t min_bytes) const {
    const std::size_t n = floats_.size();
    const std::uint64_t passes = std::max<std::uint64_t>(1, min_bytes / bytes());
    volatile float sink = 0;
    sink = sink + sum_floats(floats_.data(), n);  // untimed: brings a small buffer into the cache
    double best = 0;
    for (int r = 0; r < std::max(1, repeats); ++r) {
        const double start = thread_cpu_seconds();
        for (std::uint64_t p = 0; p < passes; ++p) sink = sink + sum_floats(floats_.data(), n);
        const double seconds = thread_cpu_seconds() - start;
        if (seconds > 0) best = std::max(best, double(passes) * double(bytes()) / seconds);
    }
    return best;
}

std::uint64_t dram_probe_bytes(const CacheSizes& caches) {
    const std::uint64_t MiB = 1 << 20;
    return std::clamp<std::uint64_t>(8 * caches.last_level, 256 * MiB, 1024 * MiB);
}

std::uint64_t last_level_probe_bytes(const CacheSizes& caches, std::uint64_t wanted) {
    const std::uint64_t at_least = 4 * caches.l2;
    const std::uint64_t at_most = std::max(caches.last_level / 4, at_least);
    return std::clamp(wanted, at_least, at_most);
}

}  // namespace kv
