// The closing table: each figure the book answers to, beside the figure
// this run measured, read from the files the chapters saved with
// --save-json (`make run` saves them in build/results/).
#include <cmath>
#include <iostream>

#include "../../common/flags.h"
#include "../../common/output.h"
#include "../../common/program.h"
#include "../../common/report.h"
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

        Table table({"claim", "published", "this run", "this run / published"});
        Json rows;
        for (const Published& p : kPublished) {
            const SavedResults saved = SavedResults::load(results_dir + "/" + p.file + ".json");
            const double ours = saved.number(p.key) * p.scale;
            // Whole numbers print whole ("128 KiB"); others to about 3 significant digits.
            const int decimals = ours == std::floor(ours) ? 0 : ours < 10 ? 2 : 1;
            table.add_row({p.claim, Cell(p.value, 0).text + " " + p.unit,
                           Cell(ours, decimals).text + " " + p.unit, Cell(ours / p.value, 2)});
            rows.add(p.key, ours);
        }
        // The shapes, which must hold whatever the machine: how many times
        // faster the cache is, and how each scheduler shortens the wait.
        const SavedResults ch02 = SavedResults::load(results_dir + "/ch02.json");
        const SavedResults ch05 = SavedResults::load(results_dir + "/ch05.json");
        const double our_speedup = ch02.number("naive_answer_ms") / ch02.number("cached_answer_ms");
        const double our_cache_gain =
            ch05.number("median_ttft_no_cache_s") / ch05.number("median_ttft_cache_s");
        const double our_batching_gain =
            ch05.number("median_ttft_cache_s") / ch05.number("median_ttft_continuous_s");
        Table shapes({"shape", "published", "this run"});
        shapes.add_row({"cache speed-up on one answer", Cell(567.0 / 39, 1).text + " x",
                        Cell(our_speedup, 1).text + " x"});
        shapes.add_row({"median wait: no cache / cache", Cell(452.0 / 24, 1).text + " x",
                        Cell(our_cache_gain, 1).text + " x"});
        shapes.add_row({"median wait: cache / continuous batching", Cell(24.0 / 14, 1).text + " x",
                        Cell(our_batching_gain, 1).text + " x"});
        rows.add("figures", table).add("shapes", shapes);
        if (emit(out, rows)) return 0;

        std::cout << "The book's closing table: the published figures and this run's\n\n";
        table.print(std::cout);
        std::cout << "\nThe shapes that must hold on any machine:\n\n";
        shapes.print(std::cout);
        return 0;
    });
}
