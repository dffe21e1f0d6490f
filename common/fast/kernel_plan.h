// Which matrix-product kernel each row class runs, chosen on this machine
// by timing the candidates (kernels.h), as FFTW and oneDNN choose theirs.
// Every candidate gives the same bits, so the choice changes only the time.
// The planner runs once per model shape, in well under a second; the plan
// is kept in memory and, if a file is named (keep_kernel_plans_in), saved
// there with the machine's and the build's identity for later runs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "../core/config.h"
#include "../core/kernels.h"
#include "../core/weights.h"

namespace kv {

// What a plan holds for: the CPU (/proc/cpuinfo) and the build (its vector
// instructions and compiler).
struct MachineIdentity {
    std::string cpu;    // "<model name>, family F, model M"
    std::string build;  // "avx512f avx2 fma sse2, gcc 12.2.0"
    bool operator==(const MachineIdentity&) const = default;
};
MachineIdentity this_machine();
// The cpu line from the text of /proc/cpuinfo: its model name, then x86's
// family and model or ARM's implementer and part, ", " between them.
std::string cpu_identity(const std::string& cpuinfo);

// The shapes a model multiplies by, as a plan names them:
// "layers 6 dim 256 kv_dim 64 ffn 768 vocab 4096".
std::string plan_key(const Config& config);

struct KernelPlan {
    std::string key;               // plan_key of the model shape
    MatmulChoice matmul;           // one kernel for each row class
    std::string how = "measured";  // or "read from PATH"
    double seconds = 0;            // the planner's time, when measured
};

// ------------------------------------------------------------ the planner

// How long the planner may take for one row class: the candidates take
// turns for at least min_rounds rounds and stop after max_rounds, or once
// their runs add up to `seconds`.
struct PlanBudget {
    int min_rounds = 3;
    int max_rounds = 20;
    double seconds = 0.08;
};

// The candidate (0..candidates-1) whose fastest run is shortest; time(k)
// runs candidate k once and says how long it took. Round r starts at
// candidate r % candidates; ties go to the earlier candidate.
int fastest_candidate(int candidates, const std::function<double(int)>& time,
                      const PlanBudget& budget = {});

// time(row class, k): one run of matmul_kernels(row class)[k]. One row and
// many rows get the fastest of their candidates; a few rows run the one-row
// kernel (the same candidate of their list, which is one row's): the same
// weights streamed past with more rows of work, so a step of two rows is
// never shorter than a step of one, whatever the timer's noise.
using CandidateTimer = std::function<double(RowClass, int)>;
MatmulChoice choose_matmul(const CandidateTimer& time, const PlanBudget& budget = {});

// The timer the model's plan uses, in this thread's CPU time: inputs of the
// class's row count (1, or 16 for many) times the model's own weight matrices
// in a forward pass's order, walking the whole model (past 32 MiB, whole
// layers in turn), so that the weights come from where a decode step finds
// them: a tile that is fastest on weights in L2 can be slow on weights
// that arrive from DRAM.
CandidateTimer model_timer(const Weights& weights);

// ------------------------------------------------------------- plan files

// A plan file: a comment, the machine's identity, one line per model shape:
//   cpu: <model name>, family F, model M
//   build: avx512f avx2 fma sse2, gcc 12.2.0
//   plan layers 6 dim 256 kv_dim 64 ffn 768 vocab 4096: one stream8 few stream4 many tile4x4
std::string plan_file_text(const MachineIdentity& machine, const std::vector<KernelPlan>& plans);
// The plans of a file written for `machine` (none if for another), lines
// naming unknown kernels skipped.
std::vector<KernelPlan> read_plan_text(const std::string& text, const MachineIdentity& machine);

// ------------------------------------------------- the plans of this process

// The plan for this model shape: made before, else read from the plan
// file, else measured now on these weights and saved.
MatmulChoice matmul_plan(const Config& config, const Weights& weights);

// Where plans are saved and read: "" keeps them in memory. Unless told,
// a program keeps them beside itself (build/kernel_plan.txt for
// build/ch02), so that each build keeps its own.
void keep_kernel_plans_in(const std::string& path);
std::string kernel_plan_file_beside_this_program();  // "" if its folder is unknown

// Every plan this process has used, in the order they were first needed.
std::vector<KernelPlan> kernel_plans_used();

}  // namespace kv
