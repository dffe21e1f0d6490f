// Chapter 02: the KV cache. The same answer as chapter 01, computed with a
// cache: prefill once, then decode one token at a time. Same tokens, same
// logits, a fraction of the time.
#include <cmath>
#include <iostream>

#include "../../common/kit/model_flags.h"
#include "../../common/real_weights/model_source.h"
#include "../../common/kit/output.h"
#include "../../common/kit/program.h"
#include "../../common/kit/report.h"
#include "../../common/kit/svg_plot.h"
#include "../../common/kit/timing.h"
#include "../01_naive_decoding/naive_decoding.h"
#include "cached_decoding.h"

using namespace kv;

int main(int argc, char** argv) {
    return run_program("02_kv_cache", [&] {
        Config config;           // the book's demo model (common/core/config.h)
        std::uint64_t seed = 1;  // seed of the weights and the prompt
        int prompt_len = 16;     // tokens in the fixed prompt
        int answer_len = 48;     // tokens to generate, as in the published figure
        int repeats = 5;         // timed answers per method after a warm-up
        ModelSource source;      // random weights, or a checkpoint and tokenizer
        OutputOptions out;

        Flags flags("02_kv_cache", "The KV cache: prefill once, then decode one token at a time.");
        add_model_flags(flags, config, seed);
        add_model_source_flags(flags, source);
        add_save_model_flags(flags, source);
        flags.add("prompt-len", prompt_len, 1, 1 << 20, "tokens in the fixed prompt");
        flags.add("answer-len", answer_len, 1, 1 << 20, "tokens to generate");
        flags.add("repeats", repeats, 1, 1000, "timed answers per method (median reported)");
        add_output_flags(flags, out);
        if (!flags.parse(argc, argv)) return 0;

        LoadedModel loaded = load_model(source, config, seed, prompt_len, answer_len);
        config = loaded.model.config();  // a checkpoint brings its own shape
        prompt_len = static_cast<int>(loaded.prompt.size());
        Transformer& model = loaded.model;
        const std::vector<int>& prompt = loaded.prompt;
        const std::string saved = save_model_files(source, loaded);

        // Both methods, timed on the same model in the same run.
        const AnswerTiming naive = time_answer(model, repeats, [&](const StepCallback& on_step) {
            return generate_naive(model, prompt, answer_len, on_step);
        });
        const AnswerTiming cached = time_answer(model, repeats, [&](const StepCallback& on_step) {
            return generate_cached(model, prompt, answer_len, on_step);
        });

        // One more run of each, keeping every step's logits to compare them.
        std::vector<int> naive_again, cached_again;
        const double max_diff =
            max_abs_difference(logits_per_step(
                                   [&](const StepCallback& cb) {
                                       return generate_naive(model, prompt, answer_len, cb);
                                   },
                                   naive_again),
                               logits_per_step(
                                   [&](const StepCallback& cb) {
                                       return generate_cached(model, prompt, answer_len, cb);
                                   },
                                   cached_again));
        const bool same_tokens = naive.tokens == cached.tokens;

        const double speedup = naive.answer_seconds / cached.answer_seconds;
        const double decode_step =
            median(std::vector<double>(cached.step_seconds.begin() + 1, cached.step_seconds.end()));

        Table steps({"step", "sequence length", "naive", "cached", "naive (ms)", "cached (ms)"});
        const int stride = std::max(1, answer_len / 6);
        for (int s = 0; s < answer_len; ++s)
            if (s % stride == 0 || s == answer_len - 1)
                steps.add_row({s, prompt_len + s, format_duration(naive.step_seconds[s]),
                               format_duration(cached.step_seconds[s]),
                               Cell(naive.step_seconds[s] * 1e3, 3),
                               Cell(cached.step_seconds[s] * 1e3, 3)});

        SvgPlot plot("Time per step: recomputing everything vs the KV cache",
                     "sequence length (tokens)", "time per step (ms)");
        std::vector<double> xs, naive_ms, cached_ms;
        for (int s = 0; s < answer_len; ++s) {
            xs.push_back(prompt_len + s);
            naive_ms.push_back(naive.step_seconds[s] * 1e3);
            cached_ms.push_back(cached.step_seconds[s] * 1e3);
        }
        plot.add_series("naive (no cache)", xs, naive_ms);
        plot.add_series("KV cache", xs, cached_ms);
        const std::string plot_path = plot.write(out.plot_dir + "/02_step_time.svg");

        Json results = Json()
                           .add("chapter", "02_kv_cache")
                           .add("model", config.describe())
                           .add("prompt_len", prompt_len)
                           .add("answer_len", answer_len)
                           .add("naive_answer_ms", naive.answer_seconds * 1e3)
                           .add("cached_answer_ms", cached.answer_seconds * 1e3)
                           .add("speedup", speedup)
                           .add("prefill_ms", cached.step_seconds[0] * 1e3)
                           .add("decode_step_ms", decode_step * 1e3)
                           .add("naive_positions", naive.positions)
                           .add("cached_positions", cached.positions)
                           .add("same_tokens", same_tokens)
                           .add("max_logit_difference", max_diff)
                           .add("tokens", cached.tokens)
                           .add("steps", steps)
                           .add("plot", plot_path);
        if (!source.checkpoint.empty()) results.add("weights", loaded.weights);
        const std::string naive_text = loaded.answer_text(naive.tokens);
        const std::string cached_text = loaded.answer_text(cached.tokens);
        if (loaded.tokenizer)
            results.add("prompt_text", loaded.prompt_text())
                .add("naive_text", naive_text)
                .add("cached_text", cached_text)
                .add("same_text", naive_text == cached_text);
        if (emit(out, results)) return 0;
        std::cout << "Chapter 02: the KV cache\n\n"
                  << "model: " << config.describe() << "\n";
        if (!source.checkpoint.empty()) std::cout << "weights: " << loaded.weights << "\n";
        std::cout << saved << "prompt: " << prompt_len << " tokens, answer: " << answer_len
                  << " tokens, median of " << repeats << " runs per method after a warm-up\n\n";
        steps.print(std::cout);
        std::cout << "\n"
                  << "prefill (" << prompt_len
                  << " tokens): " << format_duration(cached.step_seconds[0])
                  << ", then a decode step takes " << format_duration(decode_step) << " (median)\n"
                  << "token-positions processed: naive " << with_commas(naive.positions)
                  << " (n*p + n*(n-1)/2 = " << with_commas(naive_positions(prompt_len, answer_len))
                  << "), cached " << with_commas(cached.positions)
                  << " (p + n - 1 = " << with_commas(cached_positions(prompt_len, answer_len))
                  << ")\n"
                  << "same tokens: " << (same_tokens ? "yes" : "NO")
                  << "; largest logit difference over all " << answer_len << " steps: " << max_diff
                  << (max_diff == 0 ? " (identical to the last bit)" : "") << "\n"
                  << "plot: " << plot_path << "\n\n";
        if (loaded.tokenizer)
            std::cout << "prompt text: " << loaded.prompt_text() << "\n"
                      << "answer without the cache: " << naive_text << "\n"
                      << "answer with the cache:    " << cached_text << "\n"
                      << "same text: " << (naive_text == cached_text ? "yes" : "NO") << "\n\n";
        std::printf("%d-token answer: %s without the cache -> %s with it (%.1f x faster)\n",
                    answer_len, format_duration(naive.answer_seconds).c_str(),
                    format_duration(cached.answer_seconds).c_str(), speedup);
        return same_tokens ? 0 : 1;
    });
}
