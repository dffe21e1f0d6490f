// Chapter 01: naive decoding. Generates one answer by recomputing the whole
// sequence for every new token, and shows what that costs.
//
// The lesson is naive_decoding.h; experiment.h sets its parameters and runs
// it; report.h prints what it measured.
#include "../../common/kit/output.h"
#include "../../common/kit/program.h"
#include "experiment.h"
#include "report.h"

using namespace kv;

int main(int argc, char** argv) {
    return run_program("01_naive_decoding", [&] {
        ch01::Experiment experiment;  // its parameters, with the book's defaults
        OutputOptions out;            // --json, --save-json, --plot-dir
        Flags flags("01_naive_decoding",
                    "Naive decoding: recompute the whole sequence for every new token.");
        experiment.add_flags(flags);
        add_output_flags(flags, out);
        if (!flags.parse(argc, argv)) return 0;  // --help was printed
        experiment.check();
        return ch01::report(experiment.run(), out);
    });
}
