// Chapter 11: one request whose prefix is already computed somewhere.
//
// A prompt of P prefix tokens and a question after them, served four ways:
//   pool:      the prefix's blocks are in the pool (chapter 08's hit);
//   warm:      they are read back from the tier file, which the operating
//              system still holds in its page cache (memory in disguise);
//   cold:      the same, the file's pages dropped first: read from the disk
//              (and once more past the page cache, with O_DIRECT);
//   recompute: nothing was kept, the whole prompt is prefilled.
// Each time is the thread's processor time plus the moments a read of the
// tier file waited for the disk (which the processor time leaves out), as
// the engine's queue counts it: other programs on the machine do not
// stretch it, a slow disk does. The median of a few runs. Every way gives the
// first answer token's logits; they must be the same to the last bit. Each
// way runs and is timed whatever an earlier comparison found, so that a
// "no" never leaves a time that measured nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "../../common/core/block_pool.h"
#include "../../common/core/paged_kv_cache.h"
#include "../../common/core/timing.h"
#include "../../common/core/transformer.h"
#include "../../common/serving/tier_file.h"

namespace kv {

struct OneRequest {
    int prefix = 0;           // P: tokens before the question, whole blocks reused
    std::uint64_t bytes = 0;  // the prefix's blocks as the tier holds them
    double pool_s = 0, warm_s = 0, cold_s = 0, recompute_s = 0;  // time to first token
    double warm_read_s = 0, cold_read_s = 0;                     // of those, the reading
    double direct_read_s = 0;      // the reading with O_DIRECT (0: the file system refused it)
    double write_s = 0;            // writing the prefix's blocks to the tier, once
    std::int64_t pages_left = -1;  // the most of the file's pages cached after a drop (0: cold)
    bool same_logits = false;      // the four ways agree to the last bit

    double warm_bandwidth() const { return double(bytes) / warm_read_s; }
    double cold_bandwidth() const { return double(bytes) / cold_read_s; }
    double direct_bandwidth() const {
        return direct_read_s > 0 ? double(bytes) / direct_read_s : 0;
    }
};

// `prompt` = the prefix, then the question; its first `prefix` tokens (whole
// blocks of `pool`) are the part kept. `file` must have a slot per block.
inline OneRequest serve_one(Transformer& model, BlockPool& pool, TierFile& file,
                            std::span<const int> prompt, int prefix, int repeats,
                            int recompute_repeats) {
    const int B = pool.block_size(), blocks = prefix / B, capacity = int(prompt.size());
    const std::span<const int> question = prompt.subspan(std::size_t(blocks * B));
    using Logits = std::vector<float>;
    auto answer = [&](std::span<const int> tokens, KVStore& cache) {
        const std::span<const float> l = model.forward(tokens, cache);
        return Logits(l.begin(), l.end());
    };
    auto now = [&] { return thread_cpu_seconds() + file.counts().waited_seconds; };
    auto since = [&](double t0) { return now() - t0; };
    OneRequest r;
    r.prefix = blocks * B;
    r.bytes = std::uint64_t(blocks) * TierFile::slot_bytes(pool.bytes_per_block(), B);

    // Recompute: the whole prompt; the first run's blocks stay for the other ways.
    PagedKVCache filled(pool, capacity);
    auto t0 = now();
    const Logits recomputed = answer(prompt, filled);
    std::vector<double> times = {since(t0)};
    bool same = true;
    for (int rep = 1; rep < recompute_repeats; ++rep) {
        PagedKVCache fresh(pool, capacity);
        t0 = now();
        const bool agrees = answer(prompt, fresh) == recomputed;
        times.push_back(since(t0));
        same = same && agrees;
    }
    r.recompute_s = median(times);
    const std::span<const int> table(filled.block_table().data(), std::size_t(blocks));
    auto name = [&](int b) {
        return BlockName{b - 1, prompt.subspan(std::size_t(b * B), std::size_t(B))};
    };
    t0 = now();
    for (int b = 0; b < blocks; ++b) file.write(b, name(b), table[std::size_t(b)]);
    r.write_s = since(t0);

    // Pool: the prefix's blocks taken as they are, the question computed.
    times.clear();
    for (int rep = 0; rep < repeats; ++rep) {
        PagedKVCache hit(pool, capacity);
        const auto start = now();
        hit.adopt(table, r.prefix);
        const bool agrees = answer(question, hit) == recomputed;
        times.push_back(since(start));
        same = same && agrees;
    }
    r.pool_s = median(times);

    // Warm, cold, then past the page cache (O_DIRECT): the prefix read back
    // into free blocks.
    enum Way { warm, cold, direct };
    for (const Way way : {warm, cold, direct}) {
        if (way == direct && !file.read_direct()) break;
        std::vector<double> reads;
        times.clear();
        for (int rep = 0; rep < repeats; ++rep) {
            if (way == cold) r.pages_left = std::max(r.pages_left, file.drop_cached_pages());
            const auto start = now();
            std::vector<int> read;
            for (int b = 0; b < blocks; ++b) {
                read.push_back(pool.allocate());
                const bool read_back = file.read(b, name(b), read.back());
                same = same && read_back;
            }
            reads.push_back(since(start));
            PagedKVCache back(pool, capacity);
            back.adopt(read, r.prefix);
            for (int b : read) pool.release(b);  // the sequence holds them now
            const bool agrees = answer(question, back) == recomputed;
            times.push_back(since(start));
            same = same && agrees;
        }
        if (way == direct) {
            r.direct_read_s = median(reads);
        } else {
            (way == cold ? r.cold_s : r.warm_s) = median(times);
            (way == cold ? r.cold_read_s : r.warm_read_s) = median(reads);
        }
    }
    r.same_logits = same;
    return r;
}

}  // namespace kv
