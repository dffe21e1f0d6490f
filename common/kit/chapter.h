// What every chapter's main() does, written once: declare the experiment's
// flags and the output flags, parse them (--help stops there), check, run
// and report; any error is one line on stderr and exit status 2
// (run_program). An experiment has add_flags(Flags&), check() and run(), and
// `static constexpr bool draws_plots = false;` if it draws none; the report
// takes run()'s results and the output options and returns the exit status.
#pragma once

#include "files.h"
#include "flags.h"
#include "output.h"
#include "program.h"

namespace kv {

template <class Experiment, class Report>
int run_chapter(int argc, const char* const* argv, const char* program, const char* summary,
                Experiment& experiment, Report&& report) {
    return run_program(program, [&] {
        RunFiles files;     // the run's files replace the old ones only after every check
        OutputOptions out;  // --json, --save-json, --plot-dir
        out.chapter = program;
        Flags flags(program, summary);
        experiment.add_flags(flags);
        bool plots = true;
        if constexpr (requires { Experiment::draws_plots; }) plots = Experiment::draws_plots;
        add_output_flags(flags, out, plots);
        if (!flags.parse(argc, argv)) return 0;  // --help was printed
        experiment.check();
        const int status = report(experiment.run(), out);
        check_standard_output();  // what can fail, before any file is replaced
        files.commit();
        return status;
    });
}

}  // namespace kv
