// Chapter 04: batched decoding, one step for many requests.
//
// At batch size 1 a decode step reads every weight of the model to do one
// multiply-add with each: the step is bound by how fast weights arrive from
// memory. Give the step B sequences at once and each weight, once loaded,
// serves B rows: B times the useful work for about the same bytes. Attention
// cannot be shared (each sequence has its own cache and its own length), so
// it runs per sequence; the weight products run once over a B-row matrix.
//
// Nothing about a sequence's arithmetic depends on its neighbours in the
// batch: every dot product adds its terms in the same order in a B-row
// product as in a one-row one (common/core/kernels.h). So a sequence decoded in
// any batch gets the same logits, to the last bit, as decoded alone.
#pragma once

#include <algorithm>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../common/core/kv_cache.h"
#include "../../common/core/matrix.h"
#include "../../common/core/transformer.h"
#include "../02_kv_cache/cached_decoding.h"

namespace kv {

// One decode step for B sequences, each with its own cache at its own
// length (a ragged batch): tokens[i] goes to caches[i]. Row i of the result
// holds sequence i's logits; it stays valid until the model's next forward
// pass. A bad call (counts that differ, an empty batch, one cache twice, a
// full cache) throws before any cache is touched.
inline const Matrix& decode_batch(Transformer& model, std::span<const int> tokens,
                                  std::span<KVCache* const> caches) {
    if (tokens.size() != caches.size())
        throw std::invalid_argument("decode_batch: " + std::to_string(tokens.size()) +
                                    " tokens for " + std::to_string(caches.size()) + " caches");
    if (tokens.empty()) throw std::invalid_argument("decode_batch: the batch is empty");
    std::vector<SequenceInput> chunks;
    chunks.reserve(tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i)
        chunks.push_back({tokens.subspan(i, 1), caches[i]});
    return model.forward(chunks);  // checks the caches, then one pass for all rows
}

// A batch that sequences join and leave between steps: what continuous
// batching needs. Each member owns its cache and knows its next token.
class Batch {
  public:
    struct Member {
        int id;                          // the caller's name for this sequence
        std::unique_ptr<KVCache> cache;  // its keys and values: prompt, then answer
        int next_token;                  // chosen at the last step, fed at the next
        std::vector<int> answer;         // every token generated so far (next_token is last)
    };

    explicit Batch(Transformer& model) : model_(model) {}

    // Prefills `prompt` into a new cache of `capacity` positions, adds the
    // sequence to the batch and returns its first answer token. The prompt
    // runs alone; the members already in the batch are not touched.
    int join(int id, std::span<const int> prompt, int capacity) {
        const std::string who = "Batch::join: sequence " + std::to_string(id);
        if (contains(id)) throw std::invalid_argument(who + " is already in the batch");
        if (prompt.empty()) throw std::invalid_argument(who + " has an empty prompt");
        if (capacity < static_cast<int>(prompt.size()))
            throw std::invalid_argument(who + ": a cache of " + std::to_string(capacity) +
                                        " positions cannot hold its " +
                                        std::to_string(prompt.size()) + "-token prompt");
        auto cache = std::make_unique<KVCache>(model_.config(), capacity);
        const int first = argmax(prefill(model_, prompt, *cache));
        members_.push_back({id, std::move(cache), first, {first}});
        return first;
    }

    // Removes a sequence (its cache is freed) and returns its answer. The
    // others keep their order.
    std::vector<int> leave(int id) {
        auto it = std::find_if(members_.begin(), members_.end(),
                               [id](const Member& m) { return m.id == id; });
        if (it == members_.end())
            throw std::invalid_argument("Batch::leave: no sequence " + std::to_string(id) +
                                        " in the batch");
        std::vector<int> answer = std::move(it->answer);
        members_.erase(it);
        return answer;
    }

    // One decode step for every member: each feeds its next token and gets
    // a new one, appended to its answer. Returns the logits; row i belongs
    // to members()[i]. A member whose cache is full makes the whole step an
    // error, thrown before anything changes: it must leave first.
    const Matrix& step() {
        if (members_.empty()) throw std::logic_error("Batch::step: the batch is empty");
        tokens_.clear();
        caches_.clear();
        for (Member& m : members_) {
            if (m.cache->remaining() == 0)
                throw std::length_error("Batch::step: the cache of sequence " +
                                        std::to_string(m.id) + " is full (" +
                                        std::to_string(m.cache->capacity()) + " positions)");
            tokens_.push_back(m.next_token);
            caches_.push_back(m.cache.get());
        }
        const Matrix& logits = decode_batch(model_, tokens_, caches_);
        for (std::size_t i = 0; i < members_.size(); ++i) {
            members_[i].next_token = argmax(logits.row_span(static_cast<int>(i)));
            members_[i].answer.push_back(members_[i].next_token);
        }
        return logits;
    }

    bool contains(int id) const {
        return std::any_of(members_.begin(), members_.end(),
                           [id](const Member& m) { return m.id == id; });
    }
    int size() const { return static_cast<int>(members_.size()); }
    bool empty() const { return members_.empty(); }
    const std::vector<Member>& members() const { return members_; }

  private:
    Transformer& model_;
    std::vector<Member> members_;
    std::vector<int> tokens_;       // scratch for step(): one token per member
    std::vector<KVCache*> caches_;  // scratch for step(): one cache per member
};

}  // namespace kv
