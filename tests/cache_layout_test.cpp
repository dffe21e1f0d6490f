// Chapter 03's layout of the cache (cache_layout.h) against the addresses a
// real KVCache uses, and the offsets the program prints.
#include <doctest/doctest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "../chapters/03_memory_arithmetic/report.h"
#include "../common/core/kv_cache.h"

using namespace kv;

namespace {

// Bytes from the start of keys_ (or values_) to number d of KV head h at
// position p of layer l, read off a real cache's pointers.
std::int64_t real_offset(const KVCache& cache, const Config& c, bool values, int l, int p,
                         std::uint64_t h, std::uint64_t d) {
    const float* base = values ? cache.value(0, 0) : cache.key(0, 0);
    const float* at =
        (values ? cache.value(l, p) : cache.key(l, p)) + h * std::uint64_t(c.head_size()) + d;
    return reinterpret_cast<const char*>(at) - reinterpret_cast<const char*>(base);
}

Config shape(int layers, int dim, int heads, int kv_heads) {
    Config c;
    c.n_layers = layers;
    c.dim = dim;
    c.n_heads = heads;
    c.n_kv_heads = kv_heads;
    return c;
}

}  // namespace

TEST_CASE("the layout's offsets are the addresses KVCache uses") {
    for (const auto& [config, capacity] :
         {std::pair{Config(), 64}, std::pair{shape(3, 64, 4, 4), 10},
          std::pair{shape(1, 16, 2, 1), 1}}) {
        CAPTURE(config.describe());
        const KVCache cache(config, capacity);
        const CacheLayout layout = cache_layout(config, capacity);
        CHECK(layout.cache_bytes() == cache.bytes_allocated());
        CHECK(layout.token_bytes() == config.kv_bytes_per_token());
        CHECK(layout.token_bytes() == bytes_per_token(cache_shape_of(config)));
        const auto hs = std::uint64_t(config.head_size());
        for (int l = 0; l < config.n_layers; ++l)
            for (int p = 0; p < capacity; ++p)
                for (std::uint64_t h = 0; h < std::uint64_t(config.n_kv_heads); ++h)
                    for (const std::uint64_t d : {std::uint64_t(0), hs - 1})
                        for (const bool values : {false, true})
                            CHECK(real_offset(cache, config, values, l, p, h, d) ==
                                  std::int64_t(layout.offset(l, p, h, d)));
    }
}

TEST_CASE("chapter 03 prints where one token's bytes sit in the demo cache") {
    const Config demo;  // the chapter's demo model and its 64-position cache
    const std::string out = ch03::layout_words(cache_layout(demo, 64), 2);
    // Position 2 of each layer: 2 x 256 bytes in, then 16,384 bytes a layer.
    for (const char* figure :
         {"64 positions x 256 bytes = 16,384 bytes", "12 pieces of 256 bytes = 3,072 bytes",
          "keys_ + 512, 16,896, 33,280, 49,664, 66,048, 82,432 and values_ + the same"})
        CHECK(out.find(figure) != std::string::npos);
}
