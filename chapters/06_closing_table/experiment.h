// The closing table's experiment: each figure the book answers to, beside
// the figure this run measured, read from the files the chapters saved with
// --save-json (`make run` saves them in build/results/).
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../common/kit/files.h"
#include "../../common/kit/flags.h"
#include "../../common/kit/report.h"  // visible
#include "saved_results.h"

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

struct Results {
    std::vector<Figure> figures;  // in the order of kPublished
    std::vector<Shape> shapes;
};

struct Experiment {
    std::string results_dir = "build/results";  // where `make run` saved the chapters' JSON
    static constexpr bool draws_plots = false;  // so its program lists no --plot-dir

    void add_flags(Flags& flags) {
        flags.add("results-dir", results_dir, "folder holding ch02.json, ch03.json, ch05.json");
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
        return r;
    }
};

}  // namespace kv::ch06
