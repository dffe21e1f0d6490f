// What the closing table prints: the published figures beside this run's,
// the shapes every machine shows, then Part II's chapters beside their
// papers.
#pragma once

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "../../common/kit/output.h"
#include "experiment.h"

namespace kv::ch06 {

inline constexpr std::size_t kLineWidth = 100;  // Part II's text is wrapped here
inline constexpr std::size_t kLabelWidth = 13;  // "  published: "

// "  label:     text", wrapped at kLineWidth with the text's lines aligned;
// a unit stays on the line of its number ("17.8 x", "25.4 ms").
inline std::string labelled(const std::string& label, const std::string& text) {
    std::vector<std::string> words;
    std::istringstream in(text);
    for (std::string w; in >> w;) {
        const bool unit = w == "x" || w == "%" || w == "s" || w == "ms" || w == "us" ||
                          w == "MiB" || w.starts_with("GB/s") || w.starts_with("KiB");
        if (unit && !words.empty())
            words.back() += " " + w;
        else
            words.push_back(w);
    }
    std::string out = "  " + label + ":", line;
    out.resize(kLabelWidth, ' ');
    for (const std::string& w : words) {
        if (!line.empty() && kLabelWidth + line.size() + 1 + w.size() > kLineWidth) {
            out += line + "\n" + std::string(kLabelWidth, ' ');
            line.clear();
        }
        line += (line.empty() ? "" : " ") + w;
    }
    return out + line;
}

inline int report(const Results& r, const OutputOptions& out) {
    auto times = [](double ratio) { return times_cell(ratio).text; };
    Table figures({"claim", "published", "this run", "this run / published"});
    for (std::size_t i = 0; i < r.figures.size(); ++i) {
        const Published& p = kPublished[i];
        const double ours = r.figures[i];
        const int decimals = ours == std::floor(ours) ? 0 : ours < 10 ? 2 : 1;
        figures.add_row({p.claim, fixed(p.value, 0) + " " + p.unit,
                         Cell(fixed(ours, decimals) + " " + p.unit, ours),
                         Cell(ours / p.value, 2)});
    }
    Table shapes({"shape", "published", "this run"});
    for (const Shape& s : r.shapes)
        shapes.add_row({s.what, times(s.published), times_cell(s.measured)});
    // Part II: per chapter, its headline and figures beside its paper's,
    // or, if its file is not there, which chapter to run.
    Findings f("The book's closing table: the published figures and this run's");
    f.table("figures", "", figures)
        .text("\nThe shapes every machine shows (the factors are this machine's):\n")
        .table("shapes", "", shapes)
        .text(
            "\nPart II, where servers went next: each chapter's headline beside what its paper "
            "reports\n");
    Json part_two;
    for (std::size_t i = 0; i < r.part_two.size(); ++i) {
        const Paper& paper = kPapers[i];
        const std::optional<PartTwoRun>& run = r.part_two[i];
        const std::string path = results_file(r.results_dir, paper.chapter),
                          chapter = paper.chapter;
        Json json = Json().add("results", path).add("found", run.has_value());
        std::string text = (i ? "\n" : "") + chapter + " " + paper.title + "\n";
        if (!run) {
            text += labelled("not run", "no " + visible(path) + ": run chapter " + chapter +
                                            " (`./build/ch" + chapter + " --save-json " +
                                            visible(path) +
                                            "`, or `make run`), then this program again");
        } else {
            json.add("headline", run->headline).add("this_run", run->this_run);
            text += labelled("results", visible(path)) + "\n" +
                    labelled("headline", visible(run->headline)) + "\n" +
                    labelled("this run", run->this_run) + "\n" +
                    labelled("published", std::string(paper.citation) + ": " + paper.published) +
                    "\n" + labelled("differs", paper.differs);
        }
        f.text(text);
        part_two.add(std::string("ch") + chapter, json);
    }
    emit(out, f.data_raw("part_two", part_two.str()));
    return 0;
}

}  // namespace kv::ch06
