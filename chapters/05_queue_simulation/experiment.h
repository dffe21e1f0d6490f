// Chapter 05's experiment: its parameters, their check, and the run.
//
// The parameters are public members with their defaults; add_flags makes
// each one a flag, check() turns every bad value into one error naming the
// flag and the value, and run() draws the queue, prices the work (measured,
// counted or loaded), replays the queue under the six policies, and, when
// asked, sweeps the arrival rate and validates against the real engine.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../../common/core/config.h"
#include "../../common/core/transformer.h"
#include "../../common/kit/answer_timing.h"  // PassesShown
#include "../../common/kit/files.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/model_flags.h"
#include "../../common/kit/program.h"
#include "../../common/kit/report.h"
#include "../../common/kit/timing.h"
#include "../../common/lab/calibration.h"
#include "../../common/lab/rate_sweep.h"
#include "../../common/lab/validation.h"
#include "../../common/lab/vllm_workload.h"
#include "../../common/serving/cost_model.h"
#include "../../common/serving/memory_budget.h"
#include "../../common/serving/metrics.h"
#include "../../common/serving/scheduler.h"
#include "../../common/serving/workload.h"
#include "timeline_plot.h"

namespace kv::ch05 {

// Everything one run found: what the report shows, as text and as JSON.
struct Results {
    Config config;
    WorkloadOptions work;
    std::vector<Request> queue;  // the requests, in arrival order
    int batch = 0;
    MemoryBudget budget;
    Concurrency fit;
    CostModel cost;
    std::optional<Calibration> calibration;  // when the cost model was measured now
    std::vector<Policy> policies;
    std::vector<Summary> summaries;          // (policies)
    std::vector<std::vector<double>> ttfts;  // (policies, requests) sorted times to first token
    std::vector<PolicyTimeline> timeline;    // (2) the first requests, static then continuous
    double simulation_seconds = 0;           // wall time to simulate every policy
    std::optional<RateSweep> sweep;          // with --rate
    std::vector<ValidationRow> validation;   // the real engine against the simulator
    int validation_batch = 0;                // the cached policies' batch in the validation
    std::string saved_workload;              // with --save-workload: the file written
};

// ------------------------------------------------------ the cost model file

// The cost model's ten numbers: their name in the file, their key in the
// JSON, where they live, and whether they are a scale. The file, the loader
// and the JSON read this list.
struct CostNumber {
    const char* name;
    const char* json_key;
    double CostModel::*value;
    bool is_scale = false;  // multiplies a kind of step's time: 0 would make those steps free
};
inline constexpr CostNumber kCostNumbers[] = {
    {"pass_fixed", "pass_fixed_s", &CostModel::pass_fixed},
    {"pass_per_token", "pass_per_token_s", &CostModel::pass_per_token},
    {"pass_per_token_sq", "pass_per_token_sq_s", &CostModel::pass_per_token_sq},
    {"step_fixed", "step_fixed_s", &CostModel::step_fixed},
    {"step_per_sequence", "step_per_sequence_s", &CostModel::step_per_sequence},
    {"step_per_context", "step_per_context_s", &CostModel::step_per_context},
    {"fit_error", "max_fit_error", &CostModel::fit_error},
    {"prefill_scale", "prefill_scale", &CostModel::prefill_scale, true},
    {"single_step_scale", "single_step_scale", &CostModel::single_step_scale, true},
    {"batch_step_scale", "batch_step_scale", &CostModel::batch_step_scale, true},
};
// The largest number the file may give (a million seconds, or a scale of a million).
inline constexpr double kLargestCostNumber = 1e6;

inline void save_cost_model(const CostModel& m, const std::string& path) {
    std::ostringstream out;
    out << "# chapter 05 cost model: pass = a + b rows + c sum(len^2); decode = d + e B + f "
           "sum(context); each kind of step with the cache times its scale\n"
        << "model " << m.model << "\n"
        << "source " << m.source << "\n";
    for (const CostNumber& n : kCostNumbers)
        out << n.name << " " << json_number(m.*n.value) << "\n";
    try {
        write_file(path, out.str(), "--save-calibration");
    } catch (const FileError& e) {
        throw UsageError(e.what());
    }
}

// Reads a file written by save_cost_model for the model `config`. Anything
// wrong is a UsageError naming the flag: not a regular file or larger than
// 1 MiB (kit/files.h), a line it does not know, a key given twice or not at
// all, a number that is not a non-negative decimal up to 1e6 (a scale must
// be above 0), another model. Windows line endings (\r\n) are read as \n.
inline CostModel load_cost_model(const std::string& path, const Config& config) {
    auto bad = [&](const std::string& why) {
        return UsageError(file_label("--calibration", path) + ": " + why);
    };
    std::string text;
    try {
        text = read_file(path, "--calibration", 1 << 20);
    } catch (const FileError& e) {
        throw UsageError(e.what());
    }
    CostModel m;
    std::map<std::string, int> seen;  // key -> the line it was on
    std::istringstream lines(text);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
        if (!line.empty() && line.back() == '\r') line.pop_back();  // \r\n line endings
        if (line.empty() || line[0] == '#') continue;
        const std::size_t space = line.find(' ');
        const std::string key = line.substr(0, space);
        const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
        double* field = nullptr;
        bool is_scale = false;
        for (const CostNumber& n : kCostNumbers)
            if (key == n.name) {
                field = &(m.*n.value);
                is_scale = n.is_scale;
            }
        if (!field && key != "model" && key != "source")
            throw bad("unknown line " + std::to_string(number) + " '" + visible(line) + "'");
        if (const auto [at, first] = seen.emplace(key, number); !first)
            throw bad("'" + visible(key) + "' is given twice, on lines " +
                      std::to_string(at->second) + " and " + std::to_string(number));
        if (key == "model") {
            m.model = value;
        } else if (key == "source") {
            m.source = value;
        } else {
            *field = is_decimal_number(value) ? std::strtod(value.c_str(), nullptr) : -1;
            const bool low = is_scale ? !(*field > 0) : !(*field >= 0);
            if (low || !(*field <= kLargestCostNumber))
                throw bad("'" + key +
                          (is_scale ? "' must be a decimal number above 0 (a scale of 0 makes "
                                      "its steps free) and at most 1e6, got '"
                                    : "' must be a non-negative decimal number of seconds, at "
                                      "most 1e6, got '") +
                          visible(value) + "'");
        }
    }
    for (const char* key : {"model", "source"})
        if (!seen.count(key)) throw bad("it has no '" + std::string(key) + "' line");
    for (const CostNumber& n : kCostNumbers)
        if (!seen.count(n.name)) throw bad("it has no '" + std::string(n.name) + "' line");
    if (!(m.prefill_seconds(1) > 0) || !(m.decode_seconds(1, 0) > 0))
        throw bad("its passes and decode steps must take some time");
    if (m.model != config.describe())
        throw bad("it was measured for the model '" + visible(m.model) + "', not '" +
                  config.describe() + "'");
    m.source = "loaded from " + visible(path) + " (" + visible(m.source) + ")";
    return m;
}

// Writes `text` to `path` whole or not at all: into a file beside it, then
// renamed over it, so a reader never finds half a file (the kit's
// OutputFile). Any failure is a UsageError naming the flag and the path.
inline void save_atomically(const std::string& path, const std::string& text,
                            const std::string& flag) {
    try {
        OutputFile out(path, flag);
        out.write(text);
        out.commit();
    } catch (const FileError& e) {
        throw UsageError(e.what());
    }
}

// ---------------------------------------- a real queue's run, shown as it goes

// Where a run of a queue on the real engine shows itself: the line, and
// this run's place among the line's runs.
struct RunShown {
    Progress& progress;
    long run, runs;  // "run 3/6"
};

// Around the executor of a run on the real engine (chapters 07 to 09): each
// request that leaves answered is counted, and when the line is due it says
// "run 3/6 120 of 1,000 requests answered". A real queue of many requests
// takes minutes; off a terminal nothing is shown and the count costs nothing.
class AnswersShown : public Executor {
  public:
    AnswersShown(Executor& inner, const RunShown& shown, std::size_t requests)
        : inner_(inner),
          shown_(shown),
          of_(" of " + with_commas(std::uint64_t(requests)) + " requests answered") {}
    double run(const StepPlan& plan) override { return inner_.run(plan); }
    void release(const Request& r) override {
        inner_.release(r);
        if (r.status != RequestStatus::finished) return;
        ++answered_;
        if (shown_.progress.due())
            shown_.progress.update(shown_.run, shown_.runs,
                                   with_commas(std::uint64_t(answered_)) + of_);
    }
    long answered() const { return answered_; }

  private:
    Executor& inner_;
    RunShown shown_;
    std::string of_;
    long answered_ = 0;
};

// ---------------------------------------------------------- the experiment

// The value a string flag keeps until it is given: "not given" and "given
// an empty name" are then two different things.
inline const std::string kNotGiven = "\x1f(not given)";

// Requests the validation runs by default: enough for the batch to fill,
// queue, join and leave as in the full run.
inline constexpr int kValidatedRequests = 128;
// The short real queue that sets the level of each kind of step: this many
// requests by continuous batching, and the first kLevelingSerial serially.
inline constexpr int kLevelingRequests = 48, kLevelingSerial = 16;

struct Experiment {
    Config model;                         // the model's shape (--layers, --dim, ...)
    std::uint64_t seed = 1;               // seed of the weights, the prompts and the workload
    WorkloadOptions workload;             // 1,000 requests at time 0 (workload.h)
    int batch = 32;                       // most requests in a batch; memory may allow fewer
    std::uint64_t kv_budget_mib = 16;     // KV cache memory: 21 to 24 requests at their longest
    std::string reserve = "full";         // charge the longest context ("full") or what is "held"
    std::string cost_model = "measured";  // time the real engine, or count operations ("analytic")
    std::string calibration_file;         // reuse a cost model saved by save_calibration
    std::string save_calibration;         // write the cost model to this file
    int validate = -1;          // requests run for real with the cache; -1: 128 unless analytic
    int validate_no_cache = 0;  // requests run for real without the cache (slow); 0: none
    std::string save_workload = kNotGiven;  // write the queue for vllm bench serve (a .jsonl)
    // Longest context the measured calibration times; 0: the workload's
    // longest. A later chapter whose prompts are longer (chapter 08's shared
    // system prompt) sets it, and no flag does.
    int calibration_context = 0;

    void add_flags(Flags& flags) {
        add_model_flags(flags, model, seed);
        WorkloadOptions& w = workload;
        flags.add("requests", w.requests, 1, 10'000'000, "requests in the queue");
        flags.add("prompt-min", w.prompt_min, 1, 1 << 20, "shortest prompt (uniform lengths)");
        flags.add("prompt-max", w.prompt_max, 1, 1 << 20, "longest prompt");
        flags.add("answer-len", w.answer_len, 1, 1 << 20, "mean answer length before the cap");
        flags.add("answer-max", w.answer_max, 1, 1 << 20, "answer cap (max_new_tokens)");
        flags.add_choice("answer-dist", w.answer_dist, {"geometric", "uniform"},
                         "geometric (many short, a few long) or uniform in 1..2 x mean - 1");
        flags.add("rate", w.rate, 0.0, 1e9, "Poisson arrivals per second; 0: all at time 0");
        flags.add("batch", batch, 1, 4096, "most requests running at once");
        flags.add("kv-budget-mib", kv_budget_mib, 1, 1 << 30, "memory for all KV caches, MiB");
        flags.add_choice("reserve", reserve, {"full", "held"},
                         "charge each request its longest context, or what its cache holds");
        flags.add_choice("cost-model", cost_model, {"measured", "analytic"},
                         "time the real engine, or count operations (exact, for tests)");
        flags.add("calibration", calibration_file,
                  "reuse a cost model saved by --save-calibration");
        flags.add("save-calibration", save_calibration, "write the cost model to this file");
        save_workload.clear();  // --help shows no default
        flags.add("save-workload", save_workload,
                  "write the queue as JSON Lines for vLLM's `vllm bench serve --dataset-name "
                  "custom` (a .jsonl file)");
        save_workload = kNotGiven;  // tells "not given" from an empty name (check)
        flags.add("validate", validate, -1, 4096,
                  "run this many requests for real under the cached policies at --batch and "
                  "compare; -1: 128, or none with --cost-model analytic");
        flags.add("validate-no-cache", validate_no_cache, 0, 256,
                  "run this many requests for real under the policies without the cache (batch "
                  "a quarter of them; 8 take about 20 s)");
    }

    // Every value checked once, in this order; the first bad one is a
    // UsageError naming its flag and value.
    void check() const {
        auto need = [](bool ok, const std::string& message) {
            if (!ok) throw UsageError(message);
        };
        need(calibration_file.empty() || cost_model != "analytic",
             "--calibration " + visible(calibration_file) +
                 " and --cost-model analytic exclude each other");
        if (measures_calibration()) {
            // What the calibration holds at once (its probes' caches and its
            // widest pass), at the longest context the model allows.
            const CalibrationShapes probes = calibration_shapes(model.max_seq, batch);
            check_model(model, probes.cache_positions(), probes.widest_pass_rows());
        } else {
            // No probe runs (the cost model is counted or loaded): the shape,
            // and room for the weights a validation would load.
            check_model(model, 0);
        }
        const WorkloadOptions& w = workload;
        // The flags' ranges already say 1.. for --requests and --batch; a
        // program that sets the members itself (chapters 07 and 08) is checked here.
        need(w.requests >= 1, "--requests must be at least 1, got " + std::to_string(w.requests));
        need(w.prompt_min >= 1,
             "--prompt-min must be at least 1, got " + std::to_string(w.prompt_min));
        need(w.prompt_max >= w.prompt_min, "--prompt-max " + std::to_string(w.prompt_max) +
                                               " is below --prompt-min " +
                                               std::to_string(w.prompt_min));
        need(w.answer_len >= 1,
             "--answer-len must be at least 1, got " + std::to_string(w.answer_len));
        need(w.answer_max >= w.answer_len, "--answer-max " + std::to_string(w.answer_max) +
                                               " is below the mean --answer-len " +
                                               std::to_string(w.answer_len));
        need(w.answer_dist == "geometric" || w.answer_dist == "uniform",
             "--answer-dist must be geometric or uniform, got " + w.answer_dist);
        if (w.answer_dist == "uniform")
            need(2 * w.answer_len - 1 <= w.answer_max,
                 "--answer-dist uniform draws from 1 to 2 x --answer-len - 1 = " +
                     std::to_string(2 * w.answer_len - 1) + ", above --answer-max " +
                     std::to_string(w.answer_max));
        need(w.rate >= 0, "--rate must not be negative, got " + json_number(w.rate));
        // The cache holds prompt + answer - 1 positions (the last answer token
        // is produced, never fed back), so that is what must fit in the context.
        need(w.prompt_max + w.answer_max - 1 <= model.max_seq,
             "--prompt-max " + std::to_string(w.prompt_max) + " + --answer-max " +
                 std::to_string(w.answer_max) + " - 1 exceeds the model's --max-seq " +
                 std::to_string(model.max_seq));
        // A request whose longest context cannot fit even alone would wait
        // forever: refuse the whole run at the door.
        const MemoryBudget b = budget();
        const std::vector<Request> queue = make_workload(workload_with_seed());
        // A rate so small that the clock, a double in seconds, could no
        // longer tell one step from the next: beyond 2^52 microseconds it
        // cannot keep whole microseconds.
        const double last = queue.back().arrival_s;
        need(std::isfinite(last) && last < 0x1p52 * 1e-6,
             "--rate " + json_number(w.rate) + " spreads " + std::to_string(w.requests) +
                 " arrivals over " +
                 (std::isfinite(last) ? json_number(last) + " s" : "more than 1e308 s") +
                 ": beyond 4.5e9 s the clock cannot keep microseconds");
        if (const Request* r = first_that_never_fits(queue, b))
            throw UsageError("--kv-budget-mib " + std::to_string(b.bytes >> 20) + " holds " +
                             with_commas(b.tokens) + " positions of KV cache (" +
                             format_bytes(b.bytes_per_token) + " each), but request " +
                             std::to_string(r->id) + " may need " +
                             with_commas(longest_context(*r)) + " (prompt " +
                             std::to_string(r->prompt_len) + " + answer cap " +
                             std::to_string(r->answer_cap) + " - 1)");
        need(batch >= 1, "--batch must be at least 1, got " + std::to_string(batch));
        need(!save_workload.empty(), "--save-workload needs a file name, got an empty one");
        const std::string suffix = ".jsonl";  // vLLM's CustomDataset reads no other name
        need(workload_path().empty() ||
                 (workload_path().size() > suffix.size() &&
                  workload_path().compare(workload_path().size() - suffix.size(), suffix.size(),
                                          suffix) == 0),
             "--save-workload " + visible(save_workload) +
                 ": vllm bench serve reads a custom dataset only from a name ending in .jsonl");
    }

    // The whole run, after check().
    Results run() const {
        Results results;
        results.config = model;
        results.work = workload_with_seed();
        results.batch = batch;
        results.queue = make_workload(results.work);
        if (!workload_path().empty()) {  // first, so that a bad path stops the run at once
            save_atomically(workload_path(), workload_jsonl(results.queue), "--save-workload");
            results.saved_workload = workload_path();
        }
        results.budget = budget();
        results.fit = concurrency(results.queue, results.budget);
        results.policies = book_policies(batch);
        std::optional<Transformer> engine;  // built only to measure or to validate
        std::vector<RealQueue> validated;   // the validation's queues on the real engine
        price_the_work(results, engine, validated);
        simulate_every_policy(results);
        results.timeline = batching_timelines(results.queue, results.budget, model);
        // With a rate: the same requests (every rate above 0 draws the same
        // lengths) arriving at rates around capacity.
        if (workload.rate > 0) {
            Progress progress("sweeping the arrival rate, simulation");
            results.sweep = sweep_rates(
                results.work,
                {results.policies[kSerialCache], results.policies[kStaticCache],
                 results.policies[kContinuousCache]},
                results.budget, results.cost, [&](int done, int of) { progress.update(done, of); });
        }
        validate_on_the_engine(results, engine, validated);
        return results;
    }

  private:
    // What each piece of work costs: loaded, counted, or measured now.
    // Measured now, the real queues run between the calibration's rounds:
    // the short queue that sets each kind of step's level, and the
    // validation's (real_queue.h).
    void price_the_work(Results& results, std::optional<Transformer>& engine,
                        std::vector<RealQueue>& validated) const {
        if (!calibration_file.empty()) {
            results.cost = load_cost_model(calibration_file, model);
        } else if (!measures_calibration()) {
            results.cost = analytic_cost_model(model);
        } else {
            engine.emplace(model, seed);
            std::vector<RealQueue> leveling = leveling_queues(results.budget);
            validated = validation_queues(results);
            Progress progress("calibrating the cost model and running the real queues, round");
            const PassesShown passes(*engine, progress);  // a long pass shows its layers
            const auto start = Clock::now();
            results.calibration = calibrate(
                *engine,
                calibration_context > 0 ? calibration_context
                                        : workload.prompt_max + workload.answer_max - 1,
                batch, [&](int done, int of) { progress.update(done, of); },
                [&](int round, int rounds) {
                    for (int run = real_runs_after(round, rounds); run > 0; --run)
                        for (RealQueue* q : leveling_beside(leveling, validated))
                            q->run_once(*engine, results.budget, seed);
                });
            level_on_queues(leveling, results.budget, *results.calibration);
            results.calibration->seconds = seconds_since(start);
            results.cost = results.calibration->cost;
        }
        if (!save_calibration.empty()) save_cost_model(results.cost, save_calibration);
    }

    // The queue's own level of each kind of step (calibration.h): a short
    // real queue, another sample of the same workload (seed + 1), so that
    // the validation's requests are not the ones the model was set on.
    std::vector<RealQueue> leveling_queues(const MemoryBudget& budget) const {
        WorkloadOptions w = workload_with_seed();
        w.seed = seed + 1;
        w.rate = 0;
        w.requests = kLevelingRequests;
        const std::vector<Request> sample = make_workload(w);
        if (first_that_never_fits(sample, budget)) return {};  // keeps the scales at 1
        const std::vector<Policy> policies = book_policies(batch);
        std::vector<RealQueue> queues;
        queues.emplace_back(policies[kSerialCache],
                            std::vector<Request>(sample.begin(), sample.begin() + kLevelingSerial));
        queues.emplace_back(policies[kContinuousCache], sample);
        return queues;
    }

    // The simulator, telling every 4,096th request that leaves answered,
    // for the progress line. (The scheduler's event observer would tell it
    // too, but it describes every event, each decode step included: 11% more
    // instructions to simulate the queue, against 0.1% here.)
    class CountingAnswers : public SimulatedExecutor {
      public:
        CountingAnswers(const CostModel& cost, std::function<void(long)> every_4096th)
            : SimulatedExecutor(cost), every_4096th_(std::move(every_4096th)) {}
        void release(const Request& r) override {
            if (r.status == RequestStatus::finished && ++answered_ % 4096 == 0)
                every_4096th_(answered_);
        }

      private:
        std::function<void(long)> every_4096th_;
        long answered_ = 0;
    };

    // The simulation: every policy over the same queue.
    static void simulate_every_policy(Results& results) {
        const auto start = Clock::now();
        Progress progress("simulating the queue, policy");  // shown on a terminal after a second
        const long policies = long(results.policies.size());
        const std::string of = " of " + with_commas(results.queue.size()) + " requests answered";
        for (const Policy& p : results.policies) {
            const long policy = long(results.summaries.size()) + 1;
            progress.update(policy, policies);
            // Ten million requests take a minute a policy: the answered so far.
            CountingAnswers executor(results.cost, [&](long answered) {
                if (progress.due())
                    progress.update(policy, policies, with_commas(std::uint64_t(answered)) + of);
            });
            const Schedule s = run_schedule(results.queue, p, results.budget, executor);
            results.summaries.push_back(summarize(s));
            results.ttfts.push_back(sorted_ttfts(s));
        }
        results.simulation_seconds = seconds_since(start);
    }

    // The requests each validation runs: the first ones of the queue.
    int requests_to_validate() const {
        const int n = validate >= 0 ? validate : cost_model == "analytic" ? 0 : kValidatedRequests;
        return std::min(n, workload.requests);
    }

    // The first requests of the queue on the real engine too: the cached
    // policies at the chapter's batch size, the ones without the cache
    // (slow for real) on fewer requests in batches of a quarter of them.
    std::vector<RealQueue> validation_queues(const Results& results) const {
        std::vector<RealQueue> queues;
        auto run_on = [&](int requests, std::vector<Policy> policies) {
            WorkloadOptions few = results.work;
            few.requests = requests;
            const std::vector<Request> first = make_workload(few);
            for (const Policy& p : policies) queues.emplace_back(p, first);
        };
        const int cached = requests_to_validate();
        const int uncached = std::min(validate_no_cache, workload.requests);
        const std::vector<Policy> all = book_policies(batch);
        const std::vector<Policy> few = book_policies(validation_batch(uncached, batch));
        if (uncached > 0)
            run_on(uncached,
                   {few[kSerialNoCache], few[kSerialNoCache + 1], few[kSerialNoCache + 2]});
        if (cached > 0)
            run_on(cached, {all[kSerialCache], all[kStaticCache], all[kContinuousCache]});
        return queues;
    }

    // The validation's real queues against the simulator. Unless they ran
    // between the calibration's rounds, they run now, kRealRuns times each.
    void validate_on_the_engine(Results& results, std::optional<Transformer>& engine,
                                std::vector<RealQueue>& queues) const {
        if (!results.calibration) queues = validation_queues(results);
        if (queues.empty()) return;
        if (!results.calibration) {
            if (!engine) engine.emplace(model, seed);
            Progress progress("validating against the real engine");
            const PassesShown passes(*engine, progress);  // a long pass shows its layers
            for (std::size_t i = 0; i < queues.size(); ++i) {
                for (int run = 0; run < kRealRuns; ++run)
                    queues[i].run_once(*engine, results.budget, seed);
                progress.update(long(i + 1), long(queues.size()));
            }
        }
        results.validation_batch = batch;
        results.validation = compare_with_simulator(queues, results.budget, results.cost);
    }

    // Whether the cost model is measured now, by calibration probes on the engine.
    bool measures_calibration() const {
        return calibration_file.empty() && cost_model == "measured";
    }

    // The --save-workload file, or "" when none was asked for.
    std::string workload_path() const { return save_workload == kNotGiven ? "" : save_workload; }

    WorkloadOptions workload_with_seed() const {
        WorkloadOptions w = workload;
        w.seed = seed;
        return w;
    }
    MemoryBudget budget() const {
        return make_budget(
            model, kv_budget_mib,
            reserve == "full" ? Reservation::whole_context : Reservation::tokens_held);
    }
};

}  // namespace kv::ch05
