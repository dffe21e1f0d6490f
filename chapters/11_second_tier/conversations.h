// Chapter 11: a queue of conversations that come back.
//
// Chapter 05's queue (the same lengths and arrivals), its requests dealt
// in turn to C conversations: request i is the next turn of conversation
// i % C. A turn follows the one before it (Request::after): it arrives
// when that answer's last token is out, not before, as chat traffic does
// (a person reads the answer, then writes again), and its time to first
// token counts from then. Meanwhile the other conversations take their
// turns. Each turn sends the conversation's whole history again (every
// earlier prompt and answer), then a new question of chapter 05's prompt
// length. The earlier answer is resent as drawn tokens, as in chapter 08:
// with random weights the model's own answer is noise, and the simulator,
// which runs no model, could not know it. The engine caches prompt blocks
// only, so a turn finds the earlier turn's prompt cached, not its answer.
#pragma once

#include <cstdint>
#include <vector>

#include "../../common/core/rng.h"
#include "../../common/serving/workload.h"

namespace kv {

struct Conversations {
    std::vector<Request> requests;  // chapter 05's order, each with its prompt's tokens
    std::vector<int> turn;          // (requests) 1 for a conversation's first turn, then 2, ...
};

// A turn whose prompt and longest answer would run past `max_seq`
// positions starts its conversation over (a new conversation, turn 1,
// still after the turn before: the same person writes again).
inline Conversations make_conversations(const WorkloadOptions& w, int conversations, int vocab_size,
                                        int max_seq) {
    Conversations c{make_workload(w), {}};
    Rng rng(w.seed ^ 0xC0417E55ull);  // apart from the lengths drawn from the same seed
    auto draw = [&](int n, std::vector<int>& out) {
        for (int i = 0; i < n; ++i) out.push_back(int(rng.below(std::uint64_t(vocab_size))));
    };
    std::vector<int> last(std::size_t(conversations), -1);  // each one's latest request
    for (std::size_t i = 0; i < c.requests.size(); ++i) {
        Request& r = c.requests[i];
        int& previous = last[i % std::size_t(conversations)];
        std::vector<int> prompt;
        int turn = 1;
        if (previous >= 0) {
            const Request& before = c.requests[std::size_t(previous)];
            prompt = before.token_ids;
            draw(before.answer_len, prompt);  // the answer, as the client sends it back
            turn = c.turn[std::size_t(previous)] + 1;
            r.after = previous;
        }
        if (std::int64_t(prompt.size()) + r.prompt_len + r.answer_cap - 1 > max_seq) {
            prompt.clear();  // too long: the conversation starts over
            turn = 1;
        }
        draw(r.prompt_len, prompt);  // the new question
        r.token_ids = prompt;
        r.prompt_len = int(prompt.size());
        c.turn.push_back(turn);
        previous = int(i);
    }
    return c;
}

}  // namespace kv
