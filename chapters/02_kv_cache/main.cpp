// Chapter 02: the KV cache. The same answer as chapter 01, computed with a
// cache: prefill once, then decode one token at a time. Same tokens, same
// logits, a fraction of the time. The lesson is common/core/cached_decoding.h.
#include "../../common/kit/chapter.h"
#include "experiment.h"
#include "report.h"

int main(int argc, char** argv) {
    kv::ch02::Experiment experiment;  // its parameters, with the book's defaults
    return kv::run_chapter(argc, argv, "02_kv_cache",
                           "The KV cache: prefill once, then decode one token at a time.",
                           experiment, kv::ch02::report);
}
