// Chapter 02: the KV cache. The same answer as chapter 01, computed with a
// cache: prefill once, then decode one token at a time. Same tokens, same
// logits, a fraction of the time.
//
// The lesson is cached_decoding.h; experiment.h sets its parameters and
// runs it beside chapter 01's; report.h prints what it measured.
#include "../../common/kit/output.h"
#include "../../common/kit/program.h"
#include "experiment.h"
#include "report.h"

using namespace kv;

int main(int argc, char** argv) {
    return run_program("02_kv_cache", [&] {
        ch02::Experiment experiment;  // its parameters, with the book's defaults
        OutputOptions out;            // --json, --save-json, --plot-dir
        Flags flags("02_kv_cache", "The KV cache: prefill once, then decode one token at a time.");
        experiment.add_flags(flags);
        add_output_flags(flags, out);
        if (!flags.parse(argc, argv)) return 0;  // --help was printed
        experiment.check();
        return ch02::report(experiment.run(), out);
    });
}
