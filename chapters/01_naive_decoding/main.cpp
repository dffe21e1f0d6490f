// Chapter 01: naive decoding. Generates one answer by recomputing the whole
// sequence for every new token, and shows what that costs.
#include <iostream>

#include "../../common/kit/model_flags.h"
#include "../../common/real_weights/model_source.h"
#include "../../common/kit/output.h"
#include "../../common/kit/program.h"
#include "../../common/kit/report.h"
#include "../../common/kit/svg_plot.h"
#include "naive_decoding.h"

using namespace kv;

int main(int argc, char** argv) {
    return run_program("01_naive_decoding", [&] {
        Config config;           // the book's demo model (common/core/config.h)
        std::uint64_t seed = 1;  // seed of the weights and the prompt
        int prompt_len = 16;     // tokens in the fixed prompt
        int answer_len = 48;     // tokens to generate, as in the published figure
        int repeats = 5;         // timed answers after one warm-up; medians are reported
        ModelSource source;      // random weights, or a checkpoint and tokenizer
        OutputOptions out;

        Flags flags("01_naive_decoding",
                    "Naive decoding: recompute the whole sequence for every new token.");
        add_model_flags(flags, config, seed);
        add_model_source_flags(flags, source);
        flags.add("prompt-len", prompt_len, 1, 1 << 20, "tokens in the fixed prompt");
        flags.add("answer-len", answer_len, 1, 1 << 20, "tokens to generate");
        flags.add("repeats", repeats, 1, 1000, "timed answers (median reported)");
        add_output_flags(flags, out);
        if (!flags.parse(argc, argv)) return 0;

        LoadedModel loaded = load_model(source, config, seed, prompt_len, answer_len);
        config = loaded.model.config();  // a checkpoint brings its own shape
        prompt_len = static_cast<int>(loaded.prompt.size());
        Transformer& model = loaded.model;
        const std::vector<int>& prompt = loaded.prompt;
        const AnswerTiming naive = time_answer(model, repeats, [&](const StepCallback& on_step) {
            return generate_naive(model, prompt, answer_len, on_step);
        });

        // One row per few steps: each step runs a longer sequence than the last.
        Table steps({"step", "sequence length", "time", "time (ms)"});
        const int stride = std::max(1, answer_len / 6);
        for (int s = 0; s < answer_len; ++s)
            if (s % stride == 0 || s == answer_len - 1)
                steps.add_row({s, prompt_len + s, format_duration(naive.step_seconds[s]),
                               Cell(naive.step_seconds[s] * 1e3, 3)});

        const std::uint64_t predicted = naive_positions(prompt_len, answer_len);
        SvgPlot plot("Naive decoding: every step recomputes the whole sequence",
                     "sequence length (tokens)", "time per step (ms)");
        std::vector<double> xs, ys;
        for (int s = 0; s < answer_len; ++s) {
            xs.push_back(prompt_len + s);
            ys.push_back(naive.step_seconds[s] * 1e3);
        }
        plot.add_series("naive step", xs, ys);
        const std::string plot_path = plot.write(out.plot_dir + "/01_naive_step_time.svg");

        Json results = Json()
                           .add("chapter", "01_naive_decoding")
                           .add("model", config.describe())
                           .add("parameters", config.parameter_count())
                           .add("prompt_len", prompt_len)
                           .add("answer_len", answer_len)
                           .add("naive_answer_ms", naive.answer_seconds * 1e3)
                           .add("positions_processed", naive.positions)
                           .add("positions_predicted", predicted)
                           .add("tokens", naive.tokens)
                           .add("steps", steps)
                           .add("plot", plot_path);
        if (!source.checkpoint.empty()) results.add("weights", loaded.weights);
        if (loaded.tokenizer)
            results.add("prompt_text", loaded.prompt_text())
                .add("answer_text", loaded.answer_text(naive.tokens));
        if (emit(out, results)) return 0;
        std::cout << "Chapter 01: naive decoding\n\n"
                  << "model: " << config.describe() << "\n";
        if (!source.checkpoint.empty()) std::cout << "weights: " << loaded.weights << "\n";
        std::cout << "parameters: " << with_commas(config.parameter_count()) << " ("
                  << format_bytes(config.weight_bytes()) << " of float32 weights)\n"
                  << "prompt: " << prompt_len << " tokens, answer: " << answer_len
                  << " tokens, median of " << repeats << " runs after a warm-up\n\n"
                  << "Each step runs the whole sequence through the model again:\n";
        steps.print(std::cout);
        std::cout << "\ntoken-positions processed: " << with_commas(naive.positions) << " for "
                  << answer_len << " new tokens\n"
                  << "  predicted: n*p + n*(n-1)/2 = " << answer_len << "*" << prompt_len << " + "
                  << answer_len << "*" << answer_len - 1 << "/2 = " << with_commas(predicted)
                  << (predicted == naive.positions ? " (matches)" : " (DOES NOT MATCH)") << "\n"
                  << "plot: " << plot_path << "\n\n";
        if (loaded.tokenizer)
            std::cout << "prompt text: " << loaded.prompt_text() << "\n"
                      << "answer text: " << loaded.answer_text(naive.tokens) << "\n\n";
        std::cout << answer_len
                  << "-token answer without the cache: " << format_duration(naive.answer_seconds)
                  << "\n";
        return 0;
    });
}
