// Chapter 05: a queue of 1,000 requests, replayed under six policies
// (serial, static and continuous batching, each without and with the KV
// cache), each step priced by the one step cost, and what the people in the
// queue experienced. The lesson is the serving lesson, common/serving/.
#include "../../common/kit/chapter.h"
#include "experiment.h"
#include "report.h"

int main(int argc, char** argv) {
    kv::ch05::Experiment experiment;  // 1,000 requests at once, batch 32, 16 MiB of KV cache
    return kv::run_chapter(argc, argv, "05_queue_simulation",
                           "A queue of requests served with and without the cache, serially and "
                           "in batches.",
                           experiment, kv::ch05::report);
}
