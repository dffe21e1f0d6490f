// Chapter 09's queues for `make validate`: its operating point (512-token
// prompts, chunked prefill at 64 prompt tokens a step, 48 requests,
// continuous batching with the cache on blocks of 16) and, on the same
// requests, prefill first and batched prefill beside it. The chapter's
// program runs them in the simulator only; here each also runs on the real
// engine, on a pool of blocks of its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "../../chapters/09_chunked_prefill/experiment.h"
#include "../../common/core/block_pool.h"
#include "../../common/core/timing.h"
#include "../../common/core/transformer.h"
#include "../../common/lab/paged_engine.h"
#include "../../common/lab/validation.h"
#include "../../common/serving/paged_executor.h"

#include "options.h"

namespace kv {

// Chapter 09's model is the lab's with a context of 1,024 positions (its
// 512-token prompts and their answers); the queues' names say so. When the
// lab hands the engine another context, the queues run on a model of
// chapter 09's shape with the same seed (the same weights: the context
// length draws none), built once on first need. Each queue holds the
// chapter's 48 requests, or the lab's count if that is smaller.
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
        return std::make_unique<PagedEngine>(*model, seed, server.memory);
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
        q.run = [server, rule, requests](Executor& executor) {
            return server.serve(requests, rule, executor);
        };
        q.engine = engine;
        queues.push_back(std::move(q));
    }
    return queues;
}

}  // namespace kv
