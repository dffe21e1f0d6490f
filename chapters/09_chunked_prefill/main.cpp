// Chapter 09: prefill and decode in one step, filled three ways (each
// prompt alone, every prompt in one pass, chunks beside the decode rows).
// The lesson is step_policies.h.
#include "../../common/kit/chapter.h"
#include "experiment.h"
#include "report.h"

int main(int argc, char** argv) {
    kv::ch09::Experiment experiment;  // chunks of 64 prompt tokens, and 512-token prompts
    return kv::run_chapter(argc, argv, "09_chunked_prefill",
                           "Prefill and decode in one step: batched prefill, chunked prefill and "
                           "the time between tokens.",
                           experiment, kv::ch09::report);
}
