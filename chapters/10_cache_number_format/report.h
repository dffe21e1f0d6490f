// What chapter 10 prints: what each format costs the answer and buys in
// memory and in the queue, the article's cache at 16 bits, a plot of memory
// against agreement, and the headline; or all of it as one JSON object.
#pragma once

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "../../common/kit/svg_plot.h"
#include "experiment.h"

namespace kv::ch10 {

inline std::string bits_of(NumberFormat f) {  // per number, scales included
    return fixed(8.0 * double(RowFormat{f, 1, kInt8Block}.bytes()) / kInt8Block,
                 f == NumberFormat::int8);
}

inline Table answer_table(const Results& r, bool long_context) {
    Table t({"format", "bits", "answers", "identical", "tokens agreeing (%)", "largest logit diff",
             "mean KL (1e-6 nats)", "largest KL (1e-6)"});
    for (const FormatResult& f : r.formats) {
        const Agreement& a = long_context ? f.long_context : f.demo;
        t.add_row({format_name(f.format), bits_of(f.format), a.answers, a.identical,
                   Cell(100 * a.agreement(), 1), Cell(a.largest_logit_difference, 5),
                   Cell(1e6 * a.mean_kl(), 3), Cell(1e6 * a.kl_max, 3)});
    }
    return t;
}

inline std::string long_positions(const Results& r) {  // "4,096"
    return with_commas(std::uint64_t(r.setup.long_context));
}

// A time printed with its unit (the README check then knows it varies), a number in JSON.
inline Cell timed(double value, const char* unit) {
    return Cell(fixed(value, 2) + unit, value);
}

inline Table memory_table(const Results& r) {
    Table t({"format", "bytes/token (formula)", "contiguous cache", "paged pool", "conversations",
             "x float32", "ttft p50", "decode step"});
    const double wide = r.at(NumberFormat::float32).conversations;
    for (const FormatResult& f : r.formats)
        t.add_row({format_name(f.format), f.bytes.formula, f.bytes.contiguous, f.bytes.paged,
                   f.conversations, Cell(f.conversations / wide, 2),
                   timed(f.queue.ttft_median, " s"),
                   r.setup.long_context ? timed(1e3 * f.decode_step_s, " ms") : Cell("-")});
    return t;
}

// The queue's first requests in the smaller pool: two rows per width.
inline Table engine_table(const Results& r) {
    Table t({"format", "side", "blocks", "ttft p50", "ttft p99", "preemptions",
             "finished in the simulator's order"});
    for (const FormatResult& f : r.formats)
        for (const bool engine : {false, true}) {
            const Summary& q = engine ? f.engine : f.simulated;
            t.add_row({format_name(f.format), engine ? "engine" : "simulator", f.engine_blocks,
                       timed(q.ttft_median, " s"), timed(q.ttft_p99, " s"), q.preemptions,
                       engine ? Cell(f.same_order ? "yes" : "no") : Cell("-")});
        }
    return t;
}

// Memory per token against the share of greedy tokens agreeing with float32.
inline std::string agreement_plot(const Results& r, const std::string& dir) {
    SvgPlot plot("The cache's number format: memory against the answer", "bytes of cache per token",
                 "greedy tokens agreeing with float32 (%)");
    for (const bool long_context : {false, true}) {
        if (long_context && r.setup.long_context == 0) continue;
        std::vector<double> x, y;
        for (const FormatResult& f : r.formats) {
            x.push_back(double(f.bytes.formula));
            y.push_back(100 * (long_context ? f.long_context : f.demo).agreement());
        }
        plot.add_series(long_context ? long_positions(r) + " positions"
                                     : "the queue's first " + std::to_string(r.setup.prompts),
                        x, y);
    }
    return plot.write(dir + "/10_memory_against_agreement.svg");
}

inline std::string headline(const Results& r) {
    const FormatResult &wide = r.at(NumberFormat::float32), &bf = r.at(NumberFormat::bfloat16),
                       &f16 = r.at(NumberFormat::float16), &i8 = r.at(NumberFormat::int8);
    auto times = [&](const FormatResult& f) {
        return fixed(double(f.conversations) / wide.conversations, 1) + " x";
    };
    auto same = [&](const FormatResult& f) { return std::to_string(f.demo.identical); };
    const std::string of = std::to_string(r.setup.prompts);
    return "cache number format: 16-bit holds " + times(bf) + " the conversations of float32 in " +
           std::to_string(r.setup.queue.kv_budget_mib) + " MiB; greedy tokens identical to " +
           "float32 for " + same(bf) + " (bfloat16) and " + same(f16) + " (float16) of " + of +
           " answers; 8-bit: " + times(i8) + ", " + same(i8) + " of " + of;
}

inline int report(const Results& r, const OutputOptions& out) {
    const Setup& s = r.setup;
    const Table answers = answer_table(r, false), long_answers = answer_table(r, true);
    const Table memory = memory_table(r), engine = engine_table(r);
    const std::string plot = agreement_plot(r, out.plot_dir), line = headline(r);
    const ResidentCache& a = r.article_16;
    Json json = Json()
                    .add("chapter", "10_cache_number_format")
                    .add("model", r.model)
                    .add("weights", r.weights)
                    .add("prompts", s.prompts)
                    .add("long_context", s.long_context)
                    .add("long_prompts", s.long_prompts)
                    .add("long_tail", s.long_tail)
                    .add("answers", answers)
                    .add("long_answers", long_answers)
                    .add("memory", memory)
                    .add("article_formula_bytes", a.formula)
                    .add("article_allocated_bytes", a.allocated)
                    .add("article_resident_growth_bytes", a.growth ? *a.growth : -1)
                    .add("kv_budget_mib", s.queue.kv_budget_mib)
                    .add("batch", s.queue.batch)
                    .add("engine_requests", r.engine_requests)
                    .add("engine_budget_mib", s.engine_budget_mib)
                    .add("engine_queue", engine)
                    .add("headline_side", "simulator")
                    .add("step_cost_source", r.pricing.cost.source)
                    .add("plot", plot)
                    .add("headline", line);
    if (r.has_text) json.add("prompt_text", r.prompt_text).add("answer_text", r.answer_text);
    if (emit(out, json)) return 0;

    std::cout << "Chapter 10: the cache's number format\n\n"
              << "model: " << r.model << " (" << r.weights << ")\n"
              << "\nWhat it costs the answer: the queue's first " << s.prompts
              << " requests answered greedily in float32, the same tokens fed to a cache of\n"
              << "each format (KL: of float32's next-token distribution from the format's):\n";
    answers.print(std::cout);
    if (r.has_text)
        std::cout << "the first request as text: " << r.prompt_text
                  << "\nfloat32's answer to it:    " << r.answer_text << "\n";
    if (s.long_context)
        std::cout << "\nThe same at " << long_positions(r) << " positions: " << s.long_prompts
                  << " answer" << (s.long_prompts > 1 ? "s" : "") << " over one shared "
                  << with_commas(std::uint64_t(s.long_prefix())) << "-token prefix, each after "
                  << "its own " << s.long_tail << " tokens (--long-prompts, --long-tail), so not "
                  << s.long_prompts << " independent prompts:\n",
            long_answers.print(std::cout);
    std::cout << "\nWhat it buys: bytes per token held by the engine against chapter 03's "
                 "formula, the queue's conversations\n"
              << "at once in a pool of " << s.queue.kv_budget_mib << " MiB (blocks of "
              << s.block_size << "), its median wait in the simulator (batch " << s.queue.batch
              << ", the same step\nprices at every width, "
              << (s.queue.cost_model == "analytic" ? "counted" : "this machine's calibration")
              << ")";
    if (s.long_context)
        std::cout << ",\nand a decode step at " << long_positions(r)
                  << " positions on the engine (median of the thread's CPU time)";
    std::cout << ":\n";
    memory.print(std::cout);
    if (r.engine_requests)
        std::cout << "\nThe queue's first " << r.engine_requests << " requests in a pool of "
                  << s.engine_budget_mib << " MiB, on the simulator (the same prices) and on the "
                  << "engine, whose pool\nholds each width (its steps timed once by the thread's "
                     "CPU time):\n",
            engine.print(std::cout);
    const double pages = a.growth ? double(*a.growth - std::int64_t(a.formula)) / a.page_size : 0;
    const Config article = article_shape();
    std::cout << "\nThe article's cache (" << article.n_layers << " layers, " << article.n_kv_heads
              << " KV heads, head size " << article.head_size()
              << ") at 16 bits for 4,096 positions: formula " << format_bytes(a.formula)
              << ", allocated " << format_bytes(a.allocated) << ", resident memory grew by "
              << (a.growth
                      ? with_commas(std::uint64_t(std::max<std::int64_t>(*a.growth, 0))) +
                            " bytes: the formula " + (pages < 0 ? "- " : "+ ") +
                            fixed(std::fabs(pages), 0) + " pages of " + format_bytes(a.page_size)
                      : "(not measurable here)")
              << "\nplot: " << visible(plot) << "\n\n"
              << line << "\n";
    return 0;
}

}  // namespace kv::ch10
