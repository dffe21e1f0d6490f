// The closing table: each figure the book answers to, beside the figure
// this run measured, read from the files the chapters saved with
// --save-json (`make run` saves them in build/results/).
#include "../../common/kit/chapter.h"
#include "experiment.h"
#include "report.h"

int main(int argc, char** argv) {
    kv::ch06::Experiment experiment;  // where the chapters' results are
    return kv::run_chapter(
        argc, argv, "06_closing_table",
        "The book's closing table: published figures beside this run's, from the "
        "chapters' saved JSON.",
        experiment, kv::ch06::report);
}
