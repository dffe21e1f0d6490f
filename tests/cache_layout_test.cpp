// Chapter 03's layout of the cache (cache_layout.h) and its picture
// (plots/03_cache_layout.svg) against the addresses a real KVCache uses.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../chapters/03_memory_arithmetic/report.h"
#include "../common/core/kv_cache.h"
#include "svg_check.h"

using namespace kv;

namespace {

// Bytes from the start of keys_ (or values_) to the number a label names,
// read off a real cache's pointers.
std::int64_t real_offset(const KVCache& cache, const Config& c, const ch03::LayoutLabel& l) {
    const int layer = int(l.layer), pos = int(l.position);
    const float* base = l.in_values ? cache.value(0, 0) : cache.key(0, 0);
    const float* at = (l.in_values ? cache.value(layer, pos) : cache.key(layer, pos)) +
                      l.kv_head * std::uint64_t(c.head_size()) + l.number;
    return reinterpret_cast<const char*>(at) - reinterpret_cast<const char*>(base);
}

// `n` stands in the picture's text as a number of its own: a label's
// whole text, or a word of a sentence ("keys_ + 512, 16,896 and ...").
bool prints_number(const std::string& svg, const std::string& n) {
    for (std::size_t at = svg.find(n); at != std::string::npos; at = svg.find(n, at + 1)) {
        const char before = at ? svg[at - 1] : ' ', after = svg[at + n.size()];
        if ((before == '>' || before == ' ') && (after == '<' || after == ',' || after == ' '))
            return true;
    }
    return false;
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
                    for (const std::uint64_t d : {std::uint64_t(0), hs - 1}) {
                        const ch03::LayoutLabel k{
                            false, std::uint64_t(l),         std::uint64_t(p), h,
                            d,     layout.offset(l, p, h, d)};
                        ch03::LayoutLabel v = k;
                        v.in_values = true;
                        CHECK(real_offset(cache, config, k) == std::int64_t(k.offset));
                        CHECK(real_offset(cache, config, v) == std::int64_t(v.offset));
                    }
    }
}

TEST_CASE("every offset chapter 03's layout plot prints is where KVCache keeps that number") {
    const Config demo;  // the chapter's demo model and its 64-position cache
    const KVCache cache(demo, 64);
    const CacheLayout layout = cache_layout(demo, 64);
    const ch03::LayoutPlot plot = ch03::cache_layout_plot(layout, 2);
    CHECK(test::svg_problem(plot.svg) == "");
    REQUIRE(plot.labels.size() > 20);
    bool any_values = false, any_later_layer = false, any_head = false;
    for (const ch03::LayoutLabel& label : plot.labels) {
        CAPTURE(label.layer);
        CAPTURE(label.position);
        CAPTURE(label.kv_head);
        CAPTURE(label.number);
        CHECK(real_offset(cache, demo, label) == std::int64_t(label.offset));
        CHECK(prints_number(plot.svg, with_commas(label.offset)));
        any_values |= label.in_values;
        any_later_layer |= label.layer > 0 && label.position == 0;
        any_head |= label.kv_head > 0;
    }
    CHECK(any_values);
    CHECK(any_later_layer);
    CHECK(any_head);
    // The figures a reader checks by hand: a layer's block, a position, a
    // token, and the whole cache.
    for (const char* figure : {"16,384", "256 bytes", "3,072 bytes", "196,608 bytes"})
        CHECK(plot.svg.find(figure) != std::string::npos);
}
