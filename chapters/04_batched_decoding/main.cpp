// Chapter 04: batched decoding (experiment.h says what it runs). The lessons
// are common/core/batched_decoding.h and arithmetic_intensity.h;
// batch_benchmark.h times them.
#include "../../common/kit/chapter.h"
#include "experiment.h"
#include "report.h"

int main(int argc, char** argv) {
    kv::ch04::Experiment experiment;  // its parameters, with the book's defaults
    return kv::run_chapter(argc, argv, "04_batched_decoding",
                           "Batched decoding: one decode step for many sequences at once.",
                           experiment, kv::ch04::report);
}
