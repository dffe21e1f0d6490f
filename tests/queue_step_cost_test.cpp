// The one step cost (common/serving/step_cost.h): the simulator prices a
// step by its formula and nothing else; its analytic prices; the
// calibration's steps, its fit, and the prices saved for this machine.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "../common/kit/files.h"
#include "../common/lab/calibration.h"
#include "../common/serving/scheduler.h"
#include "../common/serving/step_cost.h"
#include "../common/serving/step_plan.h"
#include "test_files.h"
#include "tiny_models.h"

using namespace kv;

namespace {

// Prices that are powers of two: every sum below is exact.
StepCost round_prices() {
    StepCost s;
    s.fixed = 1;
    s.per_row = 0.5;
    s.per_sequence = 0.25;
    s.per_pair = 0.125;
    s.per_position = 0.0625;
    return s;
}

// A request past its prefill with `cached` positions of its sequence cached.
Request decoding(int id, int prompt, int cached) {
    Request r;
    r.id = id;
    r.prompt_len = prompt;
    r.answer_len = r.answer_cap = 100;
    r.status = RequestStatus::decoding;
    r.cached = cached;
    r.held = cached;
    r.received = cached + 1 - prompt;  // its newest token is not cached yet
    return r;
}

// The work a test counted by hand, and the price of that work in round_prices().
struct Counted {
    double rows, sequences, pairs, positions;
    double seconds() const {
        return 1 + 0.5 * rows + 0.25 * sequences + 0.125 * pairs + 0.0625 * positions;
    }
};

void check_priced(const StepPlan& plan, const Counted& hand) {
    const StepWork w = work_of(plan);
    CHECK(w.rows == hand.rows);
    CHECK(w.sequences == hand.sequences);
    CHECK(w.pairs == hand.pairs);
    CHECK(w.positions == hand.positions);
    SimulatedExecutor simulator(round_prices());
    CHECK(simulator.run(plan) == hand.seconds());
    CHECK(simulator.run(plan) == round_prices().seconds(work_of(plan)));
}

}  // namespace

TEST_CASE("the simulator prices a step exactly by the formula on the work counted by hand") {
    // A prefill of 10 tokens: 10 rows, 1 sequence, 1 + 2 + ... + 10 = 55
    // pairs, 10 positions read.
    Request newcomer;
    newcomer.prompt_len = 10;
    newcomer.status = RequestStatus::prefilling;
    check_priced({{prefill_row(newcomer, true)}, true}, {10, 1, 55, 10});

    // A decode step of three sequences holding 20, 30 and 40 positions:
    // each row's token attends to its cached positions and itself.
    Request a = decoding(0, 8, 20), b = decoding(1, 8, 30), c = decoding(2, 8, 40);
    check_priced({{decode_row(a, true), decode_row(b, true), decode_row(c, true)}, true},
                 {3, 3, 21 + 31 + 41, 21 + 31 + 41});

    // The same two sequences without the cache: each recomputed from
    // position 0, 21 and 31 tokens, 21 x 22 / 2 + 31 x 32 / 2 pairs.
    check_priced({{decode_row(a, false), decode_row(b, false)}, false},
                 {21 + 31, 2, 231 + 496, 21 + 31});

    // A mixed step: two decode rows beside a chunk of 16 prompt tokens
    // after 32 cached ones (16 x 32 + 16 x 17 / 2 = 648 pairs, 48 positions).
    Request chunked;
    chunked.id = 3;
    chunked.prompt_len = 100;
    chunked.status = RequestStatus::prefilling;
    chunked.cached = 32;
    StepRow chunk = prefill_row(chunked, true);
    chunk.tokens = 16;
    check_priced({{decode_row(a, true), decode_row(b, true), chunk}, true},
                 {2 + 16, 3, 21 + 31 + 648, 21 + 31 + 48});

    // The two corners a reader asks about are the same formula.
    const StepCost s = round_prices();
    CHECK(s.prefill_seconds(10) == Counted{10, 1, 55, 10}.seconds());
    CHECK(s.decode_seconds(3, 90) == Counted{3, 3, 93, 93}.seconds());
}

TEST_CASE("the analytic step cost prices what the engine does") {
    const StepCost m = analytic_step_cost(Config{});
    // A batch shares one read of the weights: per token, a step of 32 is
    // cheaper than a step of 1.
    CHECK(m.decode_seconds(32, 32 * 100) / 32 < m.decode_seconds(1, 100));
    // Recomputing a sequence costs more than decoding its next token.
    CHECK(m.prefill_seconds(101) > m.decode_seconds(1, 100));
    // Longer prompts cost more, and more than linearly (attention).
    CHECK(m.prefill_seconds(200) - m.fixed > 2 * (m.prefill_seconds(100) - m.fixed));
    CHECK(m.source.rfind("analytic", 0) == 0);
}

TEST_CASE("the analytic step reads the output table when it is the embedding") {
    Config separate = test::hand_sized_config();
    Config shared = separate;
    shared.shared_output = true;
    // Both read the same bytes: the separate table is only looked up, and
    // the shared one is read once, as the output projection.
    const double bytes = double(separate.weight_bytes_read_per_pass());
    CHECK(bytes == 4.0 * 172);
    CHECK(double(shared.weight_bytes_read_per_pass()) == bytes);
    CHECK(analytic_step_cost(separate).fixed == bytes / kAnalyticBytesPerSecond);
    CHECK(analytic_step_cost(shared).fixed == bytes / kAnalyticBytesPerSecond);
}

// ------------------------------------------------------- the calibration

TEST_CASE("the calibration times decode-only and prompt-only and mixed steps") {
    for (const Config& c : {Config{}, test::tiny_config()}) {
        int decode_only = 0, prompt_only = 0, mixed = 0, deep = 0;
        for (const StepShape& s : calibration_shapes(c)) {
            CHECK((s.batch > 0 || s.chunk > 0));
            CHECK(s.batch <= kMostCalibratedBatch);
            CHECK(s.chunk <= kLargestCalibratedChunk);
            CHECK(s.context + 1 <= c.max_seq);      // a decode row's token fits its cache
            CHECK(s.first + s.chunk <= c.max_seq);  // and so does a chunk
            decode_only += s.batch > 0 && s.chunk == 0;
            prompt_only += s.batch == 0 && s.chunk > 0;
            mixed += s.batch > 0 && s.chunk > 0;
            deep += s.context > 32 || s.first > 0;
        }
        INFO(c.describe());
        CHECK(decode_only >= 4);
        CHECK(prompt_only >= 2);
        CHECK(mixed >= 4);
        CHECK(deep > 0);  // deep in the context too, not only near its start
    }
    // The default model's shapes reach its widest batch and largest chunk.
    bool widest = false, largest = false;
    for (const StepShape& s : calibration_shapes(Config{})) {
        widest = widest || s.batch == kMostCalibratedBatch;
        largest = largest || s.chunk == kLargestCalibratedChunk;
    }
    CHECK(widest);
    CHECK(largest);
}

TEST_CASE("the fit recovers known prices exactly from points the formula made") {
    const std::array<double, 5> k = {7.5e-4, 9.25e-5, 4.0e-5, 2.0e-7, 9.0e-8};
    std::vector<std::array<double, 5>> features;
    std::vector<double> seconds;
    for (const StepShape& s : calibration_shapes(Config{})) {
        StepWork w;
        for (int b = 0; b < s.batch; ++b) w.add(s.context, 1);
        if (s.chunk > 0) w.add(s.first, s.chunk);
        features.push_back({1.0, w.rows, w.sequences, w.pairs, w.positions});
        seconds.push_back(k[0] + k[1] * w.rows + k[2] * w.sequences + k[3] * w.pairs +
                          k[4] * w.positions);
    }
    std::vector<double> fitted(seconds.size());
    const std::array<double, 5> got = fit_nonnegative<5>(features, seconds, fitted);
    for (std::size_t j = 0; j < 5; ++j) CHECK(got[j] == doctest::Approx(k[j]).epsilon(1e-9));
    for (std::size_t i = 0; i < seconds.size(); ++i)
        CHECK(fitted[i] == doctest::Approx(seconds[i]).epsilon(1e-9));
}

TEST_CASE("the fit never prices work below zero") {
    // Points whose unconstrained best fit has a negative price per pair.
    std::vector<std::array<double, 5>> features;
    std::vector<double> seconds;
    for (double rows : {1.0, 2.0, 4.0, 8.0}) {
        const double pairs = 100 * rows * rows;
        features.push_back({1.0, rows, 1.0, pairs, rows});
        seconds.push_back(1e-4 + 1e-3 * rows - 1e-7 * pairs);
    }
    std::vector<double> fitted(seconds.size());
    for (double k : fit_nonnegative<5>(features, seconds, fitted)) CHECK(k >= 0);
    for (std::size_t i = 0; i < seconds.size(); ++i)
        CHECK(std::fabs(fitted[i] / seconds[i] - 1) < 0.5);
}

TEST_CASE("the prices saved for this machine come back exactly and only for it and its model") {
    const test::TempDir dir;
    const std::string folder = dir.file("calibration");
    const Config c = test::tiny_config();
    const StepCalibration measured = machine_step_cost(c, 3, false, folder);
    CHECK(!measured.reused);
    REQUIRE(!measured.path.empty());
    REQUIRE(std::filesystem::is_regular_file(measured.path));
    CHECK(measured.probes.size() == calibration_shapes(c).size());
    for (double k : {measured.cost.fixed, measured.cost.per_row, measured.cost.per_sequence,
                     measured.cost.per_pair, measured.cost.per_position})
        CHECK((std::isfinite(k) && k >= 0));
    CHECK(measured.cost.prefill_seconds(10) > 0);

    // Read back, to the last bit.
    const StepCalibration reused = machine_step_cost(c, 3, false, folder);
    CHECK(reused.reused);
    CHECK(reused.path == measured.path);
    CHECK(reused.cost.fixed == measured.cost.fixed);
    CHECK(reused.cost.per_row == measured.cost.per_row);
    CHECK(reused.cost.per_sequence == measured.cost.per_sequence);
    CHECK(reused.cost.per_pair == measured.cost.per_pair);
    CHECK(reused.cost.per_position == measured.cost.per_position);
    CHECK(reused.cost.fit_error == measured.cost.fit_error);
    REQUIRE(reused.probes.size() == measured.probes.size());
    for (std::size_t i = 0; i < reused.probes.size(); ++i) {
        CHECK(reused.probes[i].what == measured.probes[i].what);
        CHECK(reused.probes[i].seconds == measured.probes[i].seconds);
    }
    CHECK(reused.cost.source.find("reused from " + measured.path) != std::string::npos);

    // --calibrate measures again, and saves over it.
    CHECK(!machine_step_cost(c, 3, true, folder).reused);
    CHECK(machine_step_cost(c, 3, false, folder).reused);

    // A file from another machine (or another build) is not this machine's.
    const std::string saved = read_file(measured.path, "", 1 << 20);
    REQUIRE(saved.rfind("machine ", 0) == 0);
    write_file(measured.path, "machine another CPU, " + saved.substr(8));
    const StepCalibration again = machine_step_cost(c, 3, false, folder);
    CHECK(!again.reused);  // measured again, and saved
    CHECK(again.cost.source.find("not used: measured on another machine or build") !=
          std::string::npos);
    CHECK(machine_step_cost(c, 3, false, folder).reused);

    // Another model's prices under this model's name are not this model's.
    Config other = c;
    other.n_layers = 3;
    const StepCalibration theirs = machine_step_cost(other, 3, false, folder);
    CHECK(!theirs.reused);
    REQUIRE(theirs.path != measured.path);
    write_file(measured.path, read_file(theirs.path, "", 1 << 20));
    CHECK(!machine_step_cost(c, 3, false, folder).reused);

    // A broken file is measured over; no folder saves nothing.
    write_file(measured.path, "machine ");
    CHECK(!machine_step_cost(c, 3, false, folder).reused);
    const StepCalibration unsaved = machine_step_cost(c, 3, false, "");
    CHECK(!unsaved.reused);
    CHECK(unsaved.path.empty());
}

TEST_CASE("a stale saved price file is replaced within a chapter's run of files") {
    const test::TempDir dir;
    const std::string folder = dir.file("calibration");
    const Config c = test::tiny_config();
    const StepCalibration first = machine_step_cost(c, 3, false, folder);
    REQUIRE(!first.path.empty());
    const std::string stale = read_file(first.path, "", 1 << 20);
    write_file(first.path, "machine another CPU, " + stale.substr(8));
    {
        RunFiles run;  // as run_chapter opens one: an input may not be replaced
        const StepCalibration again = machine_step_cost(c, 3, false, folder);
        CHECK(!again.reused);
        CHECK(again.cost.source.find("not saved") == std::string::npos);
        run.commit();
    }
    CHECK(machine_step_cost(c, 3, false, folder).reused);
}

namespace {

// `text` with the line that starts with `key` (and a space) put as `line`.
std::string with_line(const std::string& text, const std::string& key, const std::string& line) {
    const std::size_t at = text.find("\n" + key + " ") + 1;
    REQUIRE(at != 0);
    return text.substr(0, at) + line + text.substr(text.find('\n', at));
}

}  // namespace

// Prices read back are checked for sense before they are used: a price that
// is not a number, not finite, below zero, or a thousand-fold off this
// machine's time for a step now is measured again, and the run says why; a
// file that is no regular file, or a huge one, is refused unread (no hang).
TEST_CASE("saved prices that make no sense are measured again and the run says why") {
    const test::TempDir dir;
    const std::string folder = dir.file("calibration");
    const Config c = test::tiny_config();
    const StepCalibration first = machine_step_cost(c, 3, false, folder);
    const std::string good = read_file(first.path, "", 1 << 20);
    const std::string prices = "prices 1e-05 1e-06 1e-06 1e-08 1e-08";
    REQUIRE(machine_step_cost(c, 3, false, folder).reused);
    struct Damage {
        std::string what, text, said;
    };
    const std::vector<Damage> damages = {
        {"a price of infinity", with_line(good, "prices", "prices 1e999 0 0 0 0"), "not finite"},
        {"a price not a number", with_line(good, "prices", "prices nan 0 0 0 0"), "not finite"},
        {"a price below zero", with_line(good, "prices", "prices -1 0 0 0 0"), "below zero"},
        {"no prices", with_line(good, "prices", "fit_error 0"), "missing"},
        {"a fit error of infinity", with_line(good, "fit_error", "fit_error inf"), "not finite"},
        {"prices 1e300 s a row", with_line(good, "prices", "prices 0 1e300 0 0 0"), "now"},
        {"prices a million times too small",
         with_line(good, "prices", "prices 1e-12 1e-12 1e-12 1e-15 1e-15"), "now"},
        {"an empty file", "", "another machine"},
        {"garbage", std::string("\x7f\x45\x4c\x46\0\0\xff", 7), "another machine"},
    };
    for (const Damage& d : damages) {
        CAPTURE(d.what);
        write_file(first.path, d.text);
        const StepCalibration cal = machine_step_cost(c, 3, false, folder);
        CHECK_FALSE(cal.reused);
        CHECK(cal.cost.source.find("the saved prices were not used: ") != std::string::npos);
        CHECK(cal.cost.source.find(d.said) != std::string::npos);
        for (double k : {cal.cost.fixed, cal.cost.per_row, cal.cost.per_sequence, cal.cost.per_pair,
                         cal.cost.per_position})
            CHECK((std::isfinite(k) && k >= 0 && k < 1));
        CHECK(machine_step_cost(c, 3, false, folder).reused);  // saved over the damage
    }
    // Not a regular file, or over a megabyte: refused before it is read.
    std::filesystem::remove(first.path);
    REQUIRE(mkfifo(first.path.c_str(), 0600) == 0);
    const StepCalibration fifo = machine_step_cost(c, 3, false, folder);
    CHECK_FALSE(fifo.reused);
    CHECK(fifo.cost.source.find("a FIFO (named pipe), not a regular file") != std::string::npos);
    CHECK(fifo.cost.source.find("not saved") != std::string::npos);
    std::filesystem::remove(first.path);
    std::filesystem::create_directory(first.path);
    CHECK(machine_step_cost(c, 3, false, folder).cost.source.find("a folder, not a regular file") !=
          std::string::npos);
    std::filesystem::remove(first.path);
    write_file(first.path, good);
    std::filesystem::resize_file(first.path, 2 << 20);
    const StepCalibration huge = machine_step_cost(c, 3, false, folder);
    CHECK(huge.cost.source.find("more than the 1048576 this reader takes") != std::string::npos);
    CHECK(machine_step_cost(c, 3, false, folder).reused);
}

// Two runs that find no prices at once: the second waits for the first
// (a lock on the folder), then reuses what it saved, so that both report
// the prices the file holds.
TEST_CASE("two runs calibrating at once report the prices the file holds") {
    const test::TempDir dir;
    const std::string folder = dir.file("calibration");
    const Config c = test::tiny_config();
    std::vector<pid_t> children;
    for (int k = 0; k < 2; ++k) {
        std::fflush(nullptr);
        const pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            const StepCalibration cal = machine_step_cost(c, 3, false, folder);
            char text[128];
            std::snprintf(text, sizeof text, "%.17g %.17g %.17g", cal.cost.fixed, cal.cost.per_row,
                          cal.cost.per_pair);
            write_file(dir.file("reported-" + std::to_string(k)), text);
            _exit(0);
        }
        children.push_back(pid);
    }
    for (const pid_t pid : children) {
        int status = 0;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        REQUIRE(WIFEXITED(status));
    }
    // What the folder holds, as a third run reads it.
    const StepCalibration held = machine_step_cost(c, 3, false, folder);
    REQUIRE(held.reused);
    char text[128];
    std::snprintf(text, sizeof text, "%.17g %.17g %.17g", held.cost.fixed, held.cost.per_row,
                  held.cost.per_pair);
    CHECK(read_file(dir.file("reported-0"), "", 1000) == text);
    CHECK(read_file(dir.file("reported-1"), "", 1000) == text);
}
