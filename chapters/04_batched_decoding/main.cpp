// Chapter 04: batched decoding. Times one decode step for batches of 1, 2,
// 4, ... 64 ragged sequences, at the demo width and at a width whose weights
// do not fit in the CPU's cache, and checks every batched step against the
// same sequences decoded alone.
#include <cmath>
#include <cstdio>
#include <iostream>

#include "../../common/kit/model_flags.h"
#include "../../common/real_weights/model_source.h"
#include "../../common/kit/output.h"
#include "../../common/kit/program.h"
#include "batch_benchmark.h"
#include "batch_report.h"
#include "memory_bandwidth.h"

using namespace kv;

int main(int argc, char** argv) {
    return run_program("04_batched_decoding", [&] {
        Config config;           // the book's demo model (common/core/config.h)
        std::uint64_t seed = 1;  // seed of the weights and the prompts
        int max_batch = 64;      // batch sizes 1, 2, 4, ... up to this
        int prompt_len = 32;     // longest prompt; each sequence's length is drawn from 1..this
        int repeats = 15;        // timed decode steps per batch size; each round adds a warm-up
        int wide_dim = 1024;     // width of the second model, whose weights miss the cache
        ModelSource source;      // random weights, or a checkpoint and tokenizer
        OutputOptions out;

        Flags flags("04_batched_decoding",
                    "Batched decoding: one decode step for many sequences at once.");
        add_model_flags(flags, config, seed);
        add_model_source_flags(flags, source);
        flags.add("max-batch", max_batch, 1, 1024, "largest batch (sizes 1, 2, 4, ... up to it)");
        flags.add("prompt-len", prompt_len, 1, 1 << 20,
                  "longest prompt (lengths drawn from 1..it)");
        flags.add("repeats", repeats, 1, 1000, "timed decode steps per batch size (median)");
        flags.add("wide-dim", wide_dim, 0, 1 << 16,
                  "width of the second model, ffn 3x as wide (0: skip it)");
        add_output_flags(flags, out);
        if (!flags.parse(argc, argv)) return 0;
        LoadedModel loaded = load_model(source, config, seed, prompt_len, 1);
        config = loaded.model.config();  // a checkpoint brings its own shape
        if (!source.prompt.empty()) prompt_len = static_cast<int>(loaded.prompt.size());
        if (!source.checkpoint.empty() && wide_dim % (2 * config.n_heads) != 0) {
            // The wide model keeps the checkpoint's heads (stories15M has 6), so
            // its width must split into them with an even head size: round up.
            const int step = 2 * config.n_heads;
            wide_dim = (wide_dim + step - 1) / step * step;
        }

        const int steps = decode_steps(repeats);  // the timed ones and a warm-up per round
        if (prompt_len + steps > config.max_seq)
            throw UsageError("--prompt-len " + std::to_string(prompt_len) + " and --repeats " +
                             std::to_string(repeats) + " need " +
                             std::to_string(prompt_len + steps) +
                             " positions, more than --max-seq " + std::to_string(config.max_seq));
        Config wide = config;  // the same model, wider; the feed-forward stays 3 x dim
        wide.dim = wide_dim;
        wide.ffn_dim = 3 * wide_dim;
        check_bench_fits(config, max_batch, prompt_len, repeats, "");
        if (wide_dim > 0)
            check_bench_fits(wide, max_batch, prompt_len, repeats,
                             "--wide-dim " + std::to_string(wide_dim) + ": ");
        std::vector<std::vector<int>> prompts =
            ragged_prompts(max_batch, prompt_len, config.vocab_size, seed);
        if (!source.prompt.empty()) {
            // Text prompt: sequence 0 gets all of it, the others ragged beginnings of it.
            for (std::vector<int>& p : prompts)
                p.assign(loaded.prompt.begin(), loaded.prompt.begin() + p.size());
            prompts[0] = loaded.prompt;
        }
        const std::vector<int> sizes = batch_sizes_up_to(max_batch);

        // The demo width, every batched step checked against decoding alone.
        std::vector<WidthResult> widths;
        Transformer& model = loaded.model;
        AloneReference alone(model, prompts, steps);
        DecodeBench bench(model, prompts, repeats);
        widths.push_back({config, bench.run(sizes, "dim " + std::to_string(config.dim),
                                            [&](int s, const Matrix& l) { alone.compare(s, l); })});
        if (wide_dim > 0) {
            Transformer wide_model(wide, seed);
            DecodeBench wide_bench(wide_model, prompts, repeats);
            widths.push_back({wide, wide_bench.run(sizes, "dim " + std::to_string(wide_dim))});
        }
        const std::string plot_path =
            throughput_plot(widths, false).write(out.plot_dir + "/04_tokens_per_second.svg");
        const std::string speedup_path =
            throughput_plot(widths, true).write(out.plot_dir + "/04_speedup.svg");
        const std::uint64_t cache_bytes = last_level_cache_bytes();
        const std::uint64_t probe_bytes = streaming_buffer_bytes(cache_bytes);
        const double memory_speed = streaming_bytes_per_second(probe_bytes, repeats);

        Json json;
        json.add("chapter", "04_batched_decoding")
            .add("max_batch", max_batch)
            .add("longest_prompt", prompt_len)
            .add("mean_prompt", mean_length(prompts))
            .add("repeats", repeats)
            .add("last_level_cache_bytes", cache_bytes)
            .add("memory_bytes_per_second", memory_speed)
            .add("same_tokens", alone.same_tokens())
            .add("max_logit_difference", alone.largest_difference())
            .add("weights", loaded.weights);
        if (loaded.tokenizer) json.add("answer_text", loaded.answer_text(alone.answer(0)));
        add_width_json(json, "", widths[0]);  // the closing table's keys: the demo model
        if (wide_dim > 0) add_width_json(json, "wide_", widths[1]);
        if (emit(out, json.add("plot", plot_path).add("speedup_plot", speedup_path)))
            return alone.same_tokens() ? 0 : 1;

        std::cout << "Chapter 04: batched decoding\n\n"
                  << "model: " << config.describe() << "\n"
                  << "weights: " << loaded.weights << "\n"
                  << "a batch of B sequences, prompts of 1.." << prompt_len << " tokens (mean "
                  << Cell(mean_length(prompts), 1).text << " over all " << max_batch
                  << "), one new token each per decode step\n"
                  << "times: median of " << repeats << " steps; the batch sizes take turns in "
                  << std::min(kRounds, repeats) << " rounds, each with a warm-up step\n"
                  << "memory: this core streams " << Cell(memory_speed / 1e9, 1).text
                  << " GB/s from main memory (measured: a sum over " << format_bytes(probe_bytes)
                  << ")\n";
        for (const WidthResult& w : widths) print_width(std::cout, w, cache_bytes, memory_speed);
        std::cout << "\nEach step reads every weight once and does 2 FLOPs with it per sequence:"
                  << " the weight\nproducts do B/2 FLOPs per byte. Attention adds 4 x layers x dim"
                  << " FLOPs per cached\nposition of each sequence, on keys and values no other"
                  << " sequence shares.\n\n"
                  << "batched vs alone (chapter 02's decode_step), " << alone.rows_compared()
                  << " sequence-steps: same tokens " << (alone.same_tokens() ? "yes" : "NO")
                  << ", largest logit difference " << alone.largest_difference()
                  << (alone.largest_difference() == 0 ? " (identical to the last bit)" : "")
                  << "\nplots: " << plot_path << ", " << speedup_path << "\n\n";
        if (loaded.tokenizer)
            std::cout << "sequence 0, prompt: " << loaded.prompt_text() << "\n"
                      << "sequence 0, answer (the same alone and in every batch): "
                      << loaded.answer_text(alone.answer(0)) << "\n\n";
        std::cout << "tokens per second, batch 1 -> best batch:";
        for (const WidthResult& w : widths) {
            const BatchTiming& best = best_throughput(w.timings);
            const double one = w.timings.front().tokens_per_second();
            std::printf("%s dim %d: %s -> %s at batch %d (%.1f x)", &w == &widths[0] ? "" : ";",
                        w.config.dim, with_commas(std::llround(one)).c_str(),
                        with_commas(std::llround(best.tokens_per_second())).c_str(), best.batch,
                        best.tokens_per_second() / one);
        }
        std::cout << "\n";
        return alone.same_tokens() ? 0 : 1;
    });
}
