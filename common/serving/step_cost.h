// Chapter 09: one price for every kind of step.
//
// Chapter 05 priced two kinds of step with two formulas: a pass over whole
// prompts, and a decode step. A mixed step is both at once, so it needs
// one formula for any step, built from what the forward pass does:
//   it reads the weights once, however many rows it carries (fixed);
//   every row (token) goes through the layers' weights (per row);
//   every sequence in it gets one row of logits, the output projection
//     (per sequence);
//   every row attends to the positions before it and itself: a row of n
//     tokens after `first` cached ones attends to n first + n (n + 1) / 2
//     pairs (per pair);
//   and every sequence's keys and values, first + n positions, are brought
//     in from memory for its rows (per position). A decode row reads each
//     position for one pair; a chunk of 64 tokens reads it once for 64
//     pairs, from the caches close to the core. Measured in one session on
//     a shared Intel Xeon (Emerald Rapids), when this term was added
//     (2a36105), a pair cost a decode step more than it cost a chunk: with
//     one price for both, decode steps of 8 and 32 sequences at 511
//     positions came out 24 and 18 % below their measured times; with the
//     fifth term, the largest error of the 38 probes fell from 24 to 18 %
//     in the same session (how close the fit comes moves with the load).
//   step = fixed + per_row x rows + per_sequence x sequences
//          + per_pair x pairs + per_position x positions
// A decode step of B sequences is B rows, B sequences and context + B
// pairs; a prefill of L tokens is L rows, 1 sequence and L (L + 1) / 2
// pairs: chapter 05's two formulas are this one at two corners. The
// counted (analytic) version below is chapter 05's, regrouped (the same
// prices up to rounding in the last bits); the measured one
// (step_calibration.h) is fitted to steps of every kind, mixed ones among
// them.
#pragma once

#include <string>
#include <utility>

#include "../core/config.h"
#include "cost_model.h"
#include "scheduler.h"
#include "step_plan.h"

namespace kv {

// What one step does, counted from its plan.
struct StepWork {
    double rows = 0;       // tokens through the weights
    double sequences = 0;  // rows of logits
    double pairs = 0;      // (query, cached position) pairs attention visits
    double positions = 0;  // positions whose keys and values the sequences read
};

// Attention pairs of n new tokens after `first` cached ones.
inline double attention_pairs(double first, double n) {
    return n * first + n * (n + 1) / 2;
}

inline StepWork work_of(const StepPlan& plan) {
    StepWork w;
    for (const StepRow& row : plan.rows) {
        w.rows += row.tokens;
        w.sequences += 1;
        w.pairs += attention_pairs(row.first, row.tokens);
        w.positions += row.first + row.tokens;
    }
    return w;
}

// The three kinds of step a queue runs: prompt tokens only (a prefill, or
// chunks with no decode row beside them), decode rows only, or both.
enum class StepKind { prompt, decode, mixed };
inline StepKind kind_of(const StepPlan& plan) {
    bool prompt = false, decode = false;
    for (const StepRow& row : plan.rows)
        (row.request->status == RequestStatus::prefilling ? prompt : decode) = true;
    return prompt && decode ? StepKind::mixed : prompt ? StepKind::prompt : StepKind::decode;
}

struct StepCost {
    double fixed = 0;         // seconds per step: the weights read once
    double per_row = 0;       // seconds per token through the layers
    double per_sequence = 0;  // seconds per row of logits
    double per_pair = 0;      // seconds per pair attention visits
    double per_position = 0;  // seconds per position a sequence's attention reads
    double fit_error = 0;     // measured: largest relative error over the probes
    std::string source;       // "analytic ..." or "measured on this machine"
    // The level a real queue runs each kind of step at, against the
    // formula (step_calibration.h, level_steps); 1: as the formula says.
    double prompt_scale = 1, decode_scale = 1, mixed_scale = 1;

    // The formula alone, as the probes are fitted.
    double seconds(const StepWork& w) const {
        return fixed + per_row * w.rows + per_sequence * w.sequences + per_pair * w.pairs +
               per_position * w.positions;
    }
    double scale(StepKind k) const {
        return k == StepKind::prompt   ? prompt_scale
               : k == StepKind::decode ? decode_scale
                                       : mixed_scale;
    }
    // A step of a queue: the formula at its kind's level.
    double seconds(const StepPlan& plan) const {
        return seconds(work_of(plan)) * scale(kind_of(plan));
    }
};

// The operation counts of chapter 05's analytic model, in this one formula.
// It charges every pair its position's bytes (per_pair), as chapter 05's
// does, and nothing per position.
inline StepCost analytic_step_cost(const Config& c) {
    const CostModel m = analytic_cost_model(c);
    StepCost s;
    s.fixed = m.step_fixed;                        // the weights, read once
    s.per_pair = m.step_per_context;               // one query against one position
    s.per_sequence = m.pass_fixed - m.step_fixed;  // the logits of one row
    s.per_row = m.step_per_sequence - s.per_sequence - s.per_pair;  // the layers
    s.source = m.source;
    return s;
}

// Prices each step with one StepCost and does none of the work: chapter
// 05's simulated executor, for steps of any mix.
class StepCostSimulator : public Executor {
  public:
    explicit StepCostSimulator(StepCost cost) : cost_(std::move(cost)) {}  // its own copy
    double run(const StepPlan& plan) override { return cost_.seconds(plan); }

  private:
    StepCost cost_;
};

}  // namespace kv
