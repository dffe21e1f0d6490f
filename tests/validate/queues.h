// Every queue chapter's checked queues, in the order of the chapters: each
// chapter's are in chNN_queues.h, and a chapter whose file is not there is
// left out.
#pragma once

#include <utility>
#include <vector>

#include "../../common/lab/validation.h"
#include "ch05_queues.h"
#include "options.h"
#if __has_include("ch07_queues.h")
#include "ch07_queues.h"
#endif
#if __has_include("ch08_queues.h")
#include "ch08_queues.h"
#endif
#if __has_include("ch09_queues.h")
#include "ch09_queues.h"
#endif

namespace kv {

inline std::vector<CheckedQueue> every_checked_queue(const ValidateOptions& o) {
    std::vector<CheckedQueue> queues = ch05_checked_queues(o);
    [[maybe_unused]] auto add = [&](std::vector<CheckedQueue> more) {
        for (CheckedQueue& q : more) queues.push_back(std::move(q));
    };
#if __has_include("ch07_queues.h")
    add(ch07_checked_queues(o));
#endif
#if __has_include("ch08_queues.h")
    add(ch08_checked_queues(o));
#endif
#if __has_include("ch09_queues.h")
    add(ch09_checked_queues(o));
#endif
    return queues;
}

}  // namespace kv
