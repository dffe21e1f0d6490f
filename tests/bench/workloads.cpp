#include "workloads.h"

#include <memory>

#include "../../common/core/generation.h"
#include "../../common/kit/report.h"
#include "../../common/kit/timing.h"
#include "../../common/core/transformer.h"

namespace kv::bench {

std::vector<BenchShape> bench_shapes() {
    const Config demo;
    Config resident = demo;  // about 13 MiB of weights
    resident.n_layers = 4;
    resident.ffn_dim = 512;
    resident.vocab_size = 2048;
    const Config large{.n_layers = 8,
                       .dim = 1024,
                       .n_heads = 16,
                       .n_kv_heads = 4,  // about 400 MiB
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

double weight_bytes_read(const Config& c) {
    return double(c.weight_bytes()) - double(c.vocab_size) * c.dim * sizeof(float);
}

namespace {

constexpr int kContext = 64;   // tokens already in each cache when decode is timed
constexpr int kPrefill = 128;  // prompt length for the prefill measurement
constexpr int kBatch = 16;

Measurement decode(Transformer& model, int batch, int repeats, const Limits& limits) {
    const Config& c = model.config();
    std::vector<std::unique_ptr<KVCache>> caches;
    std::vector<int> tokens(batch);
    for (int b = 0; b < batch; ++b) {
        caches.push_back(std::make_unique<KVCache>(c, kContext + repeats + 2));
        model.forward(fixed_prompt(kContext, c.vocab_size, 100 + b), *caches.back());
        tokens[b] = b % c.vocab_size;
    }
    std::vector<SequenceInput> chunks;
    for (int b = 0; b < batch; ++b) chunks.push_back({std::span(&tokens[b], 1), caches[b].get()});
    // Each call appends one position to every cache: warm-up + repeats fit by construction.
    const double seconds = median_seconds(repeats, [&] { model.forward(chunks); });
    Measurement m;
    m.what = "decode, batch " + std::to_string(batch);
    m.tokens_per_second = batch / seconds;
    m.flops_per_second = batch * forward_flops(c, 1, kContext + repeats / 2, 1) / seconds;
    m.weight_bytes_per_second = weight_bytes_read(c) / seconds;
    const double weights = double(c.weight_bytes());
    m.memory_bound = weights > double(limits.l3_bytes) &&
                     weight_bytes_read(c) / limits.dram_bytes_per_second >
                         batch * forward_flops(c, 1, kContext, 1) / limits.peak_fma;
    return m;
}

Measurement prefill(Transformer& model, int repeats, const Limits& limits) {
    const Config& c = model.config();
    const std::vector<int> prompt = fixed_prompt(kPrefill, c.vocab_size, 7);
    KVCache cache(c, kPrefill);
    const double seconds = median_seconds(std::max(3, repeats / 4), [&] {
        cache.truncate(0);
        model.forward(prompt, cache);
    });
    Measurement m;
    m.what = "prefill, " + std::to_string(kPrefill) + " tokens";
    m.tokens_per_second = kPrefill / seconds;
    m.flops_per_second = forward_flops(c, kPrefill, 0, 1) / seconds;
    m.weight_bytes_per_second = weight_bytes_read(c) / seconds;
    m.memory_bound = false;
    (void)limits;
    return m;
}

}  // namespace

ShapeResults measure_shape(const BenchShape& shape, int repeats, const Limits& limits) {
    Config c = shape.config;
    c.max_seq = std::max(c.max_seq, kContext + repeats + 2);
    Transformer model(c, 1);
    ShapeResults r;
    r.weight_bytes = c.weight_bytes();
    r.rows.push_back(decode(model, 1, repeats, limits));
    r.rows.push_back(decode(model, kBatch, repeats, limits));
    r.rows.push_back(prefill(model, repeats, limits));
    return r;
}

std::string ShapeResults::to_json() const {
    std::string out = "{\"weight_bytes\": " + std::to_string(weight_bytes);
    for (const Measurement& m : rows)
        out += ", " + json_quote(m.what) + ": " +
               Json()
                   .add("tokens_per_second", m.tokens_per_second)
                   .add("gflops", m.flops_per_second / 1e9)
                   .add("weight_gbs", m.weight_bytes_per_second / 1e9)
                   .add("memory_bound", m.memory_bound)
                   .str();
    return out + "}";
}

}  // namespace kv::bench
