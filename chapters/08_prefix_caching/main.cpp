// Chapter 08: sharing the cache. The lesson is parallel_samples.h and, in
// common/serving/ (chapter 11 builds on them), prefix_cache.h,
// prefix_sharing_memory.h and shared_blocks_executor.h; shared_workload.h
// draws the queue.
#include "../../common/kit/chapter.h"
#include "experiment.h"
#include "report.h"

int main(int argc, char** argv) {
    kv::ch08::Experiment experiment;  // a system prompt of 256 tokens, blocks of 16 positions
    return kv::run_chapter(argc, argv, "08_prefix_caching",
                           "Sharing the cache: a prefix computed once for many requests, and "
                           "copy-on-write for parallel samples.",
                           experiment, kv::ch08::report);
}
