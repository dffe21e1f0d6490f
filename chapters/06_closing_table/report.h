// What the closing table prints: the published figures beside this run's,
// then the shapes every machine shows, then Part II's chapters
// beside their papers; or all of it as JSON.
#pragma once

#include <cmath>
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "experiment.h"

namespace kv::ch06 {

// Whole numbers print whole ("128 KiB"); others to about 3 significant digits.
inline std::string figure_text(double value, const char* unit) {
    const int decimals = value == std::floor(value) ? 0 : value < 10 ? 2 : 1;
    return fixed(value, decimals) + " " + unit;
}

// ---------------------------------------------------------------- Part II

inline constexpr std::size_t kLineWidth = 100;  // the section's text is wrapped here
inline constexpr std::size_t kLabelWidth = 13;  // "  published: "

// "  label:     text", wrapped at kLineWidth with the text's lines aligned;
// a unit stays on the line of its number ("17.8 x", "25.4 ms").
inline std::string labelled(const std::string& label, const std::string& text) {
    std::vector<std::string> words;
    std::istringstream in(text);
    for (std::string w; in >> w;) {
        const bool unit =
            w == "x" || w == "%" || w == "s" || w == "ms" || w == "MiB" || w.starts_with("GB/s");
        if (unit && !words.empty())
            words.back() += " " + w;
        else
            words.push_back(w);
    }
    std::string out = "  " + label + ":";
    out.resize(kLabelWidth, ' ');
    std::size_t column = kLabelWidth;
    for (const std::string& w : words) {
        if (column > kLabelWidth && column + 1 + w.size() > kLineWidth) {
            out.append("\n").append(kLabelWidth, ' ');
            column = kLabelWidth;
        } else if (column > kLabelWidth) {
            out += ' ';
            ++column;
        }
        out += w;
        column += w.size();
    }
    return out + "\n";
}

inline std::string times(double ratio) {
    return fixed(ratio, 1) + " x";
}

// This run's figures that stand beside the paper's (the headline has the rest).
inline std::string this_run_text(const Paper& paper, const PartTwoRun& run) {
    auto f = [&](const char* key) { return run.figures.at(key); };
    auto percent = [](double share_pct) { return fixed(share_pct, 1) + " %"; };
    auto whole = [](double n) { return fixed(n, 0); };
    const std::string chapter = paper.chapter;
    if (chapter == "07")
        return percent(f("filled_reserved_pct")) +
               " of the positions reserved for whole contexts held a token (paged in blocks of " +
               whole(f("block_size")) + ": " + percent(f("filled_paged_pct")) +
               "); conversations that fit in " + whole(f("kv_budget_mib")) +
               " MiB, paged / reserved: " + times(f("conversations_gain")) + " (" +
               whole(f("conversations_paged")) + " / " + whole(f("conversations_reserved")) + ")";
    if (chapter == "08")
        return percent(100 * f("prompt_share_from_cache")) +
               " of prompt tokens served from the cache; median time to first token, without / "
               "with the cache: " +
               times(f("ttft_gain")) + " (" + format_duration(f("ttft_median_without_s")) + " / " +
               format_duration(f("ttft_median_with_s")) + "); " +
               format_bytes(std::uint64_t(f("memory_not_copied_bytes"))) +
               " of KV cache not copied";
    if (chapter == "11")
        return percent(100 * f("returning_share_reloaded")) +
               " of returning prompt tokens read back from a tier of " + whole(f("tier_mib")) +
               " MiB instead of computed again; median time to first token, without / with the "
               "tier: " +
               times(f("ttft_gain")) + " (" + format_duration(f("ttft_median_without_s")) + " / " +
               format_duration(f("ttft_median_with_s")) + "), " +
               percent(100 * (1 - 1 / f("ttft_gain"))) + " less; a cold reload of " +
               whole(f("reload_prefix")) + " tokens " + times(f("reload_speedup")) +
               " faster than recomputing them (read at " +
               fixed(f("read_cold_bytes_per_s") / 1e9, 2) + " GB/s)";
    if (chapter == "10")
        return "conversations that fit in " + whole(f("kv_budget_mib")) +
               " MiB, 16-bit / float32: " +
               times(f("conversations_16bit") / f("conversations_float32")) + " (" +
               whole(f("conversations_16bit")) + " / " + whole(f("conversations_float32")) +
               "), int8: " + times(f("conversations_int8") / f("conversations_float32")) + " (" +
               whole(f("conversations_int8")) +
               "); answers keeping every float32 token: bfloat16 " +
               whole(f("identical_bfloat16")) + ", float16 " + whole(f("identical_float16")) +
               ", int8 " + whole(f("identical_int8")) + " of " + whole(f("answers"));
    return visible(run.workload) +
           ": p99 time between tokens, prefill first / chunked: " + times(f("tbt_gain")) + " (" +
           format_duration(f("tbt_p99_prefill_first_s")) + " -> " +
           format_duration(f("tbt_p99_chunked_s")) + "); median time to first token " +
           format_duration(f("ttft_median_prefill_first_s")) + " -> " +
           format_duration(f("ttft_median_chunked_s"));
}

// One chapter's block: its headline, this run's figures, the paper's, and
// how they differ; or, if its file is not there, which chapter to run.
inline std::string part_two_block(const Results& r, const Paper& paper,
                                  const std::optional<PartTwoRun>& run) {
    const std::string path = visible(results_file(r.results_dir, paper.chapter));
    const std::string chapter = paper.chapter;
    std::string out = chapter + " " + paper.title + "\n";
    if (!run)
        return out + labelled("not run", "no " + path + ": run chapter " + chapter +
                                             " (`./build/ch" + chapter + " --save-json " + path +
                                             "`, or `make run`), then this program again");
    return out + labelled("results", path) + labelled("headline", visible(run->headline)) +
           labelled("this run", this_run_text(paper, *run)) +
           labelled("published", std::string(paper.citation) + ": " + paper.published) +
           labelled("differs", paper.differs);
}

// Returns the exit status.
inline int report(const Results& r, const OutputOptions& out) {
    Table table({"claim", "published", "this run", "this run / published"});
    Json json;
    for (const Figure& f : r.figures) {
        const Published& p = f.published;
        table.add_row({p.claim, fixed(p.value, 0) + " " + p.unit, figure_text(f.measured, p.unit),
                       Cell(f.measured / p.value, 2)});
        json.add(p.key, f.measured);
    }
    Table shapes({"shape", "published", "this run"});
    for (const Shape& s : r.shapes) shapes.add_row({s.what, times(s.published), times(s.measured)});
    // Part II: per chapter, where it was read, whether it was there, and its figures.
    Json part_two;
    std::string text;
    for (std::size_t i = 0; i < r.part_two.size(); ++i) {
        const Paper& paper = kPapers[i];
        const std::optional<PartTwoRun>& run = r.part_two[i];
        Json ch = Json()
                      .add("results", results_file(r.results_dir, paper.chapter))
                      .add("found", run.has_value());
        if (run) {
            for (const auto& [key, value] : run->figures) ch.add(key, value);
            ch.add("headline", run->headline);
        }
        part_two.add(std::string("ch") + paper.chapter, ch);
        text.append(i ? "\n" : "").append(part_two_block(r, paper, run));
    }
    json.add("figures", table).add("shapes", shapes).add("part_two", part_two);
    if (emit(out, json)) return 0;

    std::cout << "The book's closing table: the published figures and this run's\n\n";
    table.print(std::cout);
    std::cout << "\nThe shapes every machine shows (the factors are this machine's):\n\n";
    shapes.print(std::cout);
    std::cout << "\nPart II, where servers went next: each chapter's headline beside what its "
                 "paper reports\n\n"
              << text;
    return 0;
}

}  // namespace kv::ch06
