// Chapter 04: batched decoding. Times one decode step for batches of 1, 2,
// 4, ... 64 ragged sequences, at the demo width and at a width whose weights
// miss the CPU's cache, and checks every batched step against the same
// sequences decoded alone. The lessons are common/core/batched_decoding.h
// and arithmetic_intensity.h; batch_benchmark.h times them.
#include "../../common/kit/chapter.h"
#include "experiment.h"
#include "report.h"

int main(int argc, char** argv) {
    kv::ch04::Experiment experiment;  // its parameters, with the book's defaults
    return kv::run_chapter(argc, argv, "04_batched_decoding",
                           "Batched decoding: one decode step for many sequences at once.",
                           experiment, kv::ch04::report);
}
