// make validate: the queues chapters 05, 07, 08 and 09 teach, each on the
// real engine and on the simulator, and how far apart they are: options.h
// sets the parameters, chNN_queues.h make each chapter's checked queues,
// validate.h runs them and prints the report.
#include "../../common/kit/chapter.h"
#include "ch05_queues.h"
#include "ch07_queues.h"
#include "ch08_queues.h"
#include "ch09_queues.h"
#include "options.h"
#include "validate.h"

struct Validation {
    kv::ValidateOptions options;
    static constexpr bool draws_plots = false;

    void add_flags(kv::Flags& flags) { options.add_flags(flags); }
    void check() const { options.check(); }
    kv::ValidateResults run() const {
        std::vector<kv::CheckedQueue> queues;
        for (auto chapter : {kv::ch05_checked_queues, kv::ch07_checked_queues,
                             kv::ch08_checked_queues, kv::ch09_checked_queues})
            for (kv::CheckedQueue& q : chapter(options)) queues.push_back(std::move(q));
        return kv::run_validation(options, queues);
    }
};

int main(int argc, char** argv) {
    Validation validation;
    return kv::run_chapter(argc, argv, "validate",
                           "The simulator against the real engine on every queue chapter's "
                           "checked queues, and its error on each measure.",
                           validation, kv::validate_report);
}
