#include "calibration.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>

#include "../core/kv_cache.h"
#include "../core/timing.h"
#include "../fast/kernel_plan.h"  // this_machine
#include "../kit/files.h"
#include "../kit/program.h"  // Progress
#include "../kit/report.h"   // format_duration
#include "timed_step.h"

namespace kv {

// ------------------------------------------------------ the steps timed

std::vector<StepShape> calibration_shapes(const Config& c) {
    const int longest = c.max_seq - 1;  // the last position is never fed back
    std::vector<int> batches = {0, 1, 8, 32, kMostCalibratedBatch};
    std::vector<int> chunks = {0, 16, 64, kLargestCalibratedChunk};
    std::erase_if(chunks, [&](int n) { return n > longest; });
    std::vector<StepShape> shapes;
    for (int b : batches)
        for (int n : chunks) {
            if (b == 0 && n == 0) continue;
            for (bool deep : {false, true})  // near the start of the context, and deep in it
                shapes.push_back(
                    {b, b == 0 ? 0 : std::min(deep ? longest / 2 : 32, longest), n,
                     n == 0 || !deep ? 0 : std::max(0, std::min(longest - n, longest / 2))});
        }
    return shapes;
}

std::uint64_t calibration_positions(const Config& c) {
    std::uint64_t most = 1;
    for (const StepShape& s : calibration_shapes(c))
        most = std::max(most, std::uint64_t(s.batch) * std::uint64_t(s.context + 1) +
                                  std::uint64_t(s.first + s.chunk));
    return most;
}

namespace {

std::string describe(const StepShape& s) {
    return "decode " + std::to_string(s.batch) + " x " + std::to_string(s.context) + " + chunk " +
           std::to_string(s.chunk) + " after " + std::to_string(s.first);
}

StepWork work_of(const StepShape& s) {
    StepWork w;
    for (int b = 0; b < s.batch; ++b) w.add(s.context, 1);
    if (s.chunk > 0) w.add(s.first, s.chunk);
    return w;
}

// One step of `s` on fresh caches marked filled, run three times in a row,
// the faster of the last two kept: a queue runs its steps back to back,
// with the weights as warm as that leaves them, and a small step right
// after a long one runs slower for a step or two.
double time_once(Transformer& model, const StepShape& s) {
    const Config& c = model.config();
    std::vector<int> tokens(std::size_t(std::max(s.chunk, 1)));  // a row of n takes the first n
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = int(7 * i + 1) % c.vocab_size;
    std::vector<std::unique_ptr<KVCache>> caches;
    std::vector<int> bases;
    std::vector<SequenceInput> inputs;
    auto row = [&](int base, int n) {
        caches.push_back(std::make_unique<KVCache>(c, base + n));
        mark_filled(*caches.back(), base);
        bases.push_back(base);
        inputs.push_back({std::span<const int>(tokens).first(std::size_t(n)), caches.back().get()});
    };
    for (int b = 0; b < s.batch; ++b) row(s.context, 1);
    if (s.chunk > 0) row(s.first, s.chunk);
    double fastest = 1e300;
    for (int run = 0; run < 3; ++run) {
        const double took = timed_step(model, inputs, bases);
        if (run > 0) fastest = std::min(fastest, took);
    }
    return std::max(fastest, 1e-9);
}

// The saved file: a line per fact, "key value", numbers written to the
// last bit (%.17g), so that they come back exactly.
std::string saved_text(const StepCalibration& cal, const Config& c) {
    auto number = [](double v) {
        char text[32];
        std::snprintf(text, sizeof text, " %.17g", v);
        return std::string(text);
    };
    const StepCost& s = cal.cost;
    std::string text = "machine " + machine_and_build() + "\nmodel " + c.describe() + "\nprices" +
                       number(s.fixed) + number(s.per_row) + number(s.per_sequence) +
                       number(s.per_pair) + number(s.per_position) + "\nfit_error" +
                       number(s.fit_error) + "\nseconds" + number(cal.seconds) + "\n";
    for (const StepProbe& p : cal.probes)
        text += "probe" + number(p.seconds) + number(p.fitted) + " " + p.what + "\n";
    return text;
}

// A saved price more than this many times a step timed now, or less than
// its share, is not this machine's: a busy machine slows a step by less.
constexpr double kPlausible = 10;

// Why the prices saved at `path` are not the model `c`'s on this machine
// now, or "" when `cal` holds them: none saved; a file that is not a
// regular one, or over 1 MiB; another machine's, build's or model's; a
// number not finite or below zero; or a step priced more than kPlausible
// times off its time now (the smallest and the largest step calibrated,
// timed again: a quick probe of this machine).
std::string read_saved(const std::string& path, const Config& c, Transformer& model,
                       StepCalibration& cal) {
    std::string text;
    try {
        text = read_file(path, "", 1 << 20);
    } catch (const FileError& e) {
        return e.error_number == ENOENT ? "none saved" : e.what();
    }
    auto next = [](std::istream& in) {  // NaN where no number is
        double v = 0;
        return in >> v ? v : std::nan("");
    };
    StepCost& s = cal.cost;  // NaN until read
    s.fixed = s.per_row = s.per_sequence = s.per_pair = s.per_position = s.fit_error = cal.seconds =
        std::nan("");
    std::string machine, model_text;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream in(line);
        std::string key, rest;
        in >> key;
        if (key == "machine" || key == "model") std::getline(in >> std::ws, rest);
        if (key == "machine") machine = rest;
        if (key == "model") model_text = rest;
        if (key == "prices")
            for (double* price :
                 {&s.fixed, &s.per_row, &s.per_sequence, &s.per_pair, &s.per_position})
                *price = next(in);
        if (key == "fit_error") s.fit_error = next(in);
        if (key == "seconds") cal.seconds = next(in);
        if (key == "probe") {
            StepProbe& p = cal.probes.emplace_back();
            p.seconds = next(in);
            p.fitted = next(in);
            std::getline(in >> std::ws, p.what);
        }
    }
    if (machine != machine_and_build()) return "measured on another machine or build";
    if (model_text != c.describe()) return "measured for another model";
    std::vector<double> numbers = {s.fixed,        s.per_row,   s.per_sequence, s.per_pair,
                                   s.per_position, s.fit_error, cal.seconds};
    for (const StepProbe& p : cal.probes) numbers.insert(numbers.end(), {p.seconds, p.fitted});
    if (std::any_of(numbers.begin(), numbers.end(),
                    [](double v) { return !std::isfinite(v) || v < 0; }))
        return "a number that is missing, not finite or below zero";
    const std::vector<StepShape> shapes = calibration_shapes(c);
    for (const StepShape& shape : {shapes.front(), shapes.back()}) {
        const double now = time_once(model, shape), priced = s.seconds(work_of(shape));
        if (!(priced < kPlausible * now && priced * kPlausible > now))
            return "they price " + describe(shape) + " at " + format_duration(priced) +
                   ", which takes " + format_duration(now) + " now";
    }
    return "";
}

// While it lives, this process holds the lock on `folder` (flock): one run
// at a time reads, measures and saves prices there, so that a second run
// waits and then finds the first one's prices, and reports what the file holds.
class FolderLock {
  public:
    explicit FolderLock(const std::string& folder) {
        std::error_code error;
        if (folder.empty() || (std::filesystem::create_directories(folder, error), error)) return;
        fd_ = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd_ < 0 || ::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
        const Progress waiting("waiting for another run measuring this machine's step cost");
        while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) continue;
    }
    ~FolderLock() {
        if (fd_ >= 0) ::close(fd_);
    }
    FolderLock(const FolderLock&) = delete;
    FolderLock& operator=(const FolderLock&) = delete;

  private:
    int fd_ = -1;
};

// Shape after shape, round after round (round 0 warms up), keeping each
// shape's fastest: a burst of other work slows one run of many shapes, not
// every run of one.
StepCalibration calibrate(Transformer& model, int rounds) {
    const auto start = Clock::now();
    Progress progress("calibrating the step cost on this machine (once), round");
    const std::vector<StepShape> shapes = calibration_shapes(model.config());
    std::vector<double> fastest(shapes.size(), 1e300);
    for (int round = 0; round <= rounds; ++round) {
        for (std::size_t k = 0; k < shapes.size(); ++k) {
            const double took = time_once(model, shapes[k]);
            if (round > 0) fastest[k] = std::min(fastest[k], took);
        }
        progress.update(round, rounds);
    }
    StepCalibration cal;
    std::vector<std::array<double, 5>> features;
    for (std::size_t k = 0; k < shapes.size(); ++k) {
        const StepWork w = work_of(shapes[k]);
        features.push_back({1.0, w.rows, w.sequences, w.pairs, w.positions});
        cal.probes.push_back({describe(shapes[k]), fastest[k], 0});
    }
    std::vector<double> fitted(shapes.size());
    const std::array<double, 5> k = fit_nonnegative<5>(features, fastest, fitted);
    cal.cost = {k[0], k[1], k[2], k[3], k[4], 0, "measured on this machine now"};
    for (std::size_t i = 0; i < cal.probes.size(); ++i) {
        cal.probes[i].fitted = fitted[i];
        cal.cost.fit_error = std::max(cal.cost.fit_error, std::fabs(fitted[i] / fastest[i] - 1));
    }
    cal.seconds = seconds_since(start);
    return cal;
}

}  // namespace

// --------------------------------------------------- once per machine

std::string machine_and_build() {
    const MachineIdentity m = this_machine();
    return m.cpu + "; " + m.build;
}

StepCalibration machine_step_cost(const Config& c, std::uint64_t seed, bool again) {
    const std::string program = program_folder();
    return machine_step_cost(c, seed, again, program.empty() ? "" : program + "/calibration");
}

StepCalibration machine_step_cost(const Config& c, std::uint64_t seed, bool again,
                                  const std::string& folder) {
    const std::string path =
        folder.empty() ? "" : folder + "/step_cost-" + file_name_part(c.describe()) + ".txt";
    const FolderLock lock(folder);
    Transformer model(c, seed);
    StepCalibration cal;
    const std::string why = again || path.empty() ? "" : read_saved(path, c, model, cal);
    if (!again && !path.empty() && why.empty()) {
        cal.reused = true;
        cal.path = path;
        cal.cost.source = "measured on this machine once, reused from " + as_typed(path);
        return cal;
    }
    cal = calibrate(model, 3);
    if (!why.empty() && why != "none saved")
        cal.cost.source += " (the saved prices were not used: " + why + ")";
    if (!path.empty()) {
        cal.path = path;  // the file says where it is
        try {
            write_state_file(path, saved_text(cal, c), "calibration");
            cal.cost.source += ", saved in " + as_typed(path);
        } catch (const FileError& e) {
            cal.path.clear();
            cal.cost.source += " (not saved: " + std::string(e.what()) + ")";
        }
    }
    return cal;
}

}  // namespace kv
