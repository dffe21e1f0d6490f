#include "peer_step.h"

#include "../../common/fast/machine_probes.h"

namespace kv::bench {

PeerStep::PeerStep(const Config& config, const Weights& weights, int context)
    : config_(config), context_(context), rope_(config.head_size(), context + 1) {
    const Config& c = config_;
    for (const LayerWeights& l : weights.layers)
        layers_.push_back({l.attn_norm.data(), l.wq.data.data(), l.wk.data.data(), l.wv.data.data(),
                           l.wo.data.data(), l.ffn_norm.data(), l.w1.data.data(), l.w2.data.data(),
                           l.w3.data.data()});
    const int seq_len = context + 1;
    model_ = {c.dim,
              c.ffn_dim,
              c.n_layers,
              c.n_heads,
              c.n_kv_heads,
              c.vocab_size,
              seq_len,
              weights.token_embedding.data.data(),
              layers_.data(),
              weights.final_norm.data(),
              weights.output.data.data(),
              rope_.cosines().data(),
              rope_.sines().data()};
    const std::size_t cache = std::size_t(c.n_layers) * seq_len * c.kv_dim();
    const std::size_t sizes[] = {std::size_t(c.dim),
                                 std::size_t(c.dim),
                                 std::size_t(c.dim),
                                 std::size_t(c.ffn_dim),
                                 std::size_t(c.ffn_dim),
                                 std::size_t(c.dim),
                                 std::size_t(c.n_heads) * seq_len,
                                 std::size_t(c.vocab_size),
                                 cache,
                                 cache};
    std::size_t total = 0;
    for (std::size_t s : sizes) total += s;
    buffers_.assign(total, 0.0f);
    float* at = buffers_.data();
    float** fields[] = {&state_.x,         &state_.xb,         &state_.xb2, &state_.hb,
                        &state_.hb2,       &state_.q,          &state_.att, &state_.logits,
                        &state_.key_cache, &state_.value_cache};
    for (int i = 0; i < 10; ++i) {
        *fields[i] = at;
        at += sizes[i];
    }
    // The cached positions hold small numbers of mixed sign: a step costs
    // the same whatever they are, as long as they are ordinary floats.
    for (std::size_t i = 0; i < cache; ++i) {
        state_.key_cache[i] = 0.01f * float(int(i % 13) - 6);
        state_.value_cache[i] = 0.02f * float(int(i % 11) - 5);
    }
}

double PeerStep::best_step_seconds(int repeats, double budget_seconds) {
    StepSamples samples;  // timed as the engine's steps are (common/core/timing.h)
    return sample_round(
        samples, repeats, budget_seconds, [] {},
        [&] { peer_forward(model_, state_, 1, context_); });
}

}  // namespace kv::bench
