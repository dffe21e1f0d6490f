// Chapter 05: a queue of 1,000 requests. Measures what the engine's work
// costs, then replays the queue under six policies (serial, static and
// continuous batching, each without and with the KV cache) and reports
// what the people in the queue experienced.
#include <iostream>

#include "../../common/kit/model_flags.h"
#include "../../common/kit/output.h"
#include "../../common/kit/program.h"
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
        QueueRun run;
        std::uint64_t seed = 1;         // seed of the weights, the prompts and the workload
        run.batch = 32;                 // most requests in a batch; memory may allow fewer
        std::uint64_t budget_mib = 16;  // KV cache memory: 21 to 24 requests at their longest
        std::string reserve = "full", cost_choice = "measured", calibration_file, save_calibration;
        int validate_count = 0;  // requests to run through the real engine too; 0: none
        OutputOptions out;

        Flags flags("05_queue_simulation",
                    "A queue of requests served with and without the cache, serially and in "
                    "batches.");
        add_model_flags(flags, run.config, seed);
        WorkloadOptions& work = run.work;  // 1,000 requests at time 0 (workload.h)
        flags.add("requests", work.requests, 0, 10'000'000, "requests in the queue");
        flags.add("prompt-min", work.prompt_min, 1, 1 << 20, "shortest prompt (uniform lengths)");
        flags.add("prompt-max", work.prompt_max, 1, 1 << 20, "longest prompt");
        flags.add("answer-len", work.answer_len, 1, 1 << 20, "mean answer length before the cap");
        flags.add("answer-max", work.answer_max, 1, 1 << 20, "answer cap (max_new_tokens)");
        flags.add_choice("answer-dist", work.answer_dist, {"geometric", "uniform"},
                         "geometric (many short, a few long) or uniform in 1..2 x mean - 1");
        flags.add("rate", work.rate, 0.0, 1e9, "Poisson arrivals per second; 0: all at time 0");
        flags.add("batch", run.batch, 0, 4096, "most requests running at once");
        flags.add("kv-budget-mib", budget_mib, 1, 1 << 30, "memory for all KV caches, MiB");
        flags.add_choice("reserve", reserve, {"full", "held"},
                         "charge each request its longest context, or what its cache holds");
        flags.add_choice("cost-model", cost_choice, {"measured", "analytic"},
                         "time the real engine, or count operations (exact, for tests)");
        flags.add("calibration", calibration_file,
                  "reuse a cost model saved by --save-calibration");
        flags.add("save-calibration", save_calibration, "write the cost model to this file");
        flags.add("validate", validate_count, 0, 256, "also run this many requests for real");
        add_output_flags(flags, out);
        if (!flags.parse(argc, argv)) return 0;
        if (!calibration_file.empty() && cost_choice == "analytic")
            throw UsageError("--calibration " + calibration_file +
                             " and --cost-model analytic exclude each other");
        // The calibration's widest batch, each sequence at the longest context.
        check_model(run.config, std::uint64_t(run.config.max_seq) * kMostCalibratedBatch);
        work.seed = seed;

        // The queue, the memory budget, and the policies.
        const std::vector<Request> requests = make_workload(work, run.config.max_seq);
        run.budget =
            make_budget(run.config, budget_mib,
                        reserve == "full" ? Reservation::whole_context : Reservation::tokens_held);
        check_every_request_fits(requests, run.budget);
        run.fit = concurrency(requests, run.budget);
        run.policies = book_policies(run.batch);

        // What each piece of work costs: loaded, counted, or measured now.
        std::optional<Transformer> model;
        if (!calibration_file.empty()) {
            run.cost = load_cost_model(calibration_file, run.config);
        } else if (cost_choice == "analytic") {
            run.cost = analytic_cost_model(run.config);
        } else {
            model.emplace(run.config, seed);
            run.calibration = calibrate(*model, work.prompt_max + work.answer_max - 1, run.batch);
            run.cost = run.calibration->cost;
        }
        if (!save_calibration.empty()) save_cost_model(run.cost, save_calibration);

        // The simulation: every policy over the same queue.
        const auto start = Clock::now();
        std::vector<std::vector<double>> ttfts;
        for (const Policy& p : run.policies) {
            SimulatedExecutor executor(run.cost);
            const Schedule s = run_schedule(requests, p, run.budget, executor);
            run.summaries.push_back(summarize(requests, s));
            ttfts.push_back(sorted_ttfts(requests, s));
        }
        run.simulation_seconds = seconds_since(start);
        run.cdf_plot = write_ttft_cdf(out.plot_dir, run.policies, ttfts);

        // With --rate: queues of the same distributions at rates around capacity,
        // each its own sample (the arrival gaps and the lengths share one generator).
        if (work.rate > 0) {
            const std::vector<Policy> cached = {run.policies[kSerialCache],
                                                run.policies[kStaticCache],
                                                run.policies[kContinuousCache]};
            run.sweep = sweep_rates(work, run.config.max_seq, cached, run.budget, run.cost);
            run.rate_plot = write_rate_plot(out.plot_dir, *run.sweep);
        }

        // With --validate N: the first N requests on the real engine too.
        if (validate_count > 0) {
            WorkloadOptions few = work;
            few.requests = std::min(validate_count, work.requests);
            run.validation_batch = validation_batch(few.requests, run.batch);
            if (!model) model.emplace(run.config, seed);
            run.validation =
                validate(*model, make_workload(few, run.config.max_seq),
                         book_policies(run.validation_batch), run.budget, run.cost, seed);
        }

        if (emit(out, to_json(run))) return 0;
        print_report(std::cout, run, requests);
        return 0;
    });
}
