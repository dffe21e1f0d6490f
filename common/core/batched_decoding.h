// Chapter 04: batched decoding, one step for many requests.
//
// At batch size 1 a decode step reads every weight of the model to do one
// multiply-add with each: few operations per byte read (chapter 04 places
// that on this machine's roofline). Give the step B sequences and each
// weight, once loaded, serves B rows: B times the work for about the same
// bytes. Attention runs per sequence (each has its own cache and length);
// the weight products run once over a B-row matrix. Every dot product adds
// its terms in the same order in a B-row product as in a one-row one
// (kernels.h), so a sequence gets the same logits, to the last bit, in any
// batch as alone.
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kv_cache.h"
#include "matrix.h"
#include "transformer.h"

namespace kv {

// One decode step for B sequences, each cache at its own length (a ragged
// batch): tokens[i] goes to caches[i]; row i of the result (valid until the
// next pass) holds sequence i's logits. A bad call throws, touching no cache.
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
