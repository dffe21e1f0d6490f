// Chapter 05: a queue of 1,000 requests. Prices each engine step with the
// one step cost (this machine's, measured once and saved), then replays the
// queue under six policies (serial, static and continuous batching, each
// without and with the KV cache) and reports what the people in the queue
// experienced.
//
// The lesson is the serving lesson in common/serving/ (workload.h,
// memory_budget.h, memory_manager.h, step_plan.h, scheduler.h,
// step_cost.h, metrics.h); experiment.h sets its parameters and runs it;
// report.h prints what it found.
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
