// Chapter 04: batched decoding, one step for many requests.
//
// At batch size 1 a decode step reads every weight of the model to do one
// multiply-add with each: few operations per byte read (where that lands a
// step against this machine's roofline, chapter 04 measures). Give the step B sequences at once and
// each weight, once loaded, serves B rows: B times the useful work for about the same bytes.
// Attention cannot be shared (each sequence has its own cache and its own length), so it runs per
// sequence; the weight products run once over a B-row matrix.
//
// Nothing about a sequence's arithmetic depends on its neighbours: every
// dot product adds its terms in the same order in a B-row product as in a
// one-row one (kernels.h), so a sequence decoded in any batch gets the same
// logits, to the last bit, as decoded alone.
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kv_cache.h"
#include "matrix.h"
#include "transformer.h"

namespace kv {

// One decode step for B sequences, each with its own cache at its own
// length (a ragged batch): tokens[i] goes to caches[i]. Row i of the result,
// valid until the next forward pass, holds sequence i's logits. A bad call
// throws before any cache is touched.
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

}  // namespace kv
