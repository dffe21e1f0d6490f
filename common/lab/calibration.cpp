#include "calibration.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "../core/kv_cache.h"
#include "../core/timing.h"
#include "../fast/kernel_plan.h"  // this_machine
#include "../kit/files.h"
#include "../kit/program.h"  // Progress
#include "../kit/report.h"   // Json
#include "../kit/saved_results.h"
#include "../lab/queue_flags.h"  // step_cost_json
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

// `path` as the reader would type it from where they ran the program
// (build/calibration/... from the book's folder), absolute from elsewhere.
std::string as_typed(const std::string& path) {
    std::error_code e;
    const std::string near = std::filesystem::proximate(path, e).string();
    return e || near.starts_with("..") ? path : near;
}

// The prices as every report writes them (step_cost_json), with what they
// were measured on and each step timed.
std::string saved_json(const StepCalibration& cal, const Config& c) {
    return step_cost_json(cal)
               .add("machine", machine_and_build())
               .add("model", c.describe())
               .add_each("probes", cal.probes,
                         [](const StepProbe& p) {
                             return Json()
                                 .add("what", p.what)
                                 .add("seconds", p.seconds)
                                 .add("fitted", p.fitted);
                         })
               .str() +
           "\n";
}

// The prices saved at `path` for this machine and model; false if there
// are none, or they are another machine's, build's or model's, or broken.
// The file (at most 1 MiB) is not read as one of the run's inputs (kit/files.h,
// RunFiles): a stale file is replaced in the same run, which a run may not do
// to its inputs.
bool read_saved(const std::string& path, const Config& c, StepCalibration& cal) {
    try {
        if (!std::filesystem::is_regular_file(path) || std::filesystem::file_size(path) > 1 << 20)
            return false;
        std::ostringstream text;
        text << std::ifstream(path, std::ios::binary).rdbuf();
        const SavedResults saved = SavedResults::parse(path, text.str());
        if (saved.text("machine") != machine_and_build() || saved.text("model") != c.describe())
            return false;
        StepCost& s = cal.cost;
        s.fixed = saved.non_negative_number("fixed_s");
        s.per_row = saved.non_negative_number("per_row_s");
        s.per_sequence = saved.non_negative_number("per_sequence_s");
        s.per_pair = saved.non_negative_number("per_pair_s");
        s.per_position = saved.non_negative_number("per_position_s");
        s.fit_error = saved.non_negative_number("max_fit_error");
        cal.seconds = saved.non_negative_number("calibration_seconds");
        for (const SavedResults& p : saved.rows("probes"))
            cal.probes.push_back(
                {p.text("what"), p.positive_number("seconds"), p.non_negative_number("fitted")});
        return s.prefill_seconds(1) > 0 && s.decode_seconds(1, 0) > 0;
    } catch (const std::exception&) {
        return false;  // measured again, and saved over it
    }
}

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
        folder.empty() ? "" : folder + "/step_cost-" + file_name_part(c.describe()) + ".json";
    StepCalibration cal;
    if (!again && !path.empty() && read_saved(path, c, cal)) {
        cal.reused = true;
        cal.path = path;
        cal.cost.source = "measured on this machine once, reused from " + as_typed(path);
        return cal;
    }
    Transformer model(c, seed);
    cal = calibrate(model, 3);
    if (!path.empty()) {
        cal.path = path;  // the file says where it is
        try {
            write_file(path, saved_json(cal, c), "calibration");
            cal.cost.source += ", saved in " + as_typed(path);
        } catch (const FileError&) {
            cal.path.clear();
            cal.cost.source += " (not saved: " + path + " could not be written)";
        }
    }
    return cal;
}

}  // namespace kv
