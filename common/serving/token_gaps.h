// The gaps between two tokens of one answer, kept as runs of equal gaps.
// The rows of one step mostly waited the same time since their last token,
// so a queue of millions of answer tokens keeps about one run per step, not
// one number per token (a queue of 10 million requests once held 3.8 GB of
// gaps and copied them to sort). The percentiles read from the runs are the
// ones the full sorted list gives, exactly.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace kv {

struct TokenGaps {
    struct Run {
        double gap = 0;         // seconds between two tokens of one answer
        std::int64_t count = 0;  // gaps of that length in a row, as they came out
    };
    std::vector<Run> runs;  // (runs) in the order the gaps came out
    std::int64_t total = 0;  // gaps over all runs

    void push_back(double gap) {
        if (runs.empty() || runs.back().gap != gap) runs.push_back({gap, 0});
        ++runs.back().count;
        ++total;
    }
    std::size_t size() const { return std::size_t(total); }
    bool empty() const { return total == 0; }

    // Every gap, as they came out (for tests and small queues).
    std::vector<double> all() const {
        std::vector<double> v;
        for (const Run& r : runs) v.insert(v.end(), std::size_t(r.count), r.gap);
        return v;
    }
};

// The runs sorted by gap, equal gaps merged: the sorted list, counted.
inline std::vector<TokenGaps::Run> sorted_runs(const TokenGaps& g) {
    std::vector<TokenGaps::Run> s = g.runs;
    std::sort(s.begin(), s.end(), [](const auto& a, const auto& b) { return a.gap < b.gap; });
    std::vector<TokenGaps::Run> merged;
    for (const TokenGaps::Run& r : s)
        if (!merged.empty() && merged.back().gap == r.gap)
            merged.back().count += r.count;
        else
            merged.push_back(r);
    return merged;
}

// The q-quantile by nearest rank (metrics.h's percentile) of the runs sorted.
inline double percentile(const std::vector<TokenGaps::Run>& sorted, std::int64_t total, double q) {
    if (total == 0) return 0;
    const double rank = std::clamp(std::ceil(q * double(total)), 1.0, double(total));
    std::int64_t seen = 0;
    for (const TokenGaps::Run& r : sorted)
        if ((seen += r.count) >= std::int64_t(rank)) return r.gap;
    return sorted.back().gap;
}

}  // namespace kv
