// Chapter 05: a queue of 1,000 requests. Measures what the engine's work
// costs, then replays the queue under six policies (serial, static and
// continuous batching, each without and with the KV cache) and reports
// what the people in the queue experienced.
#include <iostream>
#include <optional>

#include "../../common/model_flags.h"
#include "../../common/output.h"
#include "../../common/program.h"
#include "calibration.h"
#include "memory_budget.h"
#include "queue_report.h"
#include "rate_sweep.h"
#include "scheduler.h"
#include "validation.h"
#include "workload.h"

using namespace kv;

int main(int argc, char** argv) {
    return run_program("05_queue_simulation", [&] {
        Config config;                  // the book's demo model (common/config.h)
        std::uint64_t seed = 1;         // seed of the weights, the prompts and the workload
        WorkloadOptions work;           // 1,000 requests at time 0 (workload.h)
        int batch = 32;                 // most requests in a batch; memory may allow fewer
        std::uint64_t budget_mib = 16;  // KV cache budget: 21 to 24 requests at their longest
        std::string reserve = "full", cost_choice = "measured", calibration_file, save_calibration;
        int validate_count = 0;  // requests to run through the real engine; 0: none
        OutputOptions out;

        Flags flags(
            "05_queue_simulation",
            "A queue of requests, served with and without the cache, serially and in batches.");
        add_model_flags(flags, config, seed);
        flags.add("requests", work.requests, 0, 10'000'000, "requests in the queue");
        flags.add("prompt-min", work.prompt_min, 1, 1 << 20, "shortest prompt (uniform lengths)");
        flags.add("prompt-max", work.prompt_max, 1, 1 << 20, "longest prompt");
        flags.add("answer-len", work.answer_len, 1, 1 << 20, "mean answer length before the cap");
        flags.add("answer-max", work.answer_max, 1, 1 << 20, "answer cap (max_new_tokens)");
        flags.add_choice("answer-dist", work.answer_dist, {"geometric", "uniform"},
                         "answer lengths: geometric (many short, few long) or uniform 1..2 mean-1");
        flags.add("rate", work.rate, 0.0, 1e9, "Poisson arrivals per second; 0: all at time 0");
        flags.add("batch", batch, 0, 4096, "most requests running at once");
        flags.add("kv-budget-mib", budget_mib, 1, 1 << 30, "memory for all KV caches, MiB");
        flags.add_choice("reserve", reserve, {"full", "held"},
                         "charge each request its longest context, or what its cache holds");
        flags.add_choice("cost-model", cost_choice, {"measured", "analytic"},
                         "time the real engine, or count operations (exact, for tests)");
        flags.add("calibration", calibration_file,
                  "reuse a cost model saved with --save-calibration");
        flags.add("save-calibration", save_calibration, "write the cost model to this file");
        flags.add("validate", validate_count, 0, 256,
                  "run this many requests on the real engine too");
        add_output_flags(flags, out);
        if (!flags.parse(argc, argv)) return 0;
        if (!calibration_file.empty() && cost_choice == "analytic")
            throw UsageError("--calibration " + calibration_file +
                             " and --cost-model analytic exclude each other");
        check_model(config, std::uint64_t(config.max_seq) * 64);
        work.seed = seed;

        // The queue, the memory budget, and the policies.
        const std::vector<Request> requests = make_workload(work, config.max_seq);
        const MemoryBudget budget =
            make_budget(config, budget_mib, reserve == "full" ? Reservation::whole_context : Reservation::tokens_held);
        check_every_request_fits(requests, budget);
        const std::vector<Policy> policies = book_policies(batch);

        // What each piece of work costs: measured, loaded, or counted.
        std::optional<Transformer> model;
        std::optional<Calibration> calibration;
        CostModel cost;
        if (!calibration_file.empty()) {
            cost = load_cost_model(calibration_file, config);
        } else if (cost_choice == "analytic") {
            cost = analytic_cost_model(config);
        } else {
            model.emplace(config, seed);
            calibration = calibrate(*model, work.prompt_max + work.answer_max - 1, batch);
            cost = calibration->cost;
        }
        if (!save_calibration.empty()) save_cost_model(cost, save_calibration);

        // The simulation: every policy over the same queue.
        const auto start = Clock::now();
        std::vector<Summary> summaries;
        std::vector<std::vector<double>> ttfts;
        for (const Policy& p : policies) {
            SimulatedExecutor executor(cost);
            const Schedule s = run_schedule(requests, p, budget, executor);
            summaries.push_back(summarize(requests, s));
            ttfts.push_back(sorted_ttfts(requests, s));
        }
        const double simulation_seconds = seconds_since(start);
        const Summary& no_cache = summaries[0];    // serial, no cache
        const Summary& with_cache = summaries[3];  // serial, cache
        const Summary& continuous = summaries[5];  // continuous, cache

        std::optional<RateSweep> sweep;  // with --rate: where the queue turns unstable
        if (work.rate > 0)
            sweep = sweep_rates(work, config.max_seq, {policies[3], policies[4], policies[5]},
                                budget, cost);
        std::vector<ValidationRow> validation;  // with --validate N: the real engine too
        const int validation_requests = std::min(validate_count, work.requests);
        WorkloadOptions few = work;
        few.requests = validation_requests;
        if (validation_requests > 0) {
            if (!model) model.emplace(config, seed);
            const std::vector<Request> sample = make_workload(few, config.max_seq);
            validation = validate(*model, sample,
                                  book_policies(validation_batch(validation_requests, batch)),
                                  budget, cost, seed);
        }

        const Table table = policy_table(policies, summaries);
        const std::string cdf_plot = write_ttft_cdf(out.plot_dir, policies, ttfts);
        const std::string rate_plot = sweep ? write_rate_plot(out.plot_dir, *sweep) : "";
        const Concurrency fit = concurrency(requests, budget);
        const std::string count = with_commas(std::uint64_t(work.requests));
        const std::string headline =
            "median time to first token, " + count +
            " requests: " + seconds_text(no_cache.ttft_median) + " without the cache -> " +
            seconds_text(with_cache.ttft_median) + " with it -> " +
            seconds_text(continuous.ttft_median) + " with continuous batching";

        Json json;
        json.add("chapter", "05_queue_simulation")
            .add("model", config.describe())
            .add("requests", work.requests)
            .add("batch", batch)
            .add("kv_budget_bytes", budget.bytes)
            .add("kv_bytes_per_token", budget.bytes_per_token)
            .add("kv_budget_tokens", budget.tokens)
            .add("reserve", reserve)
            .add("fewest_requests_that_fit", fit.fewest)
            .add("cost_model", cost_model_json(cost, calibration ? &*calibration : nullptr))
            .add("policies", table)
            .add("simulation_seconds", simulation_seconds)
            .add("median_ttft_no_cache_s", no_cache.ttft_median)
            .add("median_ttft_cache_s", with_cache.ttft_median)
            .add("median_ttft_continuous_s", continuous.ttft_median)
            .add("ttft_cdf_plot", cdf_plot)
            .add("headline", headline);
        if (sweep) json.add("rate_sweep", sweep_table(*sweep)).add("rate_plot", rate_plot);
        if (!validation.empty()) json.add("validation", validation_table(validation));
        if (emit(out, json)) return 0;

        std::cout << "Chapter 05: a queue of " << count << " requests\n\n"
                  << "model: " << config.describe() << "\n"
                  << describe_workload(work, requests) << "\n"
                  << describe_budget(budget, fit, batch) << "\n";
        print_cost_model(std::cout, cost, calibration ? &*calibration : nullptr);
        std::cout << "\n";
        table.print(std::cout);
        std::cout << "times in seconds; ttft: time to first token; e2e: arrival to last token; "
                     "batch: mean requests per decode step\n"
                  << "simulated " << policies.size() << " policies x " << count << " requests in "
                  << format_duration(simulation_seconds) << "\n"
                  << "plot: " << cdf_plot << "\n";
        if (sweep) {
            std::cout << "\nmedian time to first token (s) against arrival rate:\n";
            sweep_table(*sweep).print(std::cout);
            std::cout << "plot: " << rate_plot << "\n";
        }
        if (!validation.empty()) {
            std::cout << "\nvalidation: " << validation_requests
                      << " requests on the real engine (batch "
                      << validation_batch(validation_requests, batch)
                      << ") vs the simulator; time to first token in seconds\n";
            validation_table(validation).print(std::cout);
        }
        std::cout << "\n" << headline << "\n";
        return 0;
    });
}
