// Built with -ffp-contract=fast (see the Makefile), so the probe's
// acc * a + b becomes one fused multiply-add where the CPU has one.
#include "chain.h"
#include "probes.h"

namespace kv::bench {

double peak_fma_flops() {
    return measure_chain_flops();
}

}  // namespace kv::bench
