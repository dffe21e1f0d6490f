// make validate's options, from which every chapter's checked queues are made.
#pragma once

#include <cstdint>
#include <string>

#include "../../common/core/config.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/model_flags.h"
#include "../../common/lab/calibration.h"
#include "real_queue.h"  // kRealRuns

namespace kv {

struct ValidateOptions {
    Config model;                // the chapters' demo model (--layers, --dim, ...)
    std::uint64_t seed = 1;      // of the weights, the prompts and the workloads
    int requests = 128;          // requests in an operating point's queue; other queues take fewer
    int runs = kRealRuns;        // times each queue runs on the engine; each step keeps its fastest
    bool calibrate = false;      // measure the step cost again, even if it is saved
    std::string save_workloads;  // a folder: each checked queue as vLLM JSON Lines ("": none)

    void add_flags(Flags& flags) {
        add_model_flags(flags, model, seed);
        flags.add("requests", requests, 1, 4096,
                  "requests in each operating point's queue (chapter 05: the first of its queue)");
        flags.add("runs", runs, 1, 100,
                  "times each queue runs on the real engine; each step keeps its fastest run");
        flags.add("calibrate", calibrate,
                  "measure this machine's step cost again (it is measured once and saved under "
                  "build/calibration/)");
        flags.add("save-workloads", save_workloads,
                  "write each checked queue to this folder as JSON Lines for vLLM's `vllm bench "
                  "serve --dataset-name custom`");
    }

    // The model must hold the calibration's steps (each chapter's queues check the rest).
    void check() const {
        check_model(model, calibration_positions(model),
                    std::uint64_t(kMostCalibratedBatch) + std::uint64_t(kLargestCalibratedChunk));
    }
};

// A chapter's experiment with its defaults on the options' model and seed,
// its queue cut to the options' first requests (its draws go in order).
template <class Experiment>
Experiment chapter_defaults(const ValidateOptions& o) {
    Experiment e;
    e.model = o.model;
    e.seed = o.seed;
    e.queue.workload.requests = o.requests;
    e.check();
    return e;
}

}  // namespace kv
