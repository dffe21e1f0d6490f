// STAND-IN, for the lead to delete: tests/validate/options.h (helper ch05)
// defines ValidateOptions; until it is merged, chapters 07's and 08's
// checked queues take this one, with the fields they read.
#pragma once

#include <cstdint>

#include "../../common/core/config.h"

namespace kv {

struct ValidateOptions {
    Config model;            // the chapters' demo model
    std::uint64_t seed = 1;  // of the weights, the prompts and the workloads
    int requests = 128;      // requests in each checked queue
};

}  // namespace kv
