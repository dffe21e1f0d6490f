// The serving lesson: what one engine step costs, in seconds.
//
// Every step (step_plan.h: a prefill, a decode step, a recomputation, a
// mix of prompt chunks and decode rows) is priced by one formula, from what
// the forward pass does (StepWork counts it):
//   step = fixed + per_row x rows + per_sequence x sequences
//          + per_pair x pairs + per_position x positions
// It reads the weights once, however many rows it carries (fixed); every
// row (token) goes through the layers' weights; every sequence gets one row
// of logits, the output projection; a row of n tokens after `first` cached
// ones attends to n first + n (n + 1) / 2 (query, position) pairs, and reads
// its sequence's keys and values, first + n positions, once for all its rows.
// The five prices are counted (analytic_step_cost, below: the same on every
// machine) or fitted to this machine's engine (common/lab/calibration.h).
// The simulator prices a step by this formula and nothing else.
#pragma once

#include <string>

#include "../core/config.h"
#include "step_plan.h"

namespace kv {

// What one step does, counted from its plan.
struct StepWork {
    double rows = 0;       // tokens through the weights
    double sequences = 0;  // rows of logits
    double pairs = 0;      // (query, cached position) pairs attention visits
    double positions = 0;  // positions whose keys and values the sequences read

    // One sequence's part: n tokens after `first` cached ones.
    void add(double first, double n) {
        rows += n;
        sequences += 1;
        pairs += n * first + n * (n + 1) / 2;
        positions += first + n;
    }
};

inline StepWork work_of(const StepPlan& plan) {
    StepWork w;
    for (const StepRow& row : plan.rows) w.add(row.first, row.tokens);
    return w;
}

struct StepCost {
    double fixed = 0;         // seconds per step: the weights read once
    double per_row = 0;       // seconds per token through the layers
    double per_sequence = 0;  // seconds per row of logits
    double per_pair = 0;      // seconds per pair attention visits
    double per_position = 0;  // seconds per position a sequence's attention reads
    double fit_error = 0;     // measured: largest relative error over the calibration's steps
    std::string source;       // "analytic (...)" or "measured on this machine ..."

    double seconds(const StepWork& w) const {
        return fixed + per_row * w.rows + per_sequence * w.sequences + per_pair * w.pairs +
               per_position * w.positions;
    }
    double seconds(const StepPlan& plan) const { return seconds(work_of(plan)); }

    // Two corners a reader asks about: a prompt's prefill, and a decode
    // step of `batch` sequences holding `context` cached positions in all.
    double prefill_seconds(int prompt) const {
        StepWork w;
        w.add(0, prompt);
        return seconds(w);
    }
    double decode_seconds(int batch, double context) const {
        StepWork w;
        w.rows = w.sequences = batch;
        w.pairs = w.positions = context + batch;
        return seconds(w);
    }
};

// ------------------------------------------------------------- analytic

// Round numbers for one laptop core, not a measurement: the analytic prices
// are the same everywhere, so that tests check the scheduler to the last bit.
inline constexpr double kAnalyticFlopsPerSecond = 40e9;  // multiply-adds count as 2
inline constexpr double kAnalyticBytesPerSecond = 40e9;  // from memory to the core

// Prices a step by the arithmetic it does plus the bytes it reads: no
// overlap, an upper bound (chapter 04's roofline takes the larger, a lower
// one). The sum is linear in the counts: the same five prices a calibration
// fits.
inline StepCost analytic_step_cost(const Config& c) {
    const double F = kAnalyticFlopsPerSecond, B = kAnalyticBytesPerSecond;
    // A multiply and an add per multiplied weight (Config::multiplied_parameters):
    // wq, wk, wv, wo, w1, w2, w3 for every row, the output projection once
    // per sequence (only its last row's logits are wanted).
    const double output_flops = 2.0 * c.vocab_size * c.dim;
    const double layer_flops = 2.0 * double(c.multiplied_parameters()) - output_flops;
    StepCost s;
    s.fixed = double(c.weight_bytes_read_per_pass()) / B;  // every weight but the embedding
    s.per_row = layer_flops / F;
    s.per_sequence = output_flops / F;
    // One query against one cached position: scores and weighted values in
    // every layer (4 dim flops), and that position's keys and values read.
    s.per_pair = 4.0 * c.dim * c.n_layers / F + double(c.kv_bytes_per_token()) / B;
    s.source = "analytic (operation counts at 40 GFLOP/s and 40 GB/s)";
    return s;
}

}  // namespace kv
