// What every chapter's main() does, written once: declare the experiment's
// flags and the output flags, parse them (--help stops there), check the
// values, run the experiment and report its results. Any error becomes one
// line on stderr and exit status 2 (run_program).
//
// An experiment has add_flags(Flags&), check() and run(); the report takes
// run()'s results and the output options and returns the exit status.
#pragma once

#include "flags.h"
#include "output.h"
#include "program.h"

namespace kv {

template <class Experiment, class Report>
int run_chapter(int argc, const char* const* argv, const char* program, const char* summary,
                Experiment& experiment, Report&& report) {
    return run_program(program, [&] {
        OutputOptions out;  // --json, --save-json, --plot-dir
        Flags flags(program, summary);
        experiment.add_flags(flags);
        add_output_flags(flags, out);
        if (!flags.parse(argc, argv)) return 0;  // --help was printed
        experiment.check();
        return report(experiment.run(), out);
    });
}

}  // namespace kv
