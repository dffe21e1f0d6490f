// What every chapter's main() does, written once: declare the experiment's
// flags and the output flags, parse them (--help stops there), check the
// values, run the experiment and report its results. Any error becomes one
// line on stderr and exit status 2 (run_program).
//
// An experiment has add_flags(Flags&), check() and run(); the report takes
// run()'s results and the output options and returns the exit status. An
// experiment that draws no plot says `static constexpr bool draws_plots =
// false;` and its program lists no --plot-dir.
#pragma once

#include "../core/kernel_plan.h"
#include "files.h"
#include "flags.h"
#include "output.h"
#include "program.h"

namespace kv {

template <class Experiment, class Report>
int run_chapter(int argc, const char* const* argv, const char* program, const char* summary,
                Experiment& experiment, Report&& report) {
    return run_program(program, [&] {
        // Each build keeps its kernel plan beside its programs (build/kernel_plan.txt).
        keep_kernel_plans_in(kernel_plan_file_beside(argc > 0 ? argv[0] : nullptr));
        // What this run reads and writes (files.h): an output may not replace
        // an input or another output, and every file it writes replaces the
        // old one at the end, all together, or none does.
        RunFiles files;
        OutputOptions out;  // --json, --save-json, --plot-dir
        out.chapter = program;
        Flags flags(program, summary);
        experiment.add_flags(flags);
        constexpr bool plots = [] {
            if constexpr (requires { Experiment::draws_plots; })
                return bool(Experiment::draws_plots);
            else
                return true;
        }();
        add_output_flags(flags, out, plots);
        if (!flags.parse(argc, argv)) return 0;  // --help was printed
        experiment.check();
        const int status = report(experiment.run(), out);
        files.commit();
        return status;
    });
}

}  // namespace kv
