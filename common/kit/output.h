// The output flags every chapter shares: --json, --save-json and --plot-dir.
//
// A chapter builds one Json object with every number it measured, then
// calls emit(): with --save-json the object also goes to a file (that is how
// `make run` collects the numbers for the book's closing table); with
// --json it replaces the text report on stdout. Either way the object says
// which chapter wrote it, in which format (kResultsFormat, report.h), so
// that a reader (the closing table) can refuse a file that is not what it
// asked for.
#pragma once

#include <iostream>
#include <string>

#include "flags.h"
#include "program.h"
#include "report.h"

namespace kv {

struct OutputOptions {
    bool json = false;               // print one JSON object instead of the text report
    std::string save_json;           // also write that object to this file
    std::string plot_dir = "plots";  // where SVG plots go
    std::string chapter;             // the chapter writing ("02_kv_cache"): set by run_chapter
};

// A program that draws no plot passes plots = false: its --help does not
// offer --plot-dir (Flags::unlist), though the flag is still taken.
inline void add_output_flags(Flags& flags, OutputOptions& out, bool plots = true) {
    flags.add("json", out.json, "print the results as one JSON object instead of text");
    flags.add("save-json", out.save_json, "also write the JSON results to this file");
    flags.writes_file("save-json");
    flags.add("plot-dir", out.plot_dir, "folder for the SVG plots");
    if (!plots) flags.unlist("plot-dir");
}

// Saves and/or prints `results` as asked. Returns true when the JSON went
// to stdout, so the caller skips the text report. The object starts with
// where it came from (with_origin, report.h): the results format and the
// chapter, out.chapter, which replaces any "chapter" the results hold.
inline bool emit(const OutputOptions& out, const Json& results) {
    const Json json = out.chapter.empty() ? results : with_origin(results, out.chapter);
    if (!out.save_json.empty()) write_file(out.save_json, json.str() + "\n", "--save-json");
    if (out.json) std::cout << json.str() << "\n";
    return out.json;
}

}  // namespace kv
