// Chapter 03: what the KV cache costs in memory, and what that caps.
// Prices the cache of any model shape factor by factor, compares attention
// layouts and number widths, counts the conversations a memory budget holds,
// and checks the formula against the bytes the demo model's cache really
// uses.
//
// The lessons are memory_arithmetic.h and measured_cache.h; experiment.h
// sets the parameters and runs them; report.h prints what they give.
#include "../../common/kit/output.h"
#include "../../common/kit/program.h"
#include "experiment.h"
#include "report.h"

using namespace kv;

int main(int argc, char** argv) {
    return run_program("03_memory_arithmetic", [&] {
        ch03::Experiment experiment;  // its parameters, with the book's defaults
        OutputOptions out;            // --json, --save-json, --plot-dir
        Flags flags("03_memory_arithmetic",
                    "KV cache memory: bytes per token, per conversation, and how many fit.");
        experiment.add_flags(flags);
        add_output_flags(flags, out);
        if (!flags.parse(argc, argv)) return 0;  // --help was printed
        experiment.check();
        return ch03::report(experiment.run(), out);
    });
}
