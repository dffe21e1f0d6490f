// Chapter 11: a second tier. Evicted prefix blocks are kept on disk and
// read back instead of computed again. The lesson is conversations.h,
// one_request.h, reload_arithmetic.h and tier_time.h, on the second tier in
// common/serving/ (prefix_cache.h, tier_file.h).
#include "../../common/kit/chapter.h"
#include "experiment.h"
#include "report.h"

int main(int argc, char** argv) {
    kv::ch11::Experiment experiment;  // 32 conversations, an 8 MiB pool, a 64 MiB tier
    return kv::run_chapter(argc, argv, "11_second_tier",
                           "A second tier: evicted prefixes kept on disk and reloaded instead of "
                           "recomputed.",
                           experiment, kv::ch11::report);
}
