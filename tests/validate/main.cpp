// make validate: the queues chapters 05, 07, 08 and 09 teach, each on the
// real engine and on the simulator, and how far apart they are: options.h
// sets the parameters, queues.h gathers every chapter's checked queues,
// validate.h runs them and prints the report.
#include "../../common/kit/chapter.h"
#include "options.h"
#include "queues.h"
#include "validate.h"

struct Validation {
    kv::ValidateOptions options;
    static constexpr bool draws_plots = false;

    void add_flags(kv::Flags& flags) { options.add_flags(flags); }
    void check() const { options.check(); }
    kv::ValidateResults run() const {
        return kv::run_validation(options, kv::every_checked_queue(options));
    }
};

int main(int argc, char** argv) {
    Validation validation;
    return kv::run_chapter(argc, argv, "validate",
                           "The simulator against the real engine on every queue chapter's "
                           "checked queues, and its error on each measure.",
                           validation, kv::validate_report);
}
