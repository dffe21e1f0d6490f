// Built with the book's own flags (-ffp-contract=off): the probe's
// acc * a + b stays a multiply and an add, as in common/core/kernels.cpp.
#include "probes.h"

#include "chain.h"

namespace kv::bench {

double peak_mul_add_flops() {
    return measure_chain_flops();
}

}  // namespace kv::bench
