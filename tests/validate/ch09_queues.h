// Chapter 09's checked queues for make validate: its operating point
// (512-token prompts, chunked prefill at 64 prompt tokens a step, 48
// requests) and, on the same requests, prefill first and batched prefill.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "../../chapters/09_chunked_prefill/experiment.h"
#include "../../common/core/transformer.h"
#include "../../common/lab/side_by_side.h"  // paged_engine
#include "validation.h"

#include "options.h"

namespace kv {

// Chapter 09's model is the lab's with a context of 1,024 positions; when
// the lab's engine has another, the queues run on a model of chapter 09's
// shape with the same seed (the same weights), built once on first need.
inline std::vector<CheckedQueue> ch09_checked_queues(const ValidateOptions& o) {
    ch09::Experiment chapter;
    chapter.model = ch09::chapter_model(o.model);
    chapter.seed = o.seed;
    const ch09::Server server = chapter.server();
    const Config config = chapter.model;
    const std::uint64_t seed = o.seed;

    WorkloadOptions w = workload_of(chapter.queue, o.seed);
    w.requests = std::max(1, std::min(o.requests, 48));
    w.prompt_min = w.prompt_max = chapter.long_prompt;
    const std::vector<Request> requests = make_workload(w);

    auto own = std::make_shared<std::unique_ptr<Transformer>>();  // chapter 09's model, if needed
    auto engine = [config, seed, server, own](Transformer& lab) -> std::unique_ptr<Executor> {
        Transformer* model = &lab;
        if (lab.config().describe() != config.describe()) {
            if (!*own) *own = std::make_unique<Transformer>(config, seed);
            model = own->get();
        }
        return paged_engine(*model, seed, server.memory);
    };

    std::vector<CheckedQueue> queues;
    for (const ch09::StepRule& rule :
         {ch09::chunked(chapter.chunk), ch09::kPrefillFirst, ch09::kBatchedPrefill}) {
        CheckedQueue q;
        q.chapter = "09";
        q.name = ch09::long_prompts(chapter.long_prompt) + ", " + rule.name + ", " +
                 std::to_string(requests.size()) + " requests (max-seq " +
                 std::to_string(config.max_seq) + ", blocks of " +
                 std::to_string(server.memory.block_size) + ")";
        q.operating_point = rule.chunk == chapter.chunk;
        q.requests = requests;
        q.run = [server, rule, requests](Executor& executor, Executor*) {
            return server.serve(requests, rule, executor);
        };
        q.engine = engine;
        queues.push_back(std::move(q));
    }
    return queues;
}

}  // namespace kv
