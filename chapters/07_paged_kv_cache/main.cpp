// Chapter 07: the paged KV cache. The queue's KV memory in blocks: how many
// more conversations fit, what the block table costs a decode step, and
// what paging, preemption and a watermark do to the wait. The lesson is
// conversations_that_fit.h, swap_priced_executor.h and the serving lesson's
// paged_memory.h and paged_executor.h.
#include "../../common/kit/chapter.h"
#include "experiment.h"
#include "report.h"

int main(int argc, char** argv) {
    kv::ch07::Experiment experiment;  // the queue, in blocks of 16 positions
    return kv::run_chapter(argc, argv, "07_paged_kv_cache",
                           "The paged KV cache: blocks, block tables, and the conversations that "
                           "now fit.",
                           experiment, kv::ch07::report);
}
