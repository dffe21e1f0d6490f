// Chapter 10's memory lesson: bytes per token held at each format, the
// conversations a pool holds at each width, and the resident-memory
// measure's accounting.
#include <doctest/doctest.h>

#include <vector>

#include "../chapters/10_cache_number_format/format_memory.h"
#include "../common/lab/resident_cache.h"
#include "tiny_models.h"

using namespace kv;
using namespace kv::ch10;

namespace {

// Requests whose last step holds `positions` positions each.
std::vector<Request> requests_holding(const std::vector<int>& positions) {
    std::vector<Request> rs;
    for (int p : positions) {
        Request r;
        r.id = int(rs.size());
        r.prompt_len = p - 9;
        r.answer_len = r.answer_cap = 10;  // prompt + answer - 1 = p
        rs.push_back(r);
    }
    return rs;
}

}  // namespace

TEST_CASE("every format holds the formula's bytes per token in both caches") {
    for (const Config& c : test::shapes_to_check())
        for (const NumberFormat f : all_formats()) {
            const FormatBytes b = bytes_at(c, f, 4);
            CHECK(b.formula == bytes_per_token(cache_shape_of(c, f)));
            CHECK(b.contiguous == b.formula);
            CHECK(b.paged == b.formula);
        }
}

TEST_CASE("a pool holds whole conversations in arrival order and more at a narrower width") {
    const Config c = test::tiny_config();  // 2 layers, 2 KV heads of 6: 96 bytes a token in float32
    const std::uint64_t per_block = BlockPool::bytes_per_block(c, 4);  // 384
    // 10 blocks: conversations of 13 (4 blocks), 20 (5) and 4 (1) positions
    // fill them exactly; a fourth does not fit.
    const std::vector<Request> rs = requests_holding({13, 20, 4, 11});
    CHECK(conversations_in_pool(c, 10 * per_block, 4, NumberFormat::float32, rs) == 3);
    CHECK(conversations_in_pool(c, 10 * per_block - 1, 4, NumberFormat::float32, rs) == 2);
    // The first that does not fit stops the count, even if a later one would.
    CHECK(conversations_in_pool(c, 8 * per_block, 4, NumberFormat::float32, rs) == 1);
    CHECK(conversations_in_pool(c, per_block - 1, 4, NumberFormat::float32, rs) == 0);
    // Half the bytes per block: the same memory holds twice the blocks.
    CHECK(conversations_in_pool(c, 5 * per_block, 4, NumberFormat::bfloat16, rs) == 3);
    const std::vector<Request> many = requests_holding(std::vector<int>(40, 12));
    const int wide = conversations_in_pool(c, 20 * per_block, 4, NumberFormat::float32, many);
    CHECK(wide == 6);  // 3 blocks each
    CHECK(conversations_in_pool(c, 20 * per_block, 4, NumberFormat::float16, many) == 13);
    CHECK(conversations_in_pool(c, 20 * per_block, 4, NumberFormat::int8, many) >= 2 * wide);
}

TEST_CASE("the resident-memory measure allocates exactly the formula's bytes") {
    const Config c = test::tiny_config();
    for (const NumberFormat f : all_formats()) {
        const ResidentCache r = measure_resident_cache(c, 200, f);  // past max_seq: raised
        CHECK(r.allocated == r.formula);
        CHECK(r.formula == 200 * bytes_per_token(cache_shape_of(c, f)));
        CHECK(r.page_size > 0);
    }
}
