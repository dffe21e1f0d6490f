#include "generation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "rng.h"

namespace kv {

std::vector<int> fixed_prompt(int length, int vocab_size, std::uint64_t seed) {
    Rng rng(seed ^ 0x5EED0F9A0A7ull);  // a stream apart from the weights' stream
    std::vector<int> prompt(length);
    for (int& token : prompt) token = static_cast<int>(rng.below(std::uint64_t(vocab_size)));
    return prompt;
}

std::vector<std::vector<float>> logits_per_step(const Generator& generate,
                                                std::vector<int>& tokens) {
    std::vector<std::vector<float>> all;
    tokens = generate([&](int, std::span<const float> l) { all.emplace_back(l.begin(), l.end()); });
    return all;
}

double larger_difference(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
    return std::max(a, b);
}

double max_abs_difference(std::span<const float> a, std::span<const float> b) {
    if (a.size() != b.size()) throw std::invalid_argument("max_abs_difference: lengths differ");
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        worst = larger_difference(worst, double(std::fabs(a[i] - b[i])));
    return worst;
}

double max_abs_difference(const std::vector<std::vector<float>>& a,
                          const std::vector<std::vector<float>>& b) {
    if (a.size() != b.size()) throw std::invalid_argument("max_abs_difference: step counts differ");
    double worst = 0;
    for (std::size_t s = 0; s < a.size(); ++s)
        worst = larger_difference(worst, max_abs_difference(a[s], b[s]));
    return worst;
}

}  // namespace kv
