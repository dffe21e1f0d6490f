// make bench: how close the book's engine runs to this machine's limits.
//
// It measures the limits itself (peak arithmetic, read bandwidth from DRAM,
// and a read of each row's own working set that fits in the reported
// last-level cache, one thread: common/fast/machine_probes.h),
// times decode at batch 1 and 16, decode over a 4,096-position cache, and
// prefill for three model shapes, and prints each as a fraction of the
// limits. Probes and workloads take turns, so that a spell of load on a
// shared machine hits both: in every round, before each workload, every
// probe runs once (more often if --repeats is larger than the number of
// workloads), so each limit is sampled at least as often as each
// workload's step, in the same minutes. The best sample of each is kept
// and the spread printed. Everything is timed in this thread's CPU time (a
// pause while the OS runs something else is not counted). What makes a row
// a measurement and a target met: measurement_rules.h. Beside the rows, in
// the same rounds: a plain peer compiled with -Ofast (plain_peer.h), a
// batch-2 step and paged caches against contiguous ones; and the kernel
// plan the engine ran with. The rounds and the rows are experiment.h; the
// tables, the JSON and the printing report.h.
#include "../../common/fast/kernel_plan.h"
#include "../../common/kit/chapter.h"
#include "experiment.h"
#include "report.h"

int main(int argc, char** argv) {
    kv::bench::Experiment experiment;  // --rounds and --repeats, with their defaults
    // The kernel plans live beside the program: build/kernel_plan.txt, as
    // the chapters' do (read if this machine and build made them, else made
    // now and saved).
    experiment.plan_file = kv::kernel_plan_file_beside_this_program();
    kv::keep_kernel_plans_in(experiment.plan_file);
    return kv::run_chapter(argc, argv, "bench",
                           "The engine against the machine's limits: arithmetic peak and read "
                           "bandwidth from DRAM and at each row's own working set.",
                           experiment, kv::bench::report);
}
