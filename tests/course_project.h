// The course's final project (chapters/course/README.md, "The final
// project"): a new eviction policy for chapter 08's prefix cache. Write
// your policy in ProjectPolicy::choose, then grade it:
//   make build/book_tests && ./build/book_tests -ts="course project" --no-skip
// The grader (tests/course_project_test.cpp) serves a queue of prompts on
// the engine with your policy deciding every eviction, and fails it if a
// choice breaks the cache's rules, if a single logit differs from a fresh
// prefill's, or if it serves no more prompt tokens from the cache than
// least recently used does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace course {

// One block the cache names, as a policy sees it when the pool needs a
// block back.
struct CachedBlock {
    int block = -1;               // the pool's block
    int depth = 0;                // its place in its chain: 0 for a prompt's first block
    bool leaf = true;             // no cached block continues it
    int holders = 0;              // requests holding it now (the cache's own reference not counted)
    std::uint64_t last_used = 0;  // the cache's clock when it was last matched or filled
    int hits = 0;                 // prompts that found it cached
};

// Returns the index in `cached` of the block to give back. Only a leaf
// that no request holds may go: every other block is still needed, by a
// request or by the blocks cached after it. The cache asks only when at
// least one such block exists.
struct ProjectPolicy {
    int choose(std::span<const CachedBlock> cached) const {
        // The stub: chapter 08's rule, least recently used. It is correct,
        // and it is the rule the project must beat.
        int found = -1;
        for (int i = 0; i < int(cached.size()); ++i) {
            const CachedBlock& b = cached[std::size_t(i)];
            if (!b.leaf || b.holders > 0) continue;
            if (found < 0 || b.last_used < cached[std::size_t(found)].last_used) found = i;
        }
        return found;
    }
};

}  // namespace course
