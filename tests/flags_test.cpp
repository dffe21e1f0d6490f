// The shared flag parser: every program's bad input becomes one clear line.
#include <doctest/doctest.h>

#include <cstdint>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../chapters/03_memory_arithmetic/experiment.h"
#include "../chapters/04_batched_decoding/experiment.h"
#include "../chapters/05_queue_simulation/experiment.h"
#include "../chapters/08_prefix_caching/experiment.h"
#include "../common/core/timing.h"
#include "../common/fast/machine_probes.h"
#include "../common/kit/chapter.h"
#include "../common/kit/flags.h"
#include "../common/kit/model_flags.h"
#include "../common/kit/program.h"
#include "../common/kit/report.h"
#include "../common/kit/step_report.h"

using namespace kv;

namespace {

struct Parsed {
    int layers = 4;
    std::uint64_t seed = 1;
    double rate = 0.5;
    bool json = false;
    std::string policy = "serial";
    std::string dir = "plots";
};

// Parses `args` into a fresh Parsed; returns the error message, or "" if none.
std::string parse(std::vector<std::string> args, Parsed& p) {
    Flags flags("test", "a test program");
    flags.add("layers", p.layers, 1, 64, "layers");
    flags.add("seed", p.seed, 0, UINT64_MAX, "seed");
    flags.add("rate", p.rate, 0.0, 10.0, "rate");
    flags.add("json", p.json, "json");
    flags.add_choice("policy", p.policy, {"serial", "static", "continuous"}, "policy");
    flags.add("plot-dir", p.dir, "dir");
    std::vector<const char*> argv = {"test"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    try {
        flags.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}

// What --help prints, and that parse() said stop.
std::string help_of(Flags& flags) {
    std::ostringstream out;
    std::streambuf* old = std::cout.rdbuf(out.rdbuf());
    const char* argv[] = {"prog", "--help"};
    const bool go_on = flags.parse(2, argv);
    std::cout.rdbuf(old);
    CHECK_FALSE(go_on);
    return out.str();
}

}  // namespace

TEST_CASE("flags parse in both spellings") {
    Parsed p;
    CHECK(parse({"--layers", "12", "--seed=18446744073709551615", "--rate", "2.5", "--json",
                 "--policy=continuous", "--plot-dir", "out"},
                p) == "");
    CHECK(p.layers == 12);
    CHECK(p.seed == UINT64_MAX);
    CHECK(p.rate == 2.5);
    CHECK(p.json);
    CHECK(p.policy == "continuous");
    CHECK(p.dir == "out");
    Parsed defaults;
    CHECK(parse({}, defaults) == "");
    CHECK(defaults.layers == 4);
    CHECK(!defaults.json);
}

TEST_CASE("bad flags give one line naming the flag and the value") {
    auto error = [](std::vector<std::string> args) {
        Parsed p;
        return parse(std::move(args), p);
    };
    CHECK(error({"--layerz", "3"}) == "unknown flag --layerz (see --help)");
    CHECK(error({"--layers"}) == "--layers: missing value");
    CHECK(error({"--layers", "abc"}) == "--layers: expected a whole number, got 'abc'");
    CHECK(error({"--layers", "3.5"}) == "--layers: expected a whole number, got '3.5'");
    CHECK(error({"--layers", ""}) == "--layers: expected a whole number, got ''");
    CHECK(error({"--layers", "0"}) == "--layers: must be in 1..64, got 0");
    CHECK(error({"--layers", "-3"}) == "--layers: must be in 1..64, got -3");
    CHECK(error({"--layers", "99999999999999999999999"}) ==
          "--layers: must be in 1..64, got 99999999999999999999999");
    CHECK(error({"--seed", "-1"}) == "--seed: must be in 0..18446744073709551615, got -1");
    CHECK(error({"--seed", "18446744073709551616"}).find("must be in") != std::string::npos);
    CHECK(error({"--rate", "fast"}) == "--rate: expected a decimal number, got 'fast'");
    CHECK(error({"--rate", "nan"}) == "--rate: expected a decimal number, got 'nan'");
    CHECK(error({"--rate", "11"}) == "--rate: must be in 0..10, got 11");
    CHECK(error({"--json=yes"}) == "--json takes no value");
    CHECK(error({"--policy", "random"}) ==
          "--policy: expected one of serial | static | continuous, got 'random'");
    CHECK(error({"layers"}).find("unexpected argument 'layers'") == 0);
}

TEST_CASE("--help prints every flag with its default and says stop") {
    Flags flags("prog", "does things");
    int n = 7;
    flags.add("count", n, 1, 10, "how many");
    const std::string help = help_of(flags);
    CHECK(help.find("--count") != std::string::npos);
    CHECK(help.find("(default 7; 1..10)") != std::string::npos);
    // One rule for where files go, with the folder this program's state is kept in.
    CHECK(help.find("files: a path a flag names is taken from the folder you run in") !=
          std::string::npos);
    CHECK(help.find("lives beside this program, in " + program_folder() + "/") !=
          std::string::npos);
}

TEST_CASE("model flags validate the shape and refuse what cannot fit") {
    const Config c{.dim = 30, .n_heads = 4};
    CHECK_THROWS_WITH_AS(check_model(c, 1), "heads (4) must divide dim (30)", UsageError);
    const Config huge{.dim = 1 << 16, .n_heads = 1024, .n_kv_heads = 1024, .vocab_size = 1 << 20};
    CHECK_THROWS_WITH_AS(check_model(huge, 1),  // 512 GiB of embeddings
                         doctest::Contains("more than half of "), UsageError);
}

TEST_CASE("run_program turns any error into exit status 2") {
    std::ostringstream captured;  // the one-line messages, kept out of the test log
    std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
    CHECK(run_program("t", [] { return 0; }) == 0);
    CHECK(run_program("t", []() -> int { throw UsageError("--x: bad"); }) == 2);
    CHECK(run_program("t", []() -> int { throw std::length_error("full"); }) == 2);
    std::cerr.rdbuf(old);
    CHECK(captured.str() == "t: --x: bad\nt: full\n");
}

TEST_CASE("timed_runs warms up once and then times each repeat") {
    std::vector<bool> told;
    const std::vector<double> times = timed_runs(3, [&](bool timed) { told.push_back(timed); });
    CHECK(told == std::vector<bool>{false, true, true, true});
    REQUIRE(times.size() == 3);
}

TEST_CASE("the step table keeps about six steps and the last; every method side by side") {
    const std::vector<double> a = {1e-3, 2e-3, 3e-3,  4e-3,  5e-3,  6e-3, 7e-3,
                                   8e-3, 9e-3, 10e-3, 11e-3, 12e-3, 13e-3};
    const std::vector<double> b(a.size(), 5e-4);
    const Table table = step_table(16, {{"naive", "n", a}, {"cached", "c", b}});
    std::ostringstream out;
    table.print(out);
    const std::string text = out.str();
    CHECK(text.find("naive (ms)") != std::string::npos);
    CHECK(text.find("cached (ms)") != std::string::npos);
    // 13 steps, a stride of 2: steps 0, 2, ..., 12.
    CHECK(table.to_json().find("\"step\": 12, \"sequence length\": 28") != std::string::npos);
    CHECK(table.to_json().find("\"step\": 11") == std::string::npos);
    CHECK(step_plot("t", 16, {{"naive", "n", a}}).svg().find(">n</text>") != std::string::npos);
}

namespace {

struct ToyExperiment {
    int size = 3;  // the one parameter
    void add_flags(Flags& flags) { flags.add("size", size, 1, 10, "a size"); }
    void check() const {
        if (size == 7) throw UsageError("--size 7 is unlucky");
    }
    int run() const { return size * 2; }
};

int run_toy(std::vector<const char*> args, int& reported) {
    ToyExperiment toy;
    args.insert(args.begin(), "toy");
    return run_chapter(static_cast<int>(args.size()), args.data(), "toy", "A toy.", toy,
                       [&](int result, const OutputOptions&) { return reported = result, 0; });
}

}  // namespace

TEST_CASE("run_chapter parses and checks and runs and reports and bad input exits 2") {
    std::ostringstream captured;
    std::streambuf* old_err = std::cerr.rdbuf(captured.rdbuf());
    std::ostringstream help;
    std::streambuf* old_out = std::cout.rdbuf(help.rdbuf());
    int reported = 0;
    CHECK(run_toy({"--size", "4"}, reported) == 0);
    CHECK(reported == 8);
    reported = 0;
    CHECK(run_toy({"--help"}, reported) == 0);
    CHECK(reported == 0);  // --help runs nothing
    CHECK(run_toy({"--size", "7"}, reported) == 2);
    CHECK(run_toy({"--size", "11"}, reported) == 2);
    std::cout.rdbuf(old_out);
    std::cerr.rdbuf(old_err);
    CHECK(help.str().find("--json") != std::string::npos);  // the output flags come along
    CHECK(captured.str() == "toy: --size 7 is unlucky\ntoy: --size: must be in 1..10, got 11\n");
}

TEST_CASE("numbers are decimal for whole and float flags alike") {
    Parsed p;
    // Hexadecimal, a plus sign, a bare point, inf and nan are refused by both.
    for (const char* text : {"0x10", "+5", ".5", "5.", "inf", "nan", " 1", "1 ", "1e", "--1"}) {
        INFO(text);
        CHECK(parse({"--rate", text}, p).find("--rate: expected a decimal number, got '") == 0);
        CHECK(parse({"--layers", text}, p).find("--layers: ") == 0);
    }
    CHECK(parse({"--layers", "0x10"}, p) == "--layers: expected a whole number, got '0x10'");
    // Every in-range value is accepted, however small or written.
    for (const char* text : {"1e-310", "4.9e-324", "0", "-0", "1E1", "2.5e+0", "0.000001"}) {
        INFO(text);
        CHECK(parse({"--rate", text}, p) == "");
    }
    CHECK(p.rate == 1e-6);
    CHECK(parse({"--rate", "1e-400"}, p) == "");  // rounds to 0, in range
    CHECK(parse({"--rate", "1e400"}, p) == "--rate: must be in 0..10, got 1e400");
    CHECK(parse({"--rate", "-1e-310"}, p) == "--rate: must be in 0..10, got -1e-310");
    CHECK(parse({"--rate", "-0.5e-3"}, p) == "--rate: must be in 0..10, got -0.5e-3");
    CHECK(parse({"--rate", "1,5"}, p) == "--rate: expected a decimal number, got '1,5'");
}

TEST_CASE("an empty string flag is an error naming the flag") {
    Parsed p;
    CHECK(parse({"--plot-dir="}, p) == "--plot-dir: needs a value, got an empty one");
    CHECK(parse({"--plot-dir", ""}, p) == "--plot-dir: needs a value, got an empty one");
    CHECK(p.dir == "plots");
}

TEST_CASE("a message stays one line whatever the argument holds") {
    Parsed p;
    CHECK(parse({"--policy", "a\r\nb"}, p) ==
          "--policy: expected one of serial | static | continuous, got 'a\\r\\nb'");
    CHECK(parse({"--no\nsuch"}, p) == "unknown flag --no\\nsuch (see --help)");
}

TEST_CASE("an unlisted flag is taken but not offered") {
    std::string dir = "plots";
    Flags flags("prog", "does things");
    flags.add("plot-dir", dir, "dir");
    flags.unlist("plot-dir");
    CHECK(help_of(flags).find("plot-dir") == std::string::npos);
    const char* argv[] = {"prog", "--plot-dir", "x"};
    CHECK(flags.parse(3, argv));
    CHECK(dir == "x");
    CHECK_THROWS_AS(flags.unlist("none"), std::logic_error);
}

TEST_CASE("the memory check counts every large allocation and names each size") {
    const Config c{};  // the demo model
    const ModelMemory m = model_memory(c, 100, 100);
    CHECK(m.weights == c.weight_bytes());
    CHECK(m.kv_cache == c.kv_bytes(100));
    CHECK(m.rope_table == std::uint64_t(c.max_seq) * c.head_size() * 4);
    const std::uint64_t per_row = 5 * c.dim + 2 * c.kv_dim() + 2 * c.ffn_dim;
    CHECK(m.pass_scratch == (100 * per_row + c.max_seq + c.vocab_size) * 4);
    CHECK(m.total == m.weights + m.kv_cache + m.rope_table + m.pass_scratch);
    // A prefill of a million tokens of a small model: the scratch, not the
    // weights, is what does not fit.
    const Config wide{.dim = 4096,
                      .n_heads = 32,
                      .n_kv_heads = 32,
                      .ffn_dim = 1 << 17,
                      .vocab_size = 256,
                      .max_seq = 1 << 20};
    const ModelMemory big = model_memory(wide, 1, 1 << 20);
    CHECK(big.pass_scratch > 1000 * big.weights / 1000);
    const std::string message = [&] {
        try {
            check_model(wide, 1, 1 << 20);
        } catch (const UsageError& e) {
            return std::string(e.what());
        }
        return std::string();
    }();
    if (usable_memory().bytes > 0 && usable_memory().bytes < big.total * 2) {
        INFO(message);
        CHECK(message.find("RoPE table") != std::string::npos);
        CHECK(message.find("a pass's scratch") != std::string::npos);
        CHECK(message.find(format_bytes(big.pass_scratch)) != std::string::npos);
        CHECK(message.find(usable_memory().what) != std::string::npos);
    }
}

TEST_CASE("the memory a process may use is at most the machine's") {
    const MemoryLimit limit = usable_memory();
    CHECK_FALSE(limit.what.empty());
    if (physical_memory_bytes() > 0) {
        CHECK(limit.bytes > 0);
        CHECK(limit.bytes <= physical_memory_bytes());
    }
}

namespace {

// The message `check` throws, or "" if it throws nothing.
template <class Check>
std::string refusal(Check&& check) {
    try {
        check();
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("a refusal names the memory limit it compared against; with its share and size") {
    const MemoryLimit limit{std::uint64_t(400) << 20,
                            "this process's address-space limit (ulimit -v)"};
    CHECK(beyond_memory(double(200 << 20), 0.5, limit) == "");
    CHECK(beyond_memory(double(201 << 20), 0.5, limit) ==
          "more than half of this process's address-space limit (ulimit -v), 400 MiB");
    CHECK(beyond_memory(double(101 << 20), 0.25, limit) ==
          "more than a quarter of this process's address-space limit (ulimit -v), 400 MiB");
    CHECK(beyond_memory(double(401 << 20), 1, limit) ==
          "more than this process's address-space limit (ulimit -v), 400 MiB");
    CHECK(beyond_memory(1e30, 0.5, MemoryLimit{}) == "");  // nothing could be read: no refusal

    // Chapters 03 and 04 quote usable_memory(), the limit beyond_memory compares with.
    const MemoryLimit have = usable_memory();
    if (have.bytes == 0) return;
    const std::string limit_text = have.what + ", " + format_bytes(have.bytes);
    ch03::Experiment three;
    three.measure_tokens = 1 << 24;
    const std::uint64_t cache = Config().kv_bytes(1 << 24);
    if (double(cache) > double(have.bytes) / 4)
        CHECK(refusal([&] { three.check(); }) == "--measure-tokens 16777216 needs " +
                                                     format_bytes(cache) +
                                                     ", more than a quarter of " + limit_text);
    Config long_context;
    long_context.max_seq = 1 << 20;
    const std::string bench = refusal([&] {
        ch04::check_fits(long_context, bench_bytes(long_context, 1024, 100'000, 15), "",
                         "--max-batch 1024 with --prompt-len 100000 and --repeats 15");
    });
    CHECK(bench.rfind("--max-batch 1024 with --prompt-len 100000 and --repeats 15 needs ", 0) == 0);
    CHECK(bench.find(", more than half of " + limit_text) != std::string::npos);
}

// Chapter 08 runs the real engine for its parallel samples whatever prices
// the simulator uses: a system prompt whose eight copies cannot be held is
// refused before any work, with the analytic cost model too (it measured
// nothing and so once checked nothing past the weights).
TEST_CASE("chapter 08 counts its parallel samples' memory on every cost model") {
    const MemoryLimit have = usable_memory();
    if (have.bytes == 0) return;
    for (const char* cost_model : {"analytic", "measured"}) {
        CAPTURE(cost_model);
        ch08::Experiment e;
        e.queue.cost_model = cost_model;
        e.model.n_kv_heads = e.model.n_heads;  // the most bytes per position
        e.engine_requests = 0;
        // A context whose pool fits an eighth of the memory, so that the
        // budget passes and the eight samples' copies do not.
        const std::uint64_t per_token = e.model.kv_bytes_per_token();
        const std::uint64_t positions =
            std::min<std::uint64_t>(have.bytes / 8 / per_token, 1 << 20);
        if (positions < 2048) return;  // a tiny machine: the shape itself would be refused
        e.model.max_seq = int(positions);
        const WorkloadOptions& w = e.queue.workload;
        e.sharing.system_prompt = e.model.max_seq - w.prompt_max - w.answer_max + 1;
        e.queue.kv_budget_mib = (positions * per_token >> 20) + 1;
        if (e.sample_positions() * per_token <= have.bytes / 2) return;  // the cap held it
        const std::string why = refusal([&] { e.check(); });
        CHECK(why.find("this model needs") != std::string::npos);
        CHECK(why.find('\n') == std::string::npos);
    }
}

TEST_CASE("chapter 04 counts its bandwidth probe's buffer before measuring") {
    const MemoryLimit have = usable_memory();
    if (have.bytes == 0) return;
    const Config demo;
    const std::string message = refusal([&] {
        ch04::check_fits(demo, double(2 * have.bytes), "", "the DRAM read-bandwidth probe");
    });
    CHECK(message.rfind("the DRAM read-bandwidth probe needs ", 0) == 0);
    CHECK(message.find("more than half of " + have.what) != std::string::npos);
    CHECK(refusal([&] {
              ch04::check_fits(demo, double(dram_probe_bytes(CacheSizes{})), "", "the probe");
          }) == "");
}

// AddressSanitizer reports an allocation this large instead of throwing.
#if !defined(__SANITIZE_ADDRESS__)
TEST_CASE("a bandwidth probe that cannot be allocated ends in one line naming it") {
    std::ostringstream captured;
    std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
    const int status = run_program("t", [] {
        const ReadBandwidthProbe probe(std::uint64_t(1) << 62);
        return int(probe.bytes() > 0);
    });
    std::cerr.rdbuf(old);
    CHECK(status == 2);
    CHECK(captured.str().rfind("t: out of memory allocating the read-bandwidth probe's buffer of " +
                                   format_bytes(std::uint64_t(1) << 62) + ";",
                               0) == 0);
}
#endif

TEST_CASE("chapter 05's --help gives --requests and --batch the range its check holds") {
    ch05::Experiment e;
    Flags flags("05_queue_simulation", "the queue");
    e.add_flags(flags);
    const std::string help = help_of(flags);
    CHECK(help.find("requests in the queue (past 100,000: slow; with --answer-len, at most "
                    "100,000,000 answer tokens in all)") != std::string::npos);
    CHECK(help.find("(default 1000; 1..1000000)") != std::string::npos);
    CHECK(help.find("most requests running at once (default 32; 1..4096)") != std::string::npos);
    const char* zero_requests[] = {"t", "--requests", "0"};
    CHECK_THROWS_WITH_AS(flags.parse(3, zero_requests), "--requests: must be in 1..1000000, got 0",
                         UsageError);
    const char* zero_batch[] = {"t", "--batch", "0"};
    CHECK_THROWS_WITH_AS(flags.parse(3, zero_batch), "--batch: must be in 1..4096, got 0",
                         UsageError);
}

TEST_CASE("a queue whose answer tokens the simulator cannot keep is refused before any draw") {
    // The simulator keeps one gap per answer token: a million answers of a
    // thousand tokens would hold about 22 GiB. Refused at once, naming both flags.
    ch05::Experiment e;
    e.model.max_seq = 4096;
    e.queue.cost_model = "analytic";
    WorkloadOptions& w = e.queue.workload;
    w.answer_len = 1000;
    w.answer_max = 2000;
    w.requests = 1'000'000;
    CHECK_THROWS_WITH_AS(e.check(),
                         doctest::Contains("--requests 1000000 x --answer-len 1000 is about "
                                           "1,000,000,000 answer tokens"),
                         UsageError);
    CHECK_THROWS_WITH_AS(e.check(), doctest::Contains("it keeps at most 100,000,000"), UsageError);
    // The bound is on tokens, not requests: short answers pass the check.
    w.requests = 100'000;
    w.answer_len = 48;
    w.answer_max = 192;
    CHECK_NOTHROW(e.check());
    CHECK(beyond_simulation(w).empty());
    CHECK(simulation_bytes(1, 1000) < simulation_bytes(1, 1001));
    CHECK(simulation_bytes(1000, 0) < simulation_bytes(1001, 0));
}

TEST_CASE("chapter 05 names the first request that can never fit without drawing the rest") {
    ch05::Experiment e;
    e.queue.cost_model = "analytic";
    e.model.max_seq = 1 << 20;
    WorkloadOptions& w = e.queue.workload;
    const std::uint64_t tokens = e.budget().tokens;
    // The request the chapter must name: the first whose prompt + cap - 1
    // exceeds the budget, read from the whole queue as drawn.
    auto first_refused = [&] {
        for (const Request& r : make_workload(workload_of(e.queue, e.seed)))
            if (longest_context(r) > tokens) return r;
        return Request{};
    };
    auto refusal = [&](const Request& r) {
        return "request " + std::to_string(r.id) + " may need " + with_commas(longest_context(r)) +
               " (prompt " + std::to_string(r.prompt_len) + " + answer cap " +
               std::to_string(r.answer_cap) + " - 1)";
    };
    // Even the shortest prompt does not fit: the first request, drawn alone.
    w.answer_len = 200;
    w.answer_max = int(tokens);
    const Request first = first_refused();
    CHECK(first.id == 0);
    CHECK_THROWS_WITH_AS(e.check(), doctest::Contains(refusal(first).c_str()), UsageError);
    // Some prompts fit and some do not: the first that does not, from the whole draw.
    w.answer_max = int(tokens) - 60 + 1;  // prompts up to 60 fit: the first request's does
    const Request some = first_refused();
    CHECK(some.id > 0);
    CHECK_THROWS_WITH_AS(e.check(), doctest::Contains(refusal(some).c_str()), UsageError);
    // Every prompt fits: nothing to refuse.
    w.answer_max = int(tokens) - w.prompt_max + 1;
    CHECK_NOTHROW(e.check());
}

TEST_CASE("a flag's value that is another flag is refused naming both") {
    auto error = [](std::vector<std::string> args) {
        Parsed p;
        return parse(std::move(args), p);
    };
    CHECK(error({"--plot-dir", "--json"}) ==
          "--plot-dir: expected a value, got the flag --json (to mean that text, write "
          "--plot-dir=--json)");
    CHECK(error({"--plot-dir", "--layers=3"}).find("got the flag --layers=3") != std::string::npos);
    CHECK(error({"--plot-dir", "--help"}).find("got the flag --help") != std::string::npos);
    CHECK(error({"--layers", "--seed", "3"})
              .find("--layers: expected a value, got the flag --seed") == 0);
    // Given with = on purpose, or not a flag of this program: a value like any other.
    Parsed p;
    CHECK(parse({"--plot-dir=--json"}, p) == "");
    CHECK(p.dir == "--json");
    CHECK(parse({"--plot-dir", "--not-a-flag"}, p) == "");
    CHECK(p.dir == "--not-a-flag");
    CHECK(parse({"--plot-dir", "-json"}, p) == "");
}

TEST_CASE("a JSON array of objects in order with a comma between them") {
    const std::vector<Json> none, two = {Json().add("a", 1), Json().add("b", "x")};
    CHECK(Json().add("runs", none).str() == "{\"runs\": []}");
    CHECK(Json().add("runs", two).str() == "{\"runs\": [{\"a\": 1},{\"b\": \"x\"}]}");
}
