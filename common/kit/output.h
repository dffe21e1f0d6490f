// The output flags every chapter shares: --json, --save-json and --plot-dir.
// A chapter builds one Json object with every number it measured and calls
// emit(): --save-json also writes it to a file (how `make run` collects the
// numbers for the closing table); --json prints it instead of the text.
#pragma once

#include <iostream>
#include <string>

#include "files.h"  // write_file
#include "flags.h"
#include "report.h"

namespace kv {

struct OutputOptions {
    bool json = false;               // print one JSON object instead of the text report
    std::string save_json;           // also write that object to this file
    std::string plot_dir = "plots";  // where SVG plots go
    std::string chapter;             // the chapter writing ("02_kv_cache"): set by run_chapter
};

// A program that draws no plot passes plots = false: --help does not offer
// --plot-dir, though the flag is still taken.
inline void add_output_flags(Flags& flags, OutputOptions& out, bool plots = true) {
    flags.add("json", out.json, "print the results as one JSON object instead of text");
    flags.add("save-json", out.save_json, "also write the JSON results to this file");
    flags.writes_file("save-json");
    flags.add("plot-dir", out.plot_dir, "folder for the SVG plots");
    if (!plots) flags.unlist("plot-dir");
}

// Saves and/or prints `results`, opened by where they came from
// (with_origin). True when the JSON went to stdout: no text report then.
inline bool emit(const OutputOptions& out, const Json& results) {
    const Json json = out.chapter.empty() ? results : with_origin(results, out.chapter);
    if (!out.save_json.empty()) write_file(out.save_json, json.str() + "\n", "--save-json");
    if (out.json) std::cout << json.str() << "\n";
    return out.json;
}

// The findings as JSON (saved and/or printed, as above) or as text.
inline void emit(const OutputOptions& out, const Findings& findings) {
    if (!emit(out, findings.json())) findings.print(std::cout);
}

}  // namespace kv
