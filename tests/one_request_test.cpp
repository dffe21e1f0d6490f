// Chapter 11's one request (one_request.h): its prefix in the pool, read
// back from the tier file warm or cold, or computed again, the same logits.
#include <doctest/doctest.h>

#include <vector>

#include "../chapters/11_second_tier/one_request.h"
#include "../common/core/block_pool.h"
#include "../common/core/generation.h"
#include "../common/core/number_format.h"
#include "../common/core/transformer.h"
#include "../common/serving/tier_file.h"
#include "tiny_models.h"

using namespace kv;

TEST_CASE("one request served from the pool the tier file or recomputed: the same logits") {
    const Config c = test::tiny_config();
    Transformer model(c, 4);
    const std::vector<int> prompt = fixed_prompt(24 + 5, c.vocab_size, 9);
    for (NumberFormat f : all_formats()) {
        CAPTURE(format_name(f));
        BlockPool pool(c, 4, 20, f);
        TierFile file(pool, 8);
        const OneRequest one = serve_one(model, pool, file, prompt, 24, 2, 2);
        CHECK(one.same_logits);
        CHECK(one.prefix == 24);
        CHECK(one.bytes == 6 * TierFile::slot_bytes(pool.bytes_per_block(), 4));
        CHECK(file.counts().corrupt + file.counts().truncated + file.counts().misnamed == 0);
        CHECK(pool.free_blocks() == pool.blocks());  // every way gave its blocks back
    }
}
