// Chapter 03: what the KV cache costs in memory, and what that caps. The
// lessons are memory_arithmetic.h (common/core) and cache_layout.h.
#include "../../common/kit/chapter.h"
#include "experiment.h"
#include "report.h"

int main(int argc, char** argv) {
    kv::ch03::Experiment experiment;  // its parameters, with the book's defaults
    return kv::run_chapter(argc, argv, "03_memory_arithmetic",
                           "KV cache memory: bytes per token, per conversation, and how many fit.",
                           experiment, kv::ch03::report);
}
