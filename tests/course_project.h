// The course's final project (chapters/course/README.md, "The final
// project"): a new eviction policy for chapter 08's prefix cache. Write
// your policy in ProjectPolicy::choose, then grade it:
//   make build/book_tests && ./build/book_tests -ts="course project" --no-skip
// The grader (tests/course_project_test.cpp) serves a queue of prompts on
// the engine through chapter 08's prefix cache, your policy deciding every
// eviction (PrefixCache::evict_with), and fails it if the cache refuses a
// choice, if a single logit differs from a fresh prefill's, or if it
// serves no more prompt tokens from the cache than least recently used.
#pragma once

#include <cstddef>
#include <span>

#include "../common/serving/prefix_cache.h"

namespace course {

// One block the cache names, as a policy sees it when the pool needs a
// block back: its depth in its chain, whether it is a leaf, how many
// requests hold it, when it was last used, how often it was found.
using kv::CachedBlock;

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
