// Chapter 11's queue of conversations (conversations.h): each turn comes
// back with its whole history in front of a new question.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "../chapters/11_second_tier/conversations.h"
#include "tiny_models.h"

using namespace kv;

TEST_CASE("conversations come back with their whole history in front of a new question") {
    const Config c = test::tiny_config();
    WorkloadOptions w;
    w.requests = 20;
    w.prompt_min = 2;
    w.prompt_max = 5;
    w.answer_len = 3;
    w.answer_max = 6;
    w.seed = 3;
    const std::vector<Request> plain = make_workload(w);
    const Conversations q = make_conversations(w, 3, c.vocab_size, 40);
    REQUIRE(q.requests.size() == 20);
    REQUIRE(q.turn.size() == 20);
    int restarts = 0;
    for (std::size_t i = 0; i < q.requests.size(); ++i) {
        const Request& r = q.requests[i];
        CHECK(r.prompt_len == int(r.token_ids.size()));
        CHECK(r.answer_len == plain[i].answer_len);  // chapter 05's lengths, its question's too
        CHECK(r.prompt_len + r.answer_cap - 1 <= 40);
        // Each turn, a new conversation's too, follows the one dealt before it.
        CHECK(r.after == (i < 3 ? -1 : int(i) - 3));
        if (i < 3) CHECK(q.turn[i] == 1);
        if (i < 3 || q.turn[i] == 1) {
            CHECK(r.prompt_len == plain[i].prompt_len);
            restarts += i >= 3;
            continue;
        }
        // Turn k + 1 of conversation i % 3: turn k's prompt, its answer, a question.
        const Request& before = q.requests[i - 3];
        CHECK(q.turn[i] == q.turn[i - 3] + 1);
        CHECK(r.prompt_len == before.prompt_len + before.answer_len + plain[i].prompt_len);
        CHECK(std::equal(before.token_ids.begin(), before.token_ids.end(), r.token_ids.begin()));
    }
    CHECK(restarts > 0);  // some histories outgrew the 40 positions and began again
}
