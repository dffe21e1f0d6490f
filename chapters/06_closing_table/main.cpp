// The closing table: each figure the book answers to, beside the figure
// this run measured, read from the files the chapters saved with
// --save-json (`make run` saves them in build/results/).
#include <cmath>
#include <iostream>
#include <map>
#include <string>

#include "../../common/kit/flags.h"
#include "../../common/kit/output.h"
#include "../../common/kit/program.h"
#include "../../common/kit/report.h"
#include "saved_results.h"

using namespace kv;

namespace {

// The published figures the book answers to (README.md lists them).
struct Published {
    const char* claim;
    double value;
    const char* unit;
    const char* file;  // the chapter that measures it here
    const char* key;   // and the number in that chapter's JSON
    double scale;      // to convert our number to the published unit
};

const Published kPublished[] = {
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

}  // namespace

int main(int argc, char** argv) {
    return run_program("06_closing_table", [&] {
        std::string results_dir = "build/results";  // where `make run` saved the chapters' JSON
        OutputOptions out;
        Flags flags("06_closing_table",
                    "The book's closing table: published figures beside this run's, from the "
                    "chapters' saved JSON.");
        flags.add("results-dir", results_dir, "folder holding ch02.json, ch03.json, ch05.json");
        add_output_flags(flags, out);
        if (!flags.parse(argc, argv)) return 0;

        // Each figure, published and measured, by its key in a chapter's JSON;
        // each chapter's file is read once.
        std::map<std::string, SavedResults> saved;
        std::map<std::string, double> published, ours;
        Table table({"claim", "published", "this run", "this run / published"});
        Json rows;
        for (const Published& p : kPublished) {
            if (!saved.count(p.file))
                saved.emplace(p.file, SavedResults::load(results_dir + "/" + p.file + ".json"));
            const double measured = saved.at(p.file).number(p.key) * p.scale;
            published[p.key] = p.value;
            ours[p.key] = measured;
            // Whole numbers print whole ("128 KiB"); others to about 3 significant digits.
            const int decimals = measured == std::floor(measured) ? 0 : measured < 10 ? 2 : 1;
            table.add_row({p.claim, Cell(p.value, 0).text + " " + p.unit,
                           Cell(measured, decimals).text + " " + p.unit,
                           Cell(measured / p.value, 2)});
            rows.add(p.key, measured);
        }
        // The shapes, which must hold whatever the machine: how many times
        // faster the cache is, and how each scheduler shortens the wait.
        Table shapes({"shape", "published", "this run"});
        auto ratio = [&](const char* what, const std::string& slow, const std::string& fast) {
            shapes.add_row({what, Cell(published[slow] / published[fast], 1).text + " x",
                            Cell(ours[slow] / ours[fast], 1).text + " x"});
        };
        ratio("cache speed-up on one answer", "naive_answer_ms", "cached_answer_ms");
        ratio("median wait: no cache / cache", "median_ttft_no_cache_s", "median_ttft_cache_s");
        ratio("median wait: cache / continuous batching", "median_ttft_cache_s",
              "median_ttft_continuous_s");
        rows.add("figures", table).add("shapes", shapes);
        if (emit(out, rows)) return 0;

        std::cout << "The book's closing table: the published figures and this run's\n\n";
        table.print(std::cout);
        std::cout << "\nThe shapes that must hold on any machine:\n\n";
        shapes.print(std::cout);
        return 0;
    });
}
