// What the queue tests ask of a step the scheduler planned.
#pragma once

#include <algorithm>

#include "../common/serving/step_plan.h"

namespace kv::test {

// Every row is a sequence past its prefill: a decode step (without the
// cache, one that recomputes every sequence).
inline bool is_decode_step(const StepPlan& plan) {
    return std::none_of(plan.rows.begin(), plan.rows.end(), [](const StepRow& row) {
        return row.request->status == RequestStatus::prefilling;
    });
}

}  // namespace kv::test
