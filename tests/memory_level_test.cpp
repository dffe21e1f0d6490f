// The book's rule for the roof a step's bytes are held to and the name of
// the level they come from (common/fast/memory_level.h), and where the
// names come from (common/fast/machine_probes.h): sysfs, else CPUID, else
// nothing. With nothing reported every share is still at or under 100 %:
// a roof is a read measured at the working set's size, and a step above it
// is a probe failure, never a share.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../chapters/04_batched_decoding/experiment.h"
#include "../chapters/04_batched_decoding/report.h"
#include "../common/fast/machine_probes.h"
#include "../common/fast/memory_level.h"
#include "test_files.h"

using namespace kv;

namespace {

constexpr std::uint64_t MiB = 1 << 20;

// A Zen 4 core as sysfs reports it.
CacheSizes zen4() {
    CacheSizes c;
    c.l1d = 32 << 10;
    c.l2 = 1 * MiB;
    c.last_level = 32 * MiB;
    c.last_level_number = 3;
    c.source = "sysfs";
    return c;
}

// Sets an environment variable for one scope, then puts back what was there.
class ScopedEnv {
  public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        setenv(name, value, 1);
    }
    ~ScopedEnv() {
        if (old_)
            setenv(name_, old_->c_str(), 1);
        else
            unsetenv(name_);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

  private:
    const char* name_;
    std::optional<std::string> old_;
};

// One cache folder of a fake sysfs tree.
void sysfs_index(const std::string& cpu_dir, int index, const std::string& level,
                 const std::string& type, const std::string& size) {
    const std::filesystem::path dir =
        std::filesystem::path(cpu_dir) / "cpu0/cache" / ("index" + std::to_string(index));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "level") << level << "\n";
    std::ofstream(dir / "type") << type << "\n";
    std::ofstream(dir / "size") << size << "\n";
}

}  // namespace

// --------------------------------------------------------------- roofs

TEST_CASE("a roof is the fastest read measured of its own size or larger") {
    const std::vector<MeasuredRead> reads = {
        {21 * MiB, 40e9}, {24 * MiB, 44e9}, {33 * MiB, 30e9}, {1024 * MiB, 15e9}};
    // The read of its own size, unless a larger buffer read faster (the
    // read of its size was slowed): 21 MiB gets 24 MiB's 44 GB/s.
    CHECK(measured_roof(21 * MiB, reads) == 44e9);
    CHECK(measured_roof(24 * MiB, reads) == 44e9);
    CHECK(measured_roof(33 * MiB, reads) == 30e9);
    CHECK(measured_roof(1024 * MiB, reads) == 15e9);
    // Never a smaller buffer's read: nothing was read of 2 GiB or more.
    CHECK(measured_roof(2048 * MiB, reads) == 0.0);
    // A smaller working set's roof is never below a larger one's.
    double last = 1e300;
    for (std::uint64_t bytes = 1 * MiB; bytes <= 1024 * MiB; bytes += 7 * MiB) {
        const double roof = measured_roof(bytes, reads);
        CHECK(roof <= last);
        last = roof;
    }
}

TEST_CASE("a level is named from the reported sizes only where a read of its size was fast") {
    const CacheSizes caches = zen4();
    const double dram = 15e9;
    CHECK(memory_level_name(16 << 10, caches, 200e9, dram) == "L1d");
    CHECK(memory_level_name(512 << 10, caches, 100e9, dram) == "L2");
    CHECK(memory_level_name(21 * MiB, caches, 40e9, dram) == "L3");
    // Fits the reported L3 but read no faster than 1.2 x DRAM (a virtual
    // machine reporting the host's cache): DRAM.
    CHECK(memory_level_name(21 * MiB, caches, 18e9, dram) == "DRAM");
    CHECK(memory_level_name(21 * MiB, caches, 18.01e9, dram) == "L3");
    // Larger than every reported cache: DRAM, whatever was measured.
    CHECK(memory_level_name(33 * MiB, caches, 40e9, dram) == "DRAM");
    // Nothing reported: no name but the measurement's.
    CHECK(memory_level_name(21 * MiB, CacheSizes{}, 40e9, dram) == kMeasuredAtItsSize);
    CHECK(memory_level_name(1024 * MiB, CacheSizes{}, 15e9, dram) == "measured at its size");
    // A core whose last level is its L2.
    CacheSizes two = caches;
    two.last_level = 2 * MiB;
    two.l2 = 2 * MiB;
    two.last_level_number = 2;
    CHECK(memory_level_name(1 * MiB, two, 100e9, dram) == "L2");
}

TEST_CASE("a share above its limit is a probe failure and never printed as a share") {
    CHECK(share_of(30e9, 40e9).share() == doctest::Approx(0.75));
    CHECK_FALSE(share_of(30e9, 40e9).probe_failed());
    CHECK_FALSE(share_of(40e9, 40e9).probe_failed());  // exactly at the roof: 100 %
    CHECK(share_of(40e9, 40e9).share() == 1.0);
    CHECK(share_of(40.1e9, 40e9).probe_failed());
    CHECK(share_of(40.1e9, 40e9).share() == 0.0);
    CHECK(share_of(40.1e9, 40e9).ratio > 1.0);  // kept, for the record of the failure
    // No limit measured: a failure too, not a division by zero.
    CHECK(share_of(1e9, 0).probe_failed());
}

TEST_CASE("a limit below the step is measured again before a probe failure is called") {
    // The first read was slowed; the second try reads faster: a share.
    const std::vector<double> reads = {30e9, 40e9, 50e9, 60e9};
    std::size_t sampled = 0;
    auto share = [&] { return share_of(45e9, reads[sampled]); };
    int tries = measure_again_while([&] { return share().probe_failed(); }, 3, [&] { ++sampled; });
    CHECK(tries == 2);  // stops as soon as the probe holds
    CHECK_FALSE(share().probe_failed());
    CHECK(share().share() == doctest::Approx(0.9));
    // Still above after every try: a probe failure.
    sampled = 0;
    int calls = 0;
    tries = measure_again_while([&] { return share_of(45e9, 31e9).probe_failed(); }, 3,
                                [&] { ++calls; });
    CHECK(tries == 3);
    CHECK(calls == 3);
    // A share that held is not measured again.
    calls = 0;
    CHECK(measure_again_while([&] { return share_of(10e9, 30e9).probe_failed(); }, 3,
                              [&] { ++calls; }) == 0);
    CHECK(calls == 0);
}

TEST_CASE("with cache sizes unreadable every share shown is at or under 100 percent") {
    const ScopedEnv hidden("KV_CACHE_SIZES", "none");
    const CacheSizes caches = cache_sizes();
    CHECK_FALSE(caches.reported());
    CHECK(caches.last_level == 0);
    CHECK(describe(caches).rfind("none reported", 0) == 0);
    // Injected reads and steps, as a guest without cache sizes measures
    // them: the demo's 21.5 MiB read from a cache the guest does not
    // report, faster than the DRAM probe by far (the step the old rule
    // priced at 175 % of DRAM's rate), and steps around every roof.
    const std::vector<MeasuredRead> reads = {{10 * MiB, 90e9},
                                             {21 * MiB, 55e9},
                                             {33 * MiB, 41e9},
                                             {377 * MiB, 28e9},
                                             {1024 * MiB, 27e9}};
    const double dram = 27e9;
    int shares = 0, failures = 0;
    for (const MeasuredRead& at : reads)
        for (double step_rate = 1e9; step_rate < 120e9; step_rate *= 1.1) {
            const Share s = share_of(step_rate, measured_roof(at.bytes, reads));
            CHECK(memory_level_name(at.bytes, caches, at.bytes_per_second, dram) ==
                  kMeasuredAtItsSize);
            if (s.probe_failed()) {
                ++failures;
                CHECK(s.share() == 0.0);
            } else {
                ++shares;
                CHECK(s.share() <= 1.0);
            }
        }
    CHECK(shares > 0);
    CHECK(failures > 0);
    // The demo's step at the 47.2 GB/s that read as 175 % of DRAM: a share
    // of the roof measured at its size, 86 %.
    CHECK(share_of(47.2e9, measured_roof(21 * MiB, reads)).share() ==
          doctest::Approx(47.2 / 55).epsilon(1e-9));
}

TEST_CASE("a real probe with cache sizes hidden names its level measured at its size") {
    const ScopedEnv hidden("KV_CACHE_SIZES", "none");
    const CacheSizes caches = cache_sizes();
    REQUIRE_FALSE(caches.reported());
    const ReadBandwidthProbe probe(2 * MiB);
    const std::uint64_t bytes = probe.readable(1 * MiB);
    CHECK(bytes <= 1 * MiB);
    CHECK(bytes > 1 * MiB - 1024);
    const double at_size = probe.read_rate(bytes, 1, 4 * MiB);
    const double whole = probe.read_rate(probe.bytes(), 1, 4 * MiB);
    REQUIRE(at_size > 0);
    REQUIRE(whole > 0);
    const std::vector<MeasuredRead> reads = {{bytes, at_size}, {probe.bytes(), whole}};
    const double roof = measured_roof(bytes, reads);
    CHECK(roof >= at_size);  // its own read, or the larger one's if faster
    CHECK(memory_level_name(bytes, caches, at_size, whole) == "measured at its size");
    // Whatever the machine read, a step at or under the roof is a share of
    // it and a step above it a probe failure.
    CHECK(share_of(roof, roof).share() == 1.0);
    CHECK(share_of(0.5 * roof, roof).share() == doctest::Approx(0.5));
    CHECK(share_of(1.01 * roof, roof).probe_failed());
}

// ------------------------------------------------- where sizes come from

TEST_CASE("sysfs's cache folders give each level's size and instruction caches are left out") {
    const test::TempDir dir;
    const std::string cpu = dir.file("cpu");
    sysfs_index(cpu, 0, "1", "Data", "48K");
    sysfs_index(cpu, 1, "1", "Instruction", "32K");
    sysfs_index(cpu, 2, "2", "Unified", "2048K");
    sysfs_index(cpu, 3, "3", "Unified", "260M");
    const CacheSizes c = cache_sizes_from_sysfs(cpu);
    CHECK(c.l1d == 48 << 10);
    CHECK(c.l2 == 2 * MiB);
    CHECK(c.last_level == 260 * MiB);
    CHECK(c.last_level_number == 3);
    CHECK(c.source == "sysfs");
    CHECK(describe(c) == "L1d 48 KiB, L2 2 MiB, L3 260 MiB (sysfs)");
    // No cache folders (a guest that reports none): nothing, no source.
    const CacheSizes none = cache_sizes_from_sysfs(dir.file("nowhere"));
    CHECK_FALSE(none.reported());
    CHECK(none.source.empty());
    // A core whose last level is its L2.
    const std::string two = dir.file("two");
    sysfs_index(two, 0, "1", "Data", "32K");
    sysfs_index(two, 1, "2", "Unified", "1024K");
    const CacheSizes l2 = cache_sizes_from_sysfs(two);
    CHECK(l2.last_level == 1 * MiB);
    CHECK(l2.last_level_number == 2);
    CHECK(describe(l2) == "L1d 32 KiB, L2 1 MiB (sysfs)");
}

TEST_CASE("a CPUID cache leaf's size is ways times partitions times line size times sets") {
    // This Zen 4's leaf 0x8000001D, subleaf 3: a unified level-3 cache of
    // 16 ways, 1 partition, 64-byte lines and 32,768 sets (each stored less
    // one; EAX: type 3 in bits 0-4, level 3 in bits 5-7): 32 MiB.
    const std::uint32_t eax = 3u | (3u << 5);
    const std::uint32_t ebx = 63u | (0u << 12) | (15u << 22);
    const CacheLeaf l3 = decode_cache_leaf(eax, ebx, 32767);
    CHECK(l3.type == 3);
    CHECK(l3.level == 3);
    CHECK(l3.bytes == 32 * MiB);
    // An Intel L1d: 12 ways, 64 sets, 64-byte lines: 48 KiB.
    const CacheLeaf l1 = decode_cache_leaf(1u | (1u << 5), 63u | (11u << 22), 63);
    CHECK(l1.type == 1);
    CHECK(l1.level == 1);
    CHECK(l1.bytes == 48 << 10);
    // Type 0: no more caches, no size.
    CHECK(decode_cache_leaf(0, ebx, 32767).bytes == 0);
}

TEST_CASE("KV_CACHE_SIZES chooses the sources in order and none hides them all") {
    {
        const ScopedEnv only("KV_CACHE_SIZES", "cpuid");
        const CacheSizes c = cache_sizes();
        CHECK((c.source.empty() || c.source.rfind("CPUID leaf ", 0) == 0));
        CHECK(c.reported() == !c.source.empty());
    }
    {
        const ScopedEnv only("KV_CACHE_SIZES", "sysfs");
        const CacheSizes c = cache_sizes();
        CHECK((c.source.empty() || c.source == "sysfs"));
    }
    for (const char* hidden : {"none", "", "nothing,else"}) {
        const ScopedEnv env("KV_CACHE_SIZES", hidden);
        CHECK_FALSE(cache_sizes().reported());
    }
    // Unreported sizes make the DRAM probe its largest, 1 GiB.
    CHECK(dram_probe_bytes(CacheSizes{}) == 1024 * MiB);
    CHECK(dram_probe_bytes(zen4()) == 256 * MiB);
}

// ------------------------------------------ a whole run with sizes hidden

TEST_CASE("chapter 04 run with its cache sizes hidden prints every share at or under 100 percent") {
    const ScopedEnv hidden("KV_CACHE_SIZES", "none");
    ch04::Experiment e;
    e.model.config = Config{.n_layers = 1,
                            .dim = 16,
                            .n_heads = 2,
                            .n_kv_heads = 1,
                            .ffn_dim = 16,
                            .vocab_size = 32,
                            .max_seq = 32};
    e.max_batch = 4;
    e.prompt_len = 4;
    e.repeats = 2;
    e.wide_dim = 32;
    e.dram_probe = 8 * MiB;  // the real probes, on a buffer a test can afford
    const ch04::Results r = e.run();
    CHECK_FALSE(r.caches.reported());
    REQUIRE(r.widths.size() == 2);
    int shares = 0;
    for (const ch04::WidthResult& w : r.widths) {
        REQUIRE(w.roofs.size() == w.timings.size());
        for (const ch04::BatchRoof& roof : w.roofs) {
            CHECK(roof.level == kMeasuredAtItsSize);
            CHECK(roof.roof > 0);
            for (const Share& s : {roof.memory, roof.arithmetic}) {
                if (s.probe_failed()) continue;  // said as a failure, never as a share
                CHECK(s.share() <= 1.0);
                ++shares;
            }
        }
    }
    CHECK(shares > 0);
    // What a reader sees: every "% of" cell of the JSON at most 100, and
    // the text names no level the machine did not report.
    const test::TempDir dir;
    OutputOptions out;
    out.json = true;
    out.plot_dir = dir.file("plots");
    std::ostringstream printed;
    {
        struct Restore {  // std::cout as it was, whatever report() does
            std::streambuf* was;
            ~Restore() { std::cout.rdbuf(was); }
        } restore{std::cout.rdbuf(printed.rdbuf())};
        ch04::report(r, out);
        out.json = false;
        ch04::report(r, out);
    }
    const std::string text = printed.str();
    for (const std::string key : {"\"% of peak\": ", "\"% of roof\": "})
        for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1))
            CHECK(std::strtod(text.c_str() + at + key.size(), nullptr) <= 100.0);
    CHECK(text.find(", " + kMeasuredAtItsSize + ")") != std::string::npos);
    for (const char* level : {", L1d)", ", L2)", ", L3)", ", DRAM)"})
        CHECK(text.find(level) == std::string::npos);
    CHECK(text.find("none reported") != std::string::npos);
}
