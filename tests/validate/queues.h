// Every queue chapter's checked queues, in the order of the chapters: each
// chapter's are in chNN_queues.h.
#pragma once

#include <utility>
#include <vector>

#include "../../common/lab/validation.h"
#include "ch05_queues.h"
#include "ch07_queues.h"
#include "ch08_queues.h"
#include "ch09_queues.h"
#include "options.h"

namespace kv {

inline std::vector<CheckedQueue> every_checked_queue(const ValidateOptions& o) {
    std::vector<CheckedQueue> queues = ch05_checked_queues(o);
    auto add = [&](std::vector<CheckedQueue> more) {
        for (CheckedQueue& q : more) queues.push_back(std::move(q));
    };
    add(ch07_checked_queues(o));
    add(ch08_checked_queues(o));
    add(ch09_checked_queues(o));
    return queues;
}

}  // namespace kv
