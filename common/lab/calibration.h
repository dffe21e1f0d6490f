// The lab: the step cost (serving/step_cost.h) measured on this machine.
//
// Time the real engine at steps of every mix (decode rows, prompt chunks,
// both, near the start of the context and deep in it), each the fastest of
// a few rounds, then fit the formula's five prices by non-negative least
// squares on relative error. It takes a few seconds, once per machine,
// build and model shape (machine_step_cost below).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "../core/config.h"
#include "../core/transformer.h"
#include "../serving/step_cost.h"

namespace kv {

// ----------------------------------------------------------- the fit

// seconds ~ k[0] f0 + k[1] f1 + ... over N features, each point weighted by
// 1/seconds so that the fit minimizes relative error (a 1 ms step counts as
// much as a 100 ms prefill), with every k >= 0: no work takes negative
// time. Fitting every subset of the unknowns and keeping the best
// non-negative one is an exact non-negative least squares (2^N - 1 small
// systems). `fitted` gets what the result says at each point.
template <std::size_t N>
std::array<double, N> fit_nonnegative(std::span<const std::array<double, N>> features,
                                      std::span<const double> seconds, std::span<double> fitted) {
    std::array<double, N> scale;  // columns scaled to at most 1 keep the system well conditioned
    scale.fill(1);
    for (std::size_t i = 0; i < features.size(); ++i)
        for (std::size_t j = 0; j < N; ++j)
            scale[j] = std::max(scale[j], std::fabs(features[i][j] / seconds[i]));

    std::array<double, N> best{};
    double best_residual = std::numeric_limits<double>::infinity();
    for (unsigned mask = 1; mask < (1u << N); ++mask) {
        std::vector<std::size_t> cols;
        for (std::size_t j = 0; j < N; ++j)
            if (mask >> j & 1) cols.push_back(j);
        const std::size_t m = cols.size();
        // Normal equations: (A^T A) k = A^T 1, where row i of A is
        // (features of point i) / seconds_i, so a perfect fit gives all ones.
        std::array<std::array<double, N + 1>, N> M{};
        for (std::size_t i = 0; i < features.size(); ++i)
            for (std::size_t r = 0; r < m; ++r) {
                const double ar = features[i][cols[r]] / seconds[i] / scale[cols[r]];
                for (std::size_t c = 0; c < m; ++c)
                    M[r][c] += ar * features[i][cols[c]] / seconds[i] / scale[cols[c]];
                M[r][m] += ar;
            }
        bool solved = true;  // Gaussian elimination with partial pivoting
        for (std::size_t c = 0; c < m && solved; ++c) {
            std::size_t pivot = c;
            for (std::size_t r = c + 1; r < m; ++r)
                if (std::fabs(M[r][c]) > std::fabs(M[pivot][c])) pivot = r;
            std::swap(M[c], M[pivot]);
            if (std::fabs(M[c][c]) < 1e-12) solved = false;
            for (std::size_t r = 0; r < m && solved; ++r)
                if (r != c) {
                    const double f = M[r][c] / M[c][c];
                    for (std::size_t k = c; k <= m; ++k) M[r][k] -= f * M[c][k];
                }
        }
        if (!solved) continue;
        std::array<double, N> k{};
        bool non_negative = true;
        for (std::size_t r = 0; r < m; ++r) {
            k[cols[r]] = M[r][m] / M[r][r] / scale[cols[r]];
            non_negative = non_negative && k[cols[r]] >= 0;
        }
        if (!non_negative) continue;
        double residual = 0;
        for (std::size_t i = 0; i < features.size(); ++i) {
            double t = 0;
            for (std::size_t j = 0; j < N; ++j) t += k[j] * features[i][j];
            const double e = t / seconds[i] - 1;
            residual += e * e;
        }
        if (residual < best_residual) {
            best_residual = residual;
            best = k;
        }
    }
    for (std::size_t i = 0; i < features.size() && i < fitted.size(); ++i) {
        fitted[i] = 0;
        for (std::size_t j = 0; j < N; ++j) fitted[i] += best[j] * features[i][j];
    }
    return best;
}

// ------------------------------------------------------ the steps timed

// A step the calibration times: `batch` decode rows at `context` cached
// positions each, beside a chunk of `chunk` prompt tokens after `first`.
struct StepShape {
    int batch = 0, context = 0, chunk = 0, first = 0;
};

struct StepProbe {
    std::string what;    // "decode 8 x 256 + chunk 64 after 0"
    double seconds = 0;  // measured: the fastest of the rounds
    double fitted = 0;   // what the fitted formula says
};

struct StepCalibration {
    StepCost cost;
    std::vector<StepProbe> probes;
    double seconds = 0;   // wall time the calibration took
    bool reused = false;  // read back from the saved file, not measured now
    std::string path;     // the saved file ("" if none)
};

// The widest batch and the largest chunk timed; beyond them the formula
// extrapolates.
inline constexpr int kMostCalibratedBatch = 64;
inline constexpr int kLargestCalibratedChunk = 256;

// Shapes spanning the queues of the model `c`, contexts up to its max_seq.
std::vector<StepShape> calibration_shapes(const Config& c);

// Positions of KV cache the calibration holds at once (one shape's
// caches), for the check that it fits in memory.
std::uint64_t calibration_positions(const Config& c);

// --------------------------------------------------- once per machine

// The step cost of the model `c` on this machine: read from the file saved
// in `folder` (by default build/calibration/ beside the program; "": none)
// unless `again`, or the prices there are not this machine's, build's and
// model's, or make no sense (read_saved in calibration.cpp says what is
// checked); otherwise measured now and saved. The source text says which,
// and why saved prices were not used. One run at a time measures in a
// folder; another waits, then reuses what the first saved. A file that
// cannot be written is no error: the source text says so.
StepCalibration machine_step_cost(const Config& c, std::uint64_t seed, bool again);
StepCalibration machine_step_cost(const Config& c, std::uint64_t seed, bool again,
                                  const std::string& folder);

// What the saved prices are tied to: this CPU and this build (fast/kernel_plan.h).
std::string machine_and_build();

}  // namespace kv
