// The closing table: each figure the book answers to, beside the figure
// this run measured, read from the files the chapters saved with
// --save-json (`make run` saves them in build/results/).
//
// experiment.h reads the saved figures (saved_results.h parses them);
// report.h prints them.
#include "../../common/kit/output.h"
#include "../../common/kit/program.h"
#include "experiment.h"
#include "report.h"

using namespace kv;

int main(int argc, char** argv) {
    return run_program("06_closing_table", [&] {
        ch06::Experiment experiment;  // where the chapters' results are
        OutputOptions out;            // --json, --save-json, --plot-dir
        Flags flags("06_closing_table",
                    "The book's closing table: published figures beside this run's, from the "
                    "chapters' saved JSON.");
        experiment.add_flags(flags);
        add_output_flags(flags, out);
        if (!flags.parse(argc, argv)) return 0;  // --help was printed
        experiment.check();
        return ch06::report(experiment.run(), out);
    });
}
