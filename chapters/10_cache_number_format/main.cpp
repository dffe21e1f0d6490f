// Chapter 10: the cache's number format. The engine keeps its keys and
// values in float32, bfloat16, float16 or int8: what each costs the answer
// and what it buys in memory and in the queue. The lesson is
// answer_agreement.h and format_memory.h, on common/core/number_format.h.
#include "../../common/kit/chapter.h"
#include "experiment.h"
#include "report.h"

int main(int argc, char** argv) {
    kv::ch10::Experiment experiment;  // the demo model, the queue of chapter 05, 16 MiB
    return kv::run_chapter(argc, argv, "10_cache_number_format",
                           "The cache's number format: 32, 16 or 8 bits per key and value, what "
                           "it costs the answer and what it buys.",
                           experiment, kv::ch10::report);
}
