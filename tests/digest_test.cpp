// The kit's digest (common/kit/digest.h): FNV-1a 64 gives the published
// test vectors, a float goes in as its bit pattern (least significant byte
// first), and a change of one bit in one float, or of the floats' order,
// changes the digest.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "../common/kit/digest.h"

using namespace kv;

namespace {

std::string digest_of(const std::vector<float>& values) {
    Fnv1a64 digest;
    digest.add_floats(values);
    return digest.hex();
}

}  // namespace

TEST_CASE("FNV-1a 64 gives the published test vectors") {
    Fnv1a64 empty;
    CHECK(empty.hex() == "cbf29ce484222325");  // nothing hashed: the offset basis
    Fnv1a64 a;
    a.add_byte('a');
    CHECK(a.hex() == "af63dc4c8601ec8c");
    Fnv1a64 foobar;
    for (const char c : std::string_view("foobar")) foobar.add_byte(std::uint8_t(c));
    CHECK(foobar.hex() == "85944171f73967e8");
}

TEST_CASE("a float is hashed as the four bytes of its bit pattern") {
    // 1.0f is 0x3f800000: the bytes 00 00 80 3f, least significant first.
    Fnv1a64 bytes;
    for (const std::uint8_t b : {0x00, 0x00, 0x80, 0x3f}) bytes.add_byte(b);
    CHECK(digest_of({1.0f}) == bytes.hex());
    CHECK(digest_of({1.0f}) == "4b72477f9c5c2f98");  // computed apart, in Python
    CHECK(digest_of({}) == "cbf29ce484222325");
}

TEST_CASE("one bit changed in one float changes the digest") {
    const std::vector<float> logits = {0.25f, -1.5f, 3.0f, 1e-3f};
    const std::string before = digest_of(logits);
    for (std::size_t i = 0; i < logits.size(); ++i)
        for (int bit = 0; bit < 32; ++bit) {
            std::vector<float> changed = logits;
            changed[i] =
                std::bit_cast<float>(std::bit_cast<std::uint32_t>(changed[i]) ^ (1u << bit));
            CHECK(digest_of(changed) != before);
        }
    // One ulp, and the two zeros, which compare equal as floats.
    CHECK(digest_of({std::nextafter(0.25f, 1.0f), -1.5f, 3.0f, 1e-3f}) != before);
    CHECK(digest_of({0.0f}) != digest_of({-0.0f}));
    // The order counts: the same floats in another order are another digest.
    CHECK(digest_of({-1.5f, 0.25f, 3.0f, 1e-3f}) != before);
}
