// Chapter 05: the cost model, what each piece of work costs in seconds.
//
// The scheduler only ever asks the model for two kinds of work:
//   a pass over whole sequences: the prefill of a prompt, or, without the
//     cache, a step that recomputes every running sequence from its first
//     token. The weight products cost the same for every row (token), and
//     attention grows with the pairs of positions, about length^2 / 2:
//       pass(rows, sum of length^2) = a + b rows + c sum(length^2)
//   a decode step with the cache: one new token for each of B sequences.
//     The weights are read once for the whole batch (d), each sequence adds
//     its row of products (e), and attention reads every cached position (f):
//       decode(B, sum of context) = d + e B + f sum(context)
// The coefficients come from timing the real engine (calibration.h) or,
// for tests and exact reproducibility, from counting operations (below).
#pragma once

#include <string>

#include "../core/config.h"

namespace kv {

struct CostModel {
    double pass_fixed = 0;         // a: seconds per pass, whatever its size
    double pass_per_token = 0;     // b: seconds per row through the weights
    double pass_per_token_sq = 0;  // c: seconds per unit of sum(length^2), attention
    double step_fixed = 0;         // d: seconds per decode step, reading the weights once
    double step_per_sequence = 0;  // e: seconds per sequence in the batch
    double step_per_context = 0;   // f: seconds per cached position attended to
    double fit_error = 0;          // largest relative error over the calibration points
    // The level a real queue runs each kind of step at, against the
    // formulas above (calibration.h, calibrate_on_a_queue); 1: as priced.
    double prefill_scale = 1;      // a prefill with the cache
    double single_step_scale = 1;  // a decode step of one sequence (all of serial service)
    double batch_step_scale = 1;   // a decode step of two or more sequences
    std::string source;            // "analytic", "measured on this machine", or a file
    std::string model;             // Config::describe() of the model it prices

    // A pass over whole sequences: `tokens` rows, sum of squared lengths.
    double pass_seconds(double tokens, double tokens_squared) const {
        return pass_fixed + pass_per_token * tokens + pass_per_token_sq * tokens_squared;
    }
    double prefill_seconds(int prompt) const {
        return pass_seconds(prompt, double(prompt) * prompt);
    }
    // A decode step for `sequences` rows whose caches hold `context` positions in all.
    double decode_seconds(double sequences, double context) const {
        return step_fixed + step_per_sequence * sequences + step_per_context * context;
    }
};

// ------------------------------------------------------------- analytic

// Round numbers for one laptop core, not a measurement: the analytic model
// exists to be exact and the same everywhere, so that tests can check the
// scheduler to the last bit. Shapes, not speeds, are what it gets right.
inline constexpr double kAnalyticFlopsPerSecond = 40e9;  // multiply-adds count as 2
inline constexpr double kAnalyticBytesPerSecond = 40e9;  // from memory to the core

// Prices every pass by the arithmetic it does and the bytes it must read.
// It adds the two times (memory + compute). Adding assumes no overlap:
// every byte read and every FLOP done in turn, an upper bound at these
// rates. Chapter 04's roofline takes the larger of the two, which assumes
// perfect overlap, a lower bound; one real thread lies between them. The
// sum is used because it is linear in the counts, so it fills the same six
// coefficients the calibration fits (the larger of two lines is not a
// line), and because it is exact and the same on every machine. For the
// demo model, with 57 cached positions a sequence, the sum is 1.51 times
// the larger for one sequence, 1.99 times for two (the widest gap) and
// 1.10 times for 22: next to the roofline it charges small batches more
// (README, "The cost model").
inline CostModel analytic_cost_model(const Config& c) {
    const double F = kAnalyticFlopsPerSecond, B = kAnalyticBytesPerSecond;
    // A multiply and an add per multiplied weight (Config::multiplied_parameters):
    // the layers' wq, wk, wv, wo, w1, w2, w3 for every row, the output
    // projection only for the row whose logits are wanted.
    const double output_flops = 2.0 * c.vocab_size * c.dim;  // logits of one row
    const double layer_flops = 2.0 * double(c.multiplied_parameters()) - output_flops;
    // Every weight but a lookup-only embedding is read once per pass.
    const double weights_read = double(c.weight_bytes_read_per_pass());
    // One query against one cached position: scores and weighted values in
    // every layer (4 dim flops), and that position's keys and values read.
    const double per_pair = 4.0 * c.dim * c.n_layers / F + double(c.kv_bytes_per_token()) / B;

    CostModel m;
    m.pass_fixed = weights_read / B + output_flops / F;  // only the last row needs logits
    m.pass_per_token = layer_flops / F + per_pair / 2;   // L(L+1)/2 pairs = L^2/2 + L/2
    m.pass_per_token_sq = per_pair / 2;
    m.step_fixed = weights_read / B;
    m.step_per_sequence = (layer_flops + output_flops) / F + per_pair;  // it attends to itself
    m.step_per_context = per_pair;
    m.source = "analytic (operation counts at 40 GFLOP/s and 40 GB/s)";
    m.model = c.describe();
    return m;
}

}  // namespace kv
