// Chapter 08: a workload whose prompts share their beginnings.
//
// Chapter 05's queue (the same lengths and arrivals), then the tokens:
//   every prompt starts with one system prompt of S tokens;
//   a share of the requests follow up an earlier one: its whole prompt, its
//     answer as the client sends it back, then a new question;
//   with n samples, requests come in groups of n asking the same prompt.
// A follow-up resends the earlier answer as drawn tokens (with random
// weights the model's answer is noise; a client sends text, tokenized
// again). The engine caches prompt blocks only, so a follow-up finds the
// earlier prompt cached, not its answer.
#pragma once

#include <cstdint>
#include <vector>

#include "../../common/core/rng.h"
#include "../../common/serving/workload.h"

namespace kv {

struct SharingOptions {
    int system_prompt = 256;  // S: tokens every prompt starts with
    double follow_ups = 0.3;  // share of requests that continue an earlier conversation
    int look_back = 32;       // a follow-up continues one of the previous this-many requests
    int samples = 1;          // n: requests in a row that ask the same prompt
};

// Chapter 05's queue, every request given its prompt's tokens (token_ids,
// prompt_len): no prompt with its longest answer runs past `max_seq`
// positions (a follow-up that would is a new conversation instead).
inline std::vector<Request> make_shared_workload(const WorkloadOptions& w, const SharingOptions& s,
                                                 int vocab_size, int max_seq) {
    std::vector<Request> requests = make_workload(w);
    Rng rng(w.seed ^ 0x5AA4ED00ull);  // apart from the lengths drawn from the same seed
    auto draw = [&](int n, std::vector<int>& out) {
        for (int i = 0; i < n; ++i) out.push_back(int(rng.below(std::uint64_t(vocab_size))));
    };
    std::vector<int> system;
    draw(s.system_prompt, system);
    for (std::size_t i = 0; i < requests.size(); ++i) {
        Request& r = requests[i];
        const int question = r.prompt_len;  // chapter 05's prompt length, now the question's
        std::vector<int> prompt;
        if (s.samples > 1 && i % std::size_t(s.samples) != 0) {
            prompt = requests[i - 1].token_ids;  // one more sample of the same prompt
        } else {
            const bool follow = rng.below(1'000'000) < std::uint64_t(s.follow_ups * 1e6);
            const std::size_t back = 1 + rng.below(std::uint64_t(s.look_back));
            std::vector<int> answer, asked;
            draw(question, asked);
            if (follow && i >= back) {
                const Request& earlier = requests[i - back];
                prompt = earlier.token_ids;
                draw(earlier.answer_len, answer);
                prompt.insert(prompt.end(), answer.begin(), answer.end());
            }
            if (prompt.empty() ||
                std::int64_t(prompt.size()) + question + r.answer_cap - 1 > max_seq)
                prompt = system;  // a new conversation
            prompt.insert(prompt.end(), asked.begin(), asked.end());
        }
        r.token_ids = prompt;
        r.prompt_len = int(prompt.size());
    }
    return requests;
}

}  // namespace kv
