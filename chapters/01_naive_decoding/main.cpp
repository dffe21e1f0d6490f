// Chapter 01: naive decoding. One answer, the whole sequence recomputed for
// every new token, and what that costs. The lesson is
// common/core/naive_decoding.h.
#include "../../common/kit/chapter.h"
#include "report.h"

int main(int argc, char** argv) {
    kv::ch01::Experiment experiment;  // its parameters, with the book's defaults
    return kv::run_chapter(argc, argv, "01_naive_decoding",
                           "Naive decoding: recompute the whole sequence for every new token.",
                           experiment, kv::ch01::report);
}
