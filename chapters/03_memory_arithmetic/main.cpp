// Chapter 03: what the KV cache costs in memory, and what that caps.
// Prices the cache of any model shape factor by factor, compares attention
// layouts and number widths, counts the conversations a memory budget holds,
// and checks the formula against the bytes the demo model's cache really
// uses.
//
// The lessons are memory_arithmetic.h, cache_layout.h and measured_cache.h;
// experiment.h sets the parameters and runs them; report.h prints what
// they give.
#include "../../common/kit/chapter.h"
#include "experiment.h"
#include "report.h"

int main(int argc, char** argv) {
    kv::ch03::Experiment experiment;  // its parameters, with the book's defaults
    return kv::run_chapter(argc, argv, "03_memory_arithmetic",
                           "KV cache memory: bytes per token, per conversation, and how many fit.",
                           experiment, kv::ch03::report);
}
