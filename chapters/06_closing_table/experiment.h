// The closing table's experiment: each figure the book answers to, beside
// the figure this run measured, read from the files the chapters saved with
// --save-json (`make run` saves them in build/results/). Part I's are the
// article's; Part II's (chapters 07 to 10) are set beside their papers'.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../common/kit/files.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/report.h"  // visible
#include "../../common/kit/saved_results.h"

namespace kv::ch06 {

// A results file is a few kilobytes; anything past this is not one.
inline constexpr std::uint64_t kMostResultBytes = 16 << 20;

// Reads a chapter's saved results; throws std::runtime_error naming the
// file (through visible(): one line, whatever the name holds) if it is
// missing, not a regular file, too large, or not one JSON object. Only a
// file that is not there gets the hint to run `make run`: a folder, a file
// that cannot be read or a malformed one has another cause, named as it is.
inline SavedResults load_saved_results(const std::string& path) {
    std::string text;
    try {
        text = read_file(path, "", kMostResultBytes);
    } catch (const FileError& e) {
        if (e.error_number == ENOENT)
            throw std::runtime_error(std::string(e.what()) + " (run `make run` first)");
        throw;
    }
    return SavedResults::parse(visible(path), text);
}

// load_saved_results(), except that a file that is not there gives nothing:
// Part II's chapters may not have run yet, and the article's table still
// prints. Any other fault is an error, as above.
inline std::optional<SavedResults> load_saved_results_if_there(const std::string& path) {
    std::string text;
    try {
        text = read_file(path, "", kMostResultBytes);
    } catch (const FileError& e) {
        if (e.error_number == ENOENT) return std::nullopt;
        throw;
    }
    return SavedResults::parse(visible(path), text);
}

// a / b, refused if it is too large to print (two finite figures can still
// divide past the doubles: 1 / 1e-320).
inline double checked_ratio(const std::string& what, double a, double b) {
    const double r = a / b;
    if (!std::isfinite(r)) throw std::runtime_error(what + " is too large to print");
    return r;
}

// The published figures the book answers to (README.md lists them).
struct Published {
    const char* claim;
    double value;
    const char* unit;
    const char* file;  // the chapter that measures it here
    const char* key;   // and the number in that chapter's JSON
    double scale;      // to convert our number to the published unit
};

inline const Published kPublished[] = {
    {"48-token answer without the cache", 567, "ms", "ch02", "naive_answer_ms", 1},
    {"48-token answer with the cache", 39, "ms", "ch02", "cached_answer_ms", 1},
    {"KV cache per token (32 layers, 8 KV heads, head size 128, 16-bit)", 128, "KiB", "ch03",
     "bytes_per_token", 1.0 / 1024},
    {"KV cache per 4,096-token conversation", 512, "MiB", "ch03", "bytes_per_conversation",
     1.0 / (1024 * 1024)},
    {"median time to first token, no cache", 452, "s", "ch05", "median_ttft_no_cache_s", 1},
    {"median time to first token, with the cache", 24, "s", "ch05", "median_ttft_cache_s", 1},
    {"median time to first token, continuous batching", 14, "s", "ch05", "median_ttft_continuous_s",
     1},
};

// One published figure and ours.
struct Figure {
    const Published& published;
    double measured;  // in the published unit
};

// A shape that must hold whatever the machine: how many times one figure
// is another, published and here.
struct Shape {
    const char* what;
    double published;  // NaN where nothing was published (printed "n/a")
    double measured;
};

// ---------------------------------------------------------------- Part II
// Chapters 07 to 10 go where servers went after the article. Each is set
// beside the figures its paper (or a server's documentation) reports, with the setup they came
// from; they are not the same measure as ours, and the report says how they differ.
struct Paper {
    const char* chapter;    // "07"
    const char* title;      // the chapter's subject
    const char* citation;   // the paper
    const char* published;  // its figures, each with its setup in parentheses
    const char* differs;    // what our figure measures that theirs does not
};

inline const Paper kPapers[] = {
    {"07", "the paged KV cache", "PagedAttention / vLLM (Kwon et al., SOSP 2023)",
     "existing systems store actual token states in only 20.4 % to 38.2 % of their KV cache "
     "memory (the paper's section 1, Fig. 2); vLLM serves 2-4 x the throughput at the same "
     "latency as FasterTransformer and Orca (OPT-13B/66B/175B and LLaMA-13B on NVIDIA A100 GPUs, "
     "ShareGPT and Alpaca workloads)",
     "ours counts the positions reserved and filled in chapter 07's queue (one small model, its "
     "own prompt and answer lengths, a budget in MiB), theirs the GPU memory of real servers on "
     "their traces; and ours stops at how many more conversations fit, where theirs measures the "
     "throughput that the larger batches buy"},
    {"08", "sharing the cache", "SGLang / RadixAttention (Zheng et al., NeurIPS 2024)",
     "up to 6.4 x the throughput of state-of-the-art systems, with cache hit rates from 50 % to "
     "99 % across its benchmarks (Llama-2-7B on an A10G; agent, reasoning, few-shot, JSON, RAG "
     "and multi-turn chat workloads)",
     "our share is of the prompt tokens of chapter 08's one workload (requests that open with a "
     "shared system prompt), theirs a hit rate in each of their benchmarks; and our gain is the "
     "median wait in one queue of requests arriving at once, theirs throughput"},
    {"09", "steps that mix prefill and decode", "Sarathi-Serve (Agrawal et al., OSDI 2024)",
     "chunked prefills with stall-free batching serve 2.6 x the load of vLLM within a P99 "
     "time-between-tokens target (Mistral-7B on one A100; up to 3.7 x for Yi-34B on two A100s)",
     "they hold the p99 target and measure the load served; we hold the load (one queue of "
     "requests arriving at once) and measure the p99 time between tokens, and the median wait "
     "the chunks cost or save"},
    {"10", "the cache's number format",
     "vLLM's documentation (Quantized KV Cache, v0.11.2); KIVI (Liu et al., ICML 2024)",
     "an FP8 cache allows \"approximately double the amount of space for KV cache allocation\", "
     "with \"no latency improvements\" until dequantization and attention are fused (vLLM: FP8 "
     "against a 16-bit cache, one scale per tensor, on GPUs); 2-bit keys (grouped per channel) "
     "and values (per token) keep \"almost the same quality\" with 2.6 x less peak memory, "
     "weights included, up to 4 x larger batches and 2.35-3.47 x the throughput (KIVI: Llama-2, "
     "Falcon and Mistral on GPUs, LM-Eval and LongBench tasks)",
     "ours narrows a float32 cache to 16 and 8.5 bits on a random model and counts the greedy "
     "tokens that stay float32's, where theirs narrow 16-bit caches of trained models and score "
     "tasks; our wait is the simulator's at the same step prices for every width (this engine "
     "widens each number before float32 kernels), theirs comes from GPU kernels"},
};

// What chapter 07 saved: how much of the reserved memory held a token, how
// many conversations fit, and the median wait.
struct PagedFigures {
    double kv_budget_mib = 0;
    double conversations_reserved = 0, conversations_paged = 0;
    double conversations_gain = 0;   // paged / reserved
    double filled_reserved_pct = 0;  // 100 - "unused (%)" of the fit table's reserved row
    double block_size = 0;
    double filled_paged_pct = 0;  // ... of its paged row at block_size
    double ttft_reserved_s = 0, ttft_paged_s = 0;
    std::string side, headline;  // side: "simulator" or "engine"
};

// What chapter 08 saved: the share of prompt tokens the cache served, the
// median wait without and with it, and the memory sharing did not copy.
struct SharingFigures {
    double prompt_share_from_cache = 0;  // 0 to 1
    double ttft_without_s = 0, ttft_with_s = 0;
    double ttft_gain = 0;  // without / with
    double memory_not_copied_bytes = 0;
    std::string side, headline;
};

// What chapter 09 saved: the p99 time between tokens and the median wait,
// prefill first and chunked.
struct ChunkingFigures {
    double chunk = 0;
    double tbt_p99_prefill_first_s = 0, tbt_p99_chunked_s = 0;
    double tbt_gain = 0;  // prefill first / chunked
    double ttft_prefill_first_s = 0, ttft_chunked_s = 0;
    std::string workload, side, headline;
};

// What chapter 10 saved: the conversations its pool held at each width,
// and how many of its answers kept every float32 token.
struct FormatFigures {
    double kv_budget_mib = 0;
    double conversations_float32 = 0, conversations_16bit = 0, conversations_int8 = 0;
    double answers = 0;
    double identical_bfloat16 = 0, identical_float16 = 0, identical_int8 = 0;
    std::string side, headline;
};

// Each is empty where the chapter's file is not there.
struct PartTwo {
    std::optional<PagedFigures> paged;        // ch07.json
    std::optional<SharingFigures> sharing;    // ch08.json
    std::optional<ChunkingFigures> chunking;  // ch09.json
    std::optional<FormatFigures> format;      // ch10.json
};

// The fit table's row named `memory` (and with `block_size`, if above
// zero); every row's "unused (%)" is checked on the way.
inline const SavedResults& fit_row(const SavedResults& ch07, const std::string& file,
                                   const std::string& memory, double block_size) {
    const SavedResults* found = nullptr;
    for (const SavedResults& row : ch07.rows("fit")) {
        row.number_between("unused (%)", 0, 100);
        const bool named = row.has("memory") && row.text("memory") == memory;
        if (named && !found &&
            (block_size == 0 ||
             (row.has_number("block size") && row.number("block size") == block_size)))
            found = &row;
    }
    if (!found) {
        std::string what = file;
        what += ": \"fit\" has no row \"" + memory + "\"";
        if (block_size > 0) what += " with block size " + fixed(block_size, 0);
        throw std::runtime_error(what);
    }
    return *found;
}

inline PagedFigures read_paged(const SavedResults& ch07, const std::string& file) {
    PagedFigures f;
    f.kv_budget_mib = ch07.positive_number("kv_budget_mib");
    f.conversations_reserved = ch07.positive_number("conversations_reserved");
    f.conversations_paged = ch07.positive_number("conversations_paged");
    f.conversations_gain = checked_ratio(file + ": conversations_paged / conversations_reserved",
                                         f.conversations_paged, f.conversations_reserved);
    f.filled_reserved_pct =
        100 - fit_row(ch07, file, "reserve the whole context", 0).number("unused (%)");
    f.block_size = ch07.positive_number("block_size");
    f.filled_paged_pct = 100 - fit_row(ch07, file, "paged", f.block_size).number("unused (%)");
    f.ttft_reserved_s = ch07.positive_number("ttft_median_reserved_s");
    f.ttft_paged_s = ch07.positive_number("ttft_median_paged_s");
    f.side = ch07.text("headline_side");
    f.headline = ch07.text("headline");
    return f;
}

inline SharingFigures read_sharing(const SavedResults& ch08, const std::string& file) {
    SharingFigures f;
    f.prompt_share_from_cache = ch08.number_between("prompt_share_from_cache", 0, 1);
    f.ttft_without_s = ch08.positive_number("ttft_median_without_s");
    f.ttft_with_s = ch08.positive_number("ttft_median_with_s");
    f.ttft_gain = checked_ratio(file + ": ttft_median_without_s / ttft_median_with_s",
                                f.ttft_without_s, f.ttft_with_s);
    // Zero where no two requests shared a block; never below.
    f.memory_not_copied_bytes = ch08.non_negative_number("memory_not_copied_bytes");
    f.side = ch08.text("headline_side");
    f.headline = ch08.text("headline");
    return f;
}

inline ChunkingFigures read_chunking(const SavedResults& ch09, const std::string& file) {
    ChunkingFigures f;
    f.chunk = ch09.positive_number("chunk");
    f.tbt_p99_prefill_first_s = ch09.positive_number("tbt_p99_prefill_first_s");
    f.tbt_p99_chunked_s = ch09.positive_number("tbt_p99_chunked_s");
    f.tbt_gain = checked_ratio(file + ": tbt_p99_prefill_first_s / tbt_p99_chunked_s",
                               f.tbt_p99_prefill_first_s, f.tbt_p99_chunked_s);
    f.ttft_prefill_first_s = ch09.positive_number("ttft_median_prefill_first_s");
    f.ttft_chunked_s = ch09.positive_number("ttft_median_chunked_s");
    f.workload = ch09.text("headline_workload");
    f.side = ch09.text("headline_side");
    f.headline = ch09.text("headline");
    return f;
}

// The row of `table` whose "format" is `format`.
inline const SavedResults& format_row(const SavedResults& ch10, const std::string& file,
                                      const std::string& table, const std::string& format) {
    for (const SavedResults& row : ch10.rows(table))
        if (row.has("format") && row.text("format") == format) return row;
    throw std::runtime_error(file + ": \"" + table + "\" has no row \"" + format + "\"");
}

inline FormatFigures read_format(const SavedResults& ch10, const std::string& file) {
    FormatFigures f;
    f.kv_budget_mib = ch10.positive_number("kv_budget_mib");
    auto fit = [&](const char* format) {
        return format_row(ch10, file, "memory", format).positive_number("conversations");
    };
    f.conversations_float32 = fit("float32");
    f.conversations_16bit = fit("bfloat16");
    f.conversations_int8 = fit("int8");
    f.answers = format_row(ch10, file, "answers", "float32").positive_number("answers");
    auto same = [&](const char* format) {
        return format_row(ch10, file, "answers", format).number_between("identical", 0, f.answers);
    };
    f.identical_bfloat16 = same("bfloat16");
    f.identical_float16 = same("float16");
    f.identical_int8 = same("int8");
    f.side = ch10.text("headline_side");
    f.headline = ch10.text("headline");
    return f;
}

struct Results {
    std::vector<Figure> figures;  // in the order of kPublished
    std::vector<Shape> shapes;
    PartTwo part_two;
    std::string results_dir;  // where the files were read, for the hint to run a chapter
};

// "<dir>/chNN.json", as the report names it.
inline std::string results_file(const std::string& dir, const char* chapter) {
    std::string path = dir;
    path += "/ch";
    path += chapter;
    path += ".json";
    return path;
}

struct Experiment {
    std::string results_dir = "build/results";  // where `make run` saved the chapters' JSON
    static constexpr bool draws_plots = false;  // so its program lists no --plot-dir

    void add_flags(Flags& flags) {
        flags.add("results-dir", results_dir,
                  "folder holding ch02.json, ch03.json, ch05.json (and ch07 to ch10's)");
    }

    void check() const {}  // a missing or unreadable file is found by run()

    // Each chapter's file is read once.
    Results run() const {
        std::map<std::string, SavedResults> saved;
        std::map<std::string, double> published, ours;  // by key in a chapter's JSON
        Results r;
        for (const Published& p : kPublished) {
            if (!saved.count(p.file))
                saved.emplace(p.file, load_saved_results(results_dir + "/" + p.file + ".json"));
            // Every figure is a time or a size: finite and above zero, or
            // the ratios below would print "nan x" or "-inf x".
            const double measured = saved.at(p.file).positive_number(p.key) * p.scale;
            published[p.key] = p.value;
            ours[p.key] = measured;
            r.figures.push_back({p, measured});
        }
        // Two finite figures can still divide past the doubles (1 / 1e-320).
        auto ratio = [&](const char* what, const std::string& slow, const std::string& fast) {
            const double here = ours[slow] / ours[fast];
            if (!std::isfinite(here))
                throw std::runtime_error(std::string(what) + ": " + slow + " / " + fast +
                                         " is too large to print");
            r.shapes.push_back({what, published[slow] / published[fast], here});
        };
        ratio("cache speed-up on one answer", "naive_answer_ms", "cached_answer_ms");
        ratio("median wait: no cache / cache", "median_ttft_no_cache_s", "median_ttft_cache_s");
        ratio("median wait: cache / continuous batching", "median_ttft_cache_s",
              "median_ttft_continuous_s");

        // Part II: each chapter's file if it is there.
        r.results_dir = results_dir;
        auto part_two = [&](const char* chapter, auto read, auto& figures) {
            const std::string path = results_file(results_dir, chapter);
            if (auto saved = load_saved_results_if_there(path))
                figures = read(*saved, visible(path));
        };
        part_two("07", read_paged, r.part_two.paged);
        part_two("08", read_sharing, r.part_two.sharing);
        part_two("09", read_chunking, r.part_two.chunking);
        part_two("10", read_format, r.part_two.format);
        return r;
    }
};

}  // namespace kv::ch06
