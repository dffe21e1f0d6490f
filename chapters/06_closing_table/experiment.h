// The closing table's experiment: each figure the book answers to, beside
// the figure this run measured, read from the files the chapters saved with
// --save-json (`make run` saves them in build/results/). Part I's are the
// article's; Part II's (chapters 07 to 11) are set beside their papers'.
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
#include "../../common/kit/report.h"
#include "../../common/kit/saved_results.h"

namespace kv::ch06 {

// A results file is a few kilobytes; anything past this is not one.
inline constexpr std::uint64_t kMostResultBytes = 16 << 20;

// "<dir>/chNN.json", as the report names it.
inline std::string results_file(const std::string& dir, const std::string& chapter) {
    return dir + "/ch" + chapter + ".json";
}

// The chapter that writes "chNN.json", as its JSON names it: "02" -> "02_kv_cache".
inline std::string chapter_writing(const std::string& chapter) {
    for (const std::string name :
         {"02_kv_cache", "03_memory_arithmetic", "05_queue_simulation", "07_paged_kv_cache",
          "08_prefix_caching", "09_chunked_prefill", "10_cache_number_format", "11_second_tier"})
        if (name.starts_with(chapter + "_")) return name;
    throw std::logic_error("no chapter writes ch" + chapter + ".json");
}

// Chapter `chapter`'s saved results at `path`, or nothing if the file is
// not there and not `required` (Part II's chapters may not have run). Any
// fault (another chapter's file or format among them) throws, naming the
// file; a missing required file with the hint to run `make run`.
inline std::optional<SavedResults> read_saved(const std::string& path, const std::string& chapter,
                                              bool required) {
    std::string text;
    try {
        text = read_file(path, "", kMostResultBytes);
    } catch (const FileError& e) {
        if (e.error_number != ENOENT) throw;
        if (!required) return std::nullopt;
        throw std::runtime_error(std::string(e.what()) + " (run `./build/ch" + chapter +
                                 " --save-json " + excerpt(path, kMostQuotedPath) +
                                 "` first, or `make run`)");
    }
    SavedResults saved = SavedResults::parse(excerpt(path, kMostQuotedPath), text);
    saved.require_origin(chapter_writing(chapter));
    return saved;
}
inline SavedResults load_saved_results(const std::string& path, const std::string& chapter) {
    return *read_saved(path, chapter, true);
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
    const char* chapter;  // "02": the chapter that measures it here
    const char* key;      // and the number in that chapter's JSON
    double scale;         // to convert our number to the published unit
};

inline const Published kPublished[] = {
    {"48-token answer without the cache", 567, "ms", "02", "naive_answer_ms", 1},
    {"48-token answer with the cache", 39, "ms", "02", "cached_answer_ms", 1},
    {"KV cache per token (32 layers, 8 KV heads, head size 128, 16-bit)", 128, "KiB", "03",
     "bytes_per_token", 1.0 / 1024},
    {"KV cache per 4,096-token conversation", 512, "MiB", "03", "bytes_per_conversation",
     1.0 / (1024 * 1024)},
    {"median time to first token, no cache", 452, "s", "05", "median_ttft_no_cache_s", 1},
    {"median time to first token, with the cache", 24, "s", "05", "median_ttft_cache_s", 1},
    {"median time to first token, continuous batching", 14, "s", "05", "median_ttft_continuous_s",
     1},
};

// A shape that must hold whatever the machine: how many times one figure
// is another, published and here.
struct Shape {
    const char* what;
    double published, measured;
};

// The published figure under `key` (one of kPublished's).
inline double published_value(const std::string& key) {
    for (const Published& p : kPublished)
        if (key == p.key) return p.value;
    throw std::logic_error("no published figure " + key);
}

// ---------------------------------------------------------------- Part II
// Chapters 07 to 11 go where servers went after the article. Each is set
// beside the figures its paper (or a server's documentation) reports, with
// the setup they came from; they are not the same measure as ours, and the
// report says how they differ.
struct Paper {
    const char* chapter;    // "07"
    const char* title;      // the chapter's subject
    const char* citation;   // the paper
    const char* published;  // its figures, each with its setup in parentheses
    const char* differs;    // what our figure measures that theirs does not
    const char* this_run;   // this run's figures: "{key}" is the saved number, "{a/b}" a / b
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
     "throughput that the larger batches buy",
     "{reserved_held_share} of the positions reserved for whole contexts held a token (paged in "
     "blocks of {block_size}: {paged_held_share}); conversations that fit in {kv_budget_mib} MiB, "
     "paged / reserved: {conversations_paged/conversations_reserved} ({conversations_paged} / "
     "{conversations_reserved})"},
    {"08", "sharing the cache", "SGLang / RadixAttention (Zheng et al., NeurIPS 2024)",
     "up to 6.4 x the throughput of state-of-the-art systems, with cache hit rates from 50 % to "
     "99 % across its benchmarks (Llama-2-7B on an A10G; agent, reasoning, few-shot, JSON, RAG "
     "and multi-turn chat workloads)",
     "our share is of the prompt tokens of chapter 08's one workload (requests that open with a "
     "shared system prompt), theirs a hit rate in each of their benchmarks; and our gain is the "
     "median wait in one queue of requests arriving at once, theirs throughput",
     "{prompt_share_from_cache} of prompt tokens served from the cache; median time to first "
     "token, without / with the cache: {ttft_median_without_s/ttft_median_with_s} "
     "({ttft_median_without_s} / {ttft_median_with_s}); {memory_not_copied_bytes} of KV cache not "
     "copied"},
    {"09", "steps that mix prefill and decode", "Sarathi-Serve (Agrawal et al., OSDI 2024)",
     "chunked prefills with stall-free batching serve 2.6 x the load of vLLM within a P99 "
     "time-between-tokens target (Mistral-7B on one A100; up to 3.7 x for Yi-34B on two A100s)",
     "they hold the p99 target and measure the load served; we hold the load (one queue of "
     "requests arriving at once) and measure the p99 time between tokens, and the median wait "
     "the chunks cost or save",
     "{long_prompt}-token prompts, chunks of {chunk}: p99 time between tokens, prefill first / "
     "chunked: {tbt_p99_prefill_first_s/tbt_p99_chunked_s} ({tbt_p99_prefill_first_s} -> "
     "{tbt_p99_chunked_s}); median time to first token {ttft_median_prefill_first_s} -> "
     "{ttft_median_chunked_s}"},
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
     "widens each number before float32 kernels), theirs comes from GPU kernels",
     "conversations that fit in {kv_budget_mib} MiB, 16-bit / float32: "
     "{conversations_16bit/conversations_float32} ({conversations_16bit} / "
     "{conversations_float32}), int8: {conversations_int8/conversations_float32} "
     "({conversations_int8}); answers keeping every float32 token: bfloat16 "
     "{identical_bfloat16}, float16 {identical_float16}, int8 {identical_int8} of {prompts}"},
    {"11", "a second tier", "CachedAttention (Gao et al., USENIX ATC 2024)",
     "time to first token down by up to 87 %, prompt prefilling throughput up to 7.8 x and "
     "end-to-end inference cost down by up to 70 % for multi-turn conversations, their KV caches "
     "kept in host memory and on disks and reused across turns (73 % of ShareGPT's conversations "
     "have several turns)",
     "ours reads one CPU engine's blocks back from a file on this machine's disk, in the wait of "
     "one queue whose turns are each sent when the turn before has finished, priced at the "
     "bandwidth this run measured; theirs overlaps "
     "the loading with a GPU's computation layer by layer and saves asynchronously, on trained "
     "models and real conversations, and 87 % is its best case",
     "{returning_share_reloaded} of returning prompt tokens read back from a tier of {tier_mib} "
     "MiB instead of computed again; median time to first token, without / with the tier: "
     "{ttft_median_without_s/ttft_median_with_s} ({ttft_median_without_s} / "
     "{ttft_median_with_s}); a cold reload of {reload_prefix} tokens {reload_speedup} faster than "
     "recomputing them (read at {read_cold_bytes_per_s})"},
};

// A Part II figure as this_run shows it. A key's ending says its unit:
// "_s" seconds, "_bytes" bytes, "_bytes_per_s" a rate; a key naming a
// "share" is a fraction from 0 to 1, a "speedup" a ratio; any other is a
// count. Every one is finite and not below zero (bytes at most 1e18).
inline std::string shown_figure(const SavedResults& saved, const std::string& key) {
    if (key.find("share") != std::string::npos)
        return percent_cell(saved.number_between(key, 0, 1)).text;
    if (key.ends_with("_bytes"))
        return format_bytes(std::uint64_t(saved.number_between(key, 0, 1e18)));
    const double v = saved.non_negative_number(key);
    if (key.ends_with("_bytes_per_s")) return rate_cell(v).text;
    if (key.ends_with("_s")) return format_duration(v);
    if (key.find("speedup") != std::string::npos) return times_cell(v).text;
    return v == std::floor(v) && v < 1e15 ? with_commas(std::uint64_t(v)) : fixed(v, 1);
}

// The paper's this_run with each "{key}" filled from `saved`, and "{a/b}"
// with a / b (each above zero).
inline std::string this_run(const Paper& paper, const SavedResults& saved,
                            const std::string& file) {
    std::string out, text = paper.this_run;
    for (std::size_t at = 0, open; (open = text.find('{', at)) != std::string::npos;
         at = text.find('}', open) + 1) {
        out += text.substr(at, open - at);
        const std::string key = text.substr(open + 1, text.find('}', open) - open - 1);
        const std::size_t slash = key.find('/');
        if (slash == std::string::npos) {
            out += shown_figure(saved, key);
            continue;
        }
        const std::string a = key.substr(0, slash), b = key.substr(slash + 1);
        out += times_cell(checked_ratio(file + ": " + a + " / " + b, saved.positive_number(a),
                                        saved.positive_number(b)))
                   .text;
    }
    return out + text.substr(text.rfind('}') + 1);
}

// What a Part II chapter's file held: its headline and this run's figures.
struct PartTwoRun {
    std::string headline;
    std::string this_run;
};

struct Results {
    std::vector<double> figures;  // as kPublished, in the published unit
    std::vector<Shape> shapes;
    std::vector<std::optional<PartTwoRun>> part_two;  // as kPapers; empty where not run
    std::string results_dir;  // where the files were read, for the hint to run a chapter
};

struct Experiment {
    std::string results_dir = "build/results";  // where `make run` saved the chapters' JSON
    static constexpr bool draws_plots = false;  // so its program lists no --plot-dir

    void add_flags(Flags& flags) {
        flags.add("results-dir", results_dir,
                  "folder holding ch02.json, ch03.json, ch05.json (and ch07 to ch11's)");
    }

    void check() const {}  // a missing or unreadable file is found by run()

    // Each chapter's file is read once.
    Results run() const {
        Results r;
        r.results_dir = results_dir;
        std::map<std::string, SavedResults> saved;  // by chapter
        std::map<std::string, double> ours;         // by key
        for (const Published& p : kPublished) {
            if (!saved.count(p.chapter))
                saved.emplace(p.chapter,
                              load_saved_results(results_file(results_dir, p.chapter), p.chapter));
            // Every figure is a time or a size: finite and above zero, or
            // the ratios below would print "nan x" or "-inf x".
            r.figures.push_back(ours[p.key] = saved.at(p.chapter).positive_number(p.key) * p.scale);
        }
        auto ratio = [&](const char* what, const std::string& slow, const std::string& fast) {
            r.shapes.push_back(
                {what, published_value(slow) / published_value(fast),
                 checked_ratio(what + (": " + slow) + " / " + fast, ours[slow], ours[fast])});
        };
        ratio("cache speed-up on one answer", "naive_answer_ms", "cached_answer_ms");
        ratio("median wait: no cache / cache", "median_ttft_no_cache_s", "median_ttft_cache_s");
        ratio("median wait: cache / continuous batching", "median_ttft_cache_s",
              "median_ttft_continuous_s");
        for (const Paper& paper : kPapers) {
            const std::string path = results_file(results_dir, paper.chapter);
            const std::optional<SavedResults> file = read_saved(path, paper.chapter, false);
            if (file)
                r.part_two.push_back(
                    PartTwoRun{file->text("headline"), this_run(paper, *file, visible(path))});
            else
                r.part_two.push_back(std::nullopt);
        }
        return r;
    }
};

}  // namespace kv::ch06
