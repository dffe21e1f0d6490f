// Chapter 07 exercises: stubs for you to fill in (see EXERCISES.md). The
// tests in tests/exercises_ch07_test.cpp are skipped until you enable them.
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>

#include "../../common/serving/paged_memory.h"
#include "../../common/serving/workload.h"

namespace kv::exercises {

// Exercise 3: when memory runs out, preempt the request that holds the
// most blocks (ties: the newest of them) instead of the newest request.
// Padding rows (answered requests, status finished) still go first, newest
// first, as in chapter 05's rule.
class LargestFirstPagedMemory : public PagedMemory {
  public:
    using PagedMemory::PagedMemory;
    std::size_t victim(std::span<Request* const> batch) const override {
        (void)batch;
        throw std::logic_error(
            "exercise 07.3: LargestFirstPagedMemory::victim is not implemented yet");
    }
};

}  // namespace kv::exercises
