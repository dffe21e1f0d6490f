#include "workloads.h"

#include <algorithm>

#include "../../common/core/block_pool.h"
#include "../../common/core/generation.h"
#include "../../common/core/paged_kv_cache.h"
#include "../../common/core/timing.h"
#include "../../common/core/transformer.h"
#include "../../common/fast/machine_probes.h"

namespace kv::bench {

std::vector<BenchShape> bench_shapes() {
    const Config demo;
    Config resident = demo;  // 10.5 MiB of weights read per pass
    resident.n_layers = 4;
    resident.ffn_dim = 512;
    resident.vocab_size = 2048;
    const Config large{.n_layers = 8,
                       .dim = 1024,
                       .n_heads = 16,
                       .n_kv_heads = 4,  // 376 MiB of weights read per pass
                       .ffn_dim = 2816,
                       .vocab_size = 8192,
                       .max_seq = 512};
    return {{"demo", demo}, {"cache-resident", resident}, {"large", large}};
}

double forward_flops(const Config& c, int rows, int start, int logit_rows) {
    const double d = c.dim, kvd = c.kv_dim(), f = c.ffn_dim;
    const double per_row_per_layer = 2 * (d * d * 2 + kvd * d * 2 + f * d * 3);
    double attended = 0;  // sum over new rows of the positions each attends to
    for (int t = 0; t < rows; ++t) attended += start + t + 1;
    return c.n_layers * (per_row_per_layer * rows + 4 * d * attended) +
           2.0 * c.vocab_size * d * logit_rows;
}

StepCost step_cost(const Config& c, const Workload& w) {
    StepCost cost;
    cost.weight_bytes = double(c.weight_bytes_read_per_pass());
    if (w.prompt > 0) {
        cost.flops = forward_flops(c, w.prompt, 0, 1);
        // Each new row reads the keys and values of the positions before it
        // and its own; they were written in this pass, so mostly from cache.
        cost.cache_bytes = double(c.kv_bytes(std::uint64_t(w.prompt)));
    } else {
        cost.flops = w.batch * forward_flops(c, 1, w.context, 1);
        cost.cache_bytes = w.batch * double(c.kv_bytes(std::uint64_t(w.context) + 1));
    }
    return cost;
}

struct TimedWorkload::State {
    Transformer model;
    std::unique_ptr<BlockPool> pool;  // a paged workload's blocks
    std::vector<std::unique_ptr<KVStore>> caches;
    std::vector<int> tokens;  // the one new token of each sequence (decode)
    std::vector<int> prompt;  // the prompt (prefill)
    std::vector<SequenceInput> inputs;
    explicit State(const Config& c) : model(c, 1) {}
};

TimedWorkload::TimedWorkload(const Config& config, const Workload& workload)
    : config_(config), workload_(workload) {
    config_.max_seq = std::max(config_.max_seq, std::max(workload.context + 1, workload.prompt));
    state_ = std::make_unique<State>(config_);
    State& s = *state_;
    const Config& c = config_;
    if (workload.prompt > 0) {
        s.prompt = fixed_prompt(workload.prompt, c.vocab_size, 7);
        s.caches.push_back(std::make_unique<KVCache>(c, workload.prompt));
        s.inputs.push_back({s.prompt, s.caches.back().get()});
        return;
    }
    // The caches: a step does the same arithmetic on any keys and values,
    // so the first kRealPositions are a real prefill, later positions
    // repeat them, and every sequence's cache is a copy of the first.
    // Prefilling every position of every sequence took about 50 of the
    // baseline build's 150 seconds. (Decode over 4,096 positions on the
    // README's Xeon, the two kinds of cache taking turns in one process:
    // the repeated one's best step from 0.9 % faster to 9 % slower than
    // the fully prefilled one's in five comparisons, one of them in the
    // baseline build.)
    const int real = std::min(workload.context, kRealPositions);
    KVCache first(c, workload.context + 1);
    s.model.forward(fixed_prompt(real, c.vocab_size, 100), first);
    for (int pos = real; pos < workload.context; ++pos)
        for (int layer = 0; layer < c.n_layers; ++layer) {
            std::copy_n(first.key(layer, pos % real), c.kv_dim(), first.key(layer, pos));
            std::copy_n(first.value(layer, pos % real), c.kv_dim(), first.value(layer, pos));
        }
    first.commit(workload.context - real);
    s.tokens.resize(workload.batch);
    for (int b = 0; b < workload.batch; ++b) s.tokens[b] = b % c.vocab_size;
    if (workload.block_size > 0) {
        // The same numbers on paged caches that grow a block at a time,
        // taking turns, so their blocks lie scattered through the pool as on
        // a busy server.
        const int B = workload.block_size;
        s.pool = std::make_unique<BlockPool>(c, B, workload.batch * ((workload.context + B) / B));
        for (int b = 0; b < workload.batch; ++b)
            s.caches.push_back(std::make_unique<PagedKVCache>(*s.pool, workload.context + 1));
        for (int filled = 0; filled < workload.context; filled += B)
            for (auto& cache : s.caches) {
                const int n = std::min(B, workload.context - filled);
                cache->reserve(n);
                for (int pos = filled; pos < filled + n; ++pos)
                    for (int layer = 0; layer < c.n_layers; ++layer) {
                        std::copy_n(first.key(layer, pos), c.kv_dim(), cache->key(layer, pos));
                        std::copy_n(first.value(layer, pos), c.kv_dim(), cache->value(layer, pos));
                    }
                cache->commit(n);
            }
    } else {
        for (int b = 0; b < workload.batch; ++b)
            s.caches.push_back(std::make_unique<KVCache>(first));
    }
    for (int b = 0; b < workload.batch; ++b)
        s.inputs.push_back({std::span(&s.tokens[b], 1), s.caches[b].get()});
}

TimedWorkload::~TimedWorkload() = default;

const Weights& TimedWorkload::weights() const {
    return state_->model.weights();
}

double TimedWorkload::best_step_seconds(int repeats, double budget_seconds) {
    State& s = *state_;
    // Every step starts from the same cache lengths: a decode step always
    // attends over exactly `context` positions and its own.
    const int keep = workload_.prompt > 0 ? 0 : workload_.context;
    StepSamples samples;  // the book's one way to time a step (common/core/timing.h)
    return sample_round(
        samples, repeats, budget_seconds,
        [&] {
            for (auto& cache : s.caches) cache->truncate(keep);
        },
        [&] { s.model.forward(s.inputs); });
}

}  // namespace kv::bench
