// What chapter 10 prints: what each format costs the answer and buys in
// memory, in the queue and in a step's time, the article's cache at 16
// bits, a plot of memory against agreement, and the headline.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/kit/svg_plot.h"
#include "../../common/lab/queue_flags.h"  // step_cost_json
#include "experiment.h"

namespace kv::ch10 {

inline std::string bits_of(NumberFormat f) {  // per number, scales included
    return fixed(8.0 * double(RowFormat{f, 1, kInt8Block}.bytes()) / kInt8Block,
                 f == NumberFormat::int8);
}

// A measured value printed with its unit (the README check then knows it varies).
inline Cell timed(double value, const char* unit, int decimals = 2) {
    return Cell(fixed(value, decimals) + unit, value);
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

// The long context's decode steps: the bytes each reads, its time, and the
// two rates that bound it.
inline Table step_table(const Results& r) {
    const std::string b = std::to_string(kBatch);
    Table t({"format", "weights read", "cache read (1)", "step (1)", "x float32 (1)",
             "cache read (" + b + ")", "step (" + b + ")", "x float32 (" + b + ")",
             "kernels, rows in L1/L2", "memory", "limit"});
    const FormatResult& wide = r.at(NumberFormat::float32);
    for (const FormatResult& f : r.formats)
        t.add_row({format_name(f.format), bytes_cell(f.reads_one.weights),
                   bytes_cell(f.reads_one.cache), timed(1e3 * f.step_one_s, " ms"),
                   timed(f.step_one_s / wide.step_one_s, " x"), bytes_cell(f.reads_batch.cache),
                   timed(1e3 * f.step_batch_s, " ms"),
                   timed(f.step_batch_s / wide.step_batch_s, " x"),
                   timed(f.kernel_bytes_per_s / 1e9, " GB/s", 1),
                   timed(f.read_bytes_per_s / 1e9, " GB/s", 1), limit_name(f.limit(kBatch))});
    return t;
}

// A narrower format's step against the book's expectation (step_reads.h),
// and where it falls short, the rate that held it back.
inline std::string short_of_target(const Results& r, const FormatResult& f, int batch) {
    const FormatResult& wide = r.at(NumberFormat::float32);
    const double ratio =
        batch == 1 ? f.step_one_s / wide.step_one_s : f.step_batch_s / wide.step_batch_s;
    const double target = target_ratio(f.format, batch);
    if (ratio <= target) return "";
    const StepReads& reads = batch == 1 ? f.reads_one : f.reads_batch;
    return std::string(format_name(f.format)) + ", " + std::to_string(batch) +
           " sequences: " + fixed(ratio, 2) + " x float32, above " + fixed(target, 2) +
           " x; floors: kernels " + fixed(1e3 * double(reads.cache) / f.kernel_bytes_per_s, 2) +
           " ms, reads " + fixed(1e3 * double(reads.total()) / f.read_bytes_per_s, 2) +
           " ms: the " + limit_name(f.limit(batch)) + " set the pace";
}

// Memory per token against the share of greedy tokens agreeing with float32.
inline std::string agreement_plot(const Results& r, const std::string& dir) {
    SvgPlot plot("The cache's number format: memory against the answer", "bytes of cache per token",
                 "greedy tokens agreeing with float32 (%)");
    for (const bool long_context : {false, true}) {
        if (long_context && r.setup.long_context == 0) continue;
        std::vector<double> x, y;
        std::vector<std::string> names;
        for (const FormatResult& f : r.formats) {
            x.push_back(double(f.bytes.formula));
            y.push_back(100 * (long_context ? f.long_context : f.demo).agreement());
            names.push_back(format_name(f.format));
        }
        // Each format is a case of its own: named points, no line between them.
        plot.add_cases(long_context ? with_commas(r.setup.long_context) + " positions"
                                    : concat("the queue's first ", r.setup.prompts),
                       x, y, names);
    }
    return plot.write(dir + "/10_memory_against_agreement.svg");
}

// Returns the exit status: 1 if the engine finished the requests in another
// order than the simulator (it makes the simulator's decisions: a bug).
inline int report(const Results& r, const OutputOptions& out) {
    const Setup& s = r.setup;
    const std::string positions = with_commas(s.long_context);
    const FormatResult& wide = r.at(NumberFormat::float32);
    Table memory({"format", "bytes/token (formula)", "contiguous cache", "paged pool",
                  "conversations", "x float32", "ttft p50"});
    Table engine({"format", "side", "blocks", "ttft p50", "ttft p99", "preemptions",
                  "finished in the simulator's order"});
    for (const FormatResult& f : r.formats) {
        memory.add_row({format_name(f.format), f.bytes.formula, f.bytes.contiguous, f.bytes.paged,
                        f.conversations, Cell(double(f.conversations) / wide.conversations, 2),
                        timed(f.queue.ttft_median, " s")});
        for (const bool on_engine : {false, true}) {
            const Summary& q = on_engine ? f.engine : f.simulated;
            engine.add_row({format_name(f.format), on_engine ? "engine" : "simulator",
                            f.engine_blocks, timed(q.ttft_median, " s"), timed(q.ttft_p99, " s"),
                            q.preemptions, on_engine ? yes_no(f.same_order) : Cell("-")});
        }
    }

    Findings f("Chapter 10: the cache's number format");
    f.line("model", "model", r.model)
        .line("weights", "weights", outside_text(r.weights))
        .data_raw("step_cost", step_cost_json(r.pricing).str())
        .text("")
        .table("answers",
               concat("What it costs the answer: the queue's first ", s.prompts,
                      " requests answered greedily in float32, the same tokens fed to a cache of\n"
                      "each format (KL: of float32's next-token distribution from the format's):"),
               answer_table(r, false));
    if (r.has_text)
        f.line("prompt_text", "the first request as text", outside_text(r.prompt_text))
            .line("answer_text", "float32's answer to it", outside_text(r.answer_text));
    if (s.long_context)
        f.text("").table(
            "long_answers",
            concat("The same at ", positions, " positions: ", s.long_prompts,
                   " answers over one shared ", with_commas(s.long_prefix()),
                   "-token prefix, each after its own ", s.long_tail,
                   " tokens (--long-prompts, --long-tail), so not independent prompts:"),
            answer_table(r, true));
    f.text("").table(
        "memory",
        concat("What it buys in memory: bytes per token held by the engine against chapter 03's "
               "formula, the queue's conversations\nat once in a pool of ",
               s.queue.kv_budget_mib, " MiB (blocks of ", s.block_size,
               "), its median wait in the simulator (batch ", s.queue.batch,
               ", the same step prices at every width, ",
               s.queue.cost_model == "analytic" ? "counted" : "this machine's calibration", "):"),
        memory);
    if (s.long_context) {
        f.text("").table(
            "steps",
            concat("What it buys in time: a decode step of 1 and of ", kBatch, " sequences at ",
                   positions,
                   " positions (median thread CPU time, one core), its bytes,\nand the rates of "
                   "its two floors: the kernels' with the rows in L1/L2, memory's:"),
            step_table(r));
        for (const FormatResult& format : r.formats)
            for (const int batch : {1, kBatch})
                if (format.format != NumberFormat::float32)
                    if (const std::string why = short_of_target(r, format, batch); !why.empty())
                        f.text(why);
    }
    if (r.engine_requests)
        f.text("").table(
            "engine_queue",
            concat("The queue's first ", r.engine_requests, " requests in a pool of ",
                   s.engine_budget_mib,
                   " MiB, on the simulator (the same prices) and on the engine, whose pool\n"
                   "holds each width (its steps timed once by the thread's CPU time):"),
            engine);
    if (s.long_context) {
        const ResidentCache& a = r.article_16;
        const Config article = article_shape();
        const double pages =
            a.growth ? double(*a.growth - std::int64_t(a.formula)) / a.page_size : 0;
        f.text("").line(
            "article_resident_growth_bytes",
            concat("The article's cache (", article.n_layers, " layers, ", article.n_kv_heads,
                   " KV heads, head size ", article.head_size(), ") at 16 bits for ", positions,
                   " positions: formula ", format_bytes(a.formula), ", allocated ",
                   format_bytes(a.allocated), ", resident memory grew by"),
            a.growth
                ? Cell(concat(with_commas(std::max<std::int64_t>(*a.growth, 0)),
                              " bytes: the formula ", pages < 0 ? "- " : "+ ",
                              fixed(std::fabs(pages), 0), " pages of ", format_bytes(a.page_size)),
                       double(*a.growth))
                : Cell("(not measurable here)", -1.0));
    }
    // The headline's figures, each saved under its own key for chapter 06.
    const FormatResult &bf = r.at(NumberFormat::bfloat16), &f16 = r.at(NumberFormat::float16),
                       &i8 = r.at(NumberFormat::int8);
    auto fit_gain = [&](const FormatResult& x) {
        return fixed(double(x.conversations) / wide.conversations, 1) + " x";
    };
    const std::string of = std::to_string(s.prompts);
    f.text("")
        .line("plot", "plot", outside_text(agreement_plot(r, out.plot_dir)))
        .data("kv_budget_mib", s.queue.kv_budget_mib)
        .data("prompts", s.prompts)
        .data("conversations_float32", wide.conversations)
        .data("conversations_16bit", bf.conversations)
        .data("conversations_int8", i8.conversations)
        .data("identical_bfloat16", bf.demo.identical)
        .data("identical_float16", f16.demo.identical)
        .data("identical_int8", i8.demo.identical)
        .headline(concat("cache number format: 16-bit holds ", fit_gain(bf),
                         " the conversations of float32 in ", s.queue.kv_budget_mib,
                         " MiB; greedy tokens identical to float32 for ", bf.demo.identical,
                         " (bfloat16) and ", f16.demo.identical, " (float16) of ", of,
                         " answers; 8-bit: ", fit_gain(i8), ", ", i8.demo.identical, " of ", of));
    emit(out, f);
    const bool agree =
        r.engine_requests == 0 || std::all_of(r.formats.begin(), r.formats.end(),
                                              [](const FormatResult& x) { return x.same_order; });
    return agree ? 0 : 1;
}

}  // namespace kv::ch10
