// Chapter 05: a queue of 1,000 requests. Measures what the engine's work
// costs, then replays the queue under six policies (serial, static and
// continuous batching, each without and with the KV cache) and reports
// what the people in the queue experienced.
#include <iostream>

#include "../../common/kit/flags.h"
#include "../../common/kit/output.h"
#include "../../common/kit/program.h"
#include "experiment.h"
#include "report.h"

using namespace kv;

int main(int argc, char** argv) {
    return run_program("05_queue_simulation", [&] {
        ch05::Experiment experiment;
        OutputOptions output;
        Flags flags("05_queue_simulation",
                    "A queue of requests served with and without the cache, serially and in "
                    "batches.");
        experiment.add_flags(flags);
        add_output_flags(flags, output);
        if (!flags.parse(argc, argv)) return 0;
        experiment.check();
        ch05::report(experiment.run(), output, std::cout);
        return 0;
    });
}
