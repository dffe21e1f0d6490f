// What the closing table prints: the published figures beside this run's,
// then the shapes that must hold on any machine, then Part II's chapters
// beside their papers; or all of it as JSON.
#pragma once

#include <cmath>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

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

// A unit stays on the line of its number ("17.8 x", "25.4 ms").
inline bool is_unit(std::string_view word) {
    return word == "x" || word == "%" || word == "s" || word == "ms" || word == "MiB";
}

// "  label:     text", wrapped at kLineWidth with the text's lines aligned.
inline std::string labelled(const std::string& label, const std::string& text) {
    std::string out = "  ";
    out += label;
    out += ':';
    out.resize(kLabelWidth, ' ');
    const std::string_view all = text;
    std::size_t column = kLabelWidth, start = 0;
    bool first = true;
    while (start < all.size()) {
        // The next word, with the unit after it if there is one.
        std::size_t end = all.find(' ', start);
        if (end == std::string_view::npos) end = all.size();
        if (end < all.size()) {
            std::size_t next = all.find(' ', end + 1);
            if (next == std::string_view::npos) next = all.size();
            if (is_unit(all.substr(end + 1, next - end - 1))) end = next;
        }
        const std::string_view word = all.substr(start, end - start);
        if (!first && column + 1 + word.size() > kLineWidth) {
            out += '\n';
            out.append(kLabelWidth, ' ');
            column = kLabelWidth;
            first = true;
        }
        if (!first) {
            out += ' ';
            ++column;
        }
        out += word;
        column += word.size();
        first = false;
        start = end + 1;
    }
    return out + "\n";
}

inline std::string percent(double share_pct) {
    return fixed(share_pct, 1) + " %";
}
inline std::string times(double ratio) {
    return fixed(ratio, 1) + " x";
}
inline std::string whole(double n) {
    return fixed(n, 0);
}

// One chapter's block: its headline, this run's figures, the paper's, and
// how they differ; or, if its file is not there, which chapter to run.
template <class Figures>
std::string part_two_block(const Results& r, const Paper& paper,
                           const std::optional<Figures>& figures, const std::string& this_run) {
    const std::string path = visible(results_file(r.results_dir, paper.chapter));
    std::string out = paper.chapter;
    out += " ";
    out += paper.title;
    if (!figures) {
        std::string hint = "no ";
        hint += path;
        hint += ": run chapter ";
        hint += paper.chapter;
        hint += " (`./build/ch";
        hint += paper.chapter;
        hint += " --save-json ";
        hint += path;
        hint += "`, or `make run`), then this program again";
        out += '\n';
        return out + labelled("not run", hint);
    }
    std::string where = path;
    where += " (the waits are the ";
    where += visible(figures->side);
    where += "'s)";
    out += '\n';
    out += labelled("results", where);
    out += labelled("headline", visible(figures->headline));
    out += labelled("this run", this_run);
    std::string published = paper.citation;
    published += ": ";
    published += paper.published;
    out += labelled("published", published);
    out += labelled("differs", paper.differs);
    return out;
}

// This run's figures that stand beside the paper's (the headline has the rest).
inline std::string paged_text(const PagedFigures& f) {
    return percent(f.filled_reserved_pct) +
           " of the positions reserved for whole contexts held a token (paged in blocks of " +
           whole(f.block_size) + ": " + percent(f.filled_paged_pct) +
           "); conversations that fit in " + whole(f.kv_budget_mib) +
           " MiB, paged / reserved: " + times(f.conversations_gain) + " (" +
           whole(f.conversations_paged) + " / " + whole(f.conversations_reserved) + ")";
}

inline std::string sharing_text(const SharingFigures& f) {
    return percent(100 * f.prompt_share_from_cache) +
           " of prompt tokens served from the cache; median time to first token, without / with "
           "the cache: " +
           times(f.ttft_gain) + " (" + format_duration(f.ttft_without_s) + " / " +
           format_duration(f.ttft_with_s) + "); " +
           format_bytes(std::uint64_t(f.memory_not_copied_bytes)) + " of KV cache not copied";
}

inline std::string chunking_text(const ChunkingFigures& f) {
    return visible(f.workload) + ", chunks of " + whole(f.chunk) +
           ": p99 time between tokens, prefill first / chunked: " + times(f.tbt_gain) + " (" +
           format_duration(f.tbt_p99_prefill_first_s) + " -> " +
           format_duration(f.tbt_p99_chunked_s) + "); median time to first token " +
           format_duration(f.ttft_prefill_first_s) + " -> " + format_duration(f.ttft_chunked_s);
}

inline std::string format_text(const FormatFigures& f) {
    return "conversations that fit in " + whole(f.kv_budget_mib) +
           " MiB, 16-bit / float32: " + times(f.conversations_16bit / f.conversations_float32) +
           " (" + whole(f.conversations_16bit) + " / " + whole(f.conversations_float32) +
           "), int8: " + times(f.conversations_int8 / f.conversations_float32) + " (" +
           whole(f.conversations_int8) + "); answers keeping every float32 token: bfloat16 " +
           whole(f.identical_bfloat16) + ", float16 " + whole(f.identical_float16) + ", int8 " +
           whole(f.identical_int8) + " of " + whole(f.answers);
}

// Part II as JSON: per chapter, where it was read, whether it was there,
// and its figures.
inline Json part_two_json(const Results& r) {
    const PartTwo& p = r.part_two;
    auto head = [&](const char* chapter, bool found) {
        return Json().add("results", results_file(r.results_dir, chapter)).add("found", found);
    };
    Json ch07 = head("07", p.paged.has_value()), ch08 = head("08", p.sharing.has_value()),
         ch09 = head("09", p.chunking.has_value()), ch10 = head("10", p.format.has_value());
    if (const auto& f = p.paged)
        ch07.add("filled_reserved_pct", f->filled_reserved_pct)
            .add("filled_paged_pct", f->filled_paged_pct)
            .add("conversations_gain", f->conversations_gain)
            .add("headline", f->headline);
    if (const auto& f = p.sharing)
        ch08.add("prompt_share_from_cache", f->prompt_share_from_cache)
            .add("ttft_gain", f->ttft_gain)
            .add("memory_not_copied_bytes", f->memory_not_copied_bytes)
            .add("headline", f->headline);
    if (const auto& f = p.chunking)
        ch09.add("tbt_p99_gain", f->tbt_gain)
            .add("ttft_median_prefill_first_s", f->ttft_prefill_first_s)
            .add("ttft_median_chunked_s", f->ttft_chunked_s)
            .add("headline", f->headline);
    if (const auto& f = p.format)
        ch10.add("conversations_16bit_gain", f->conversations_16bit / f->conversations_float32)
            .add("conversations_int8_gain", f->conversations_int8 / f->conversations_float32)
            .add("identical_bfloat16", f->identical_bfloat16)
            .add("identical_float16", f->identical_float16)
            .add("identical_int8", f->identical_int8)
            .add("answers", f->answers)
            .add("headline", f->headline);
    return Json().add("ch07", ch07).add("ch08", ch08).add("ch09", ch09).add("ch10", ch10);
}

inline std::string part_two_text(const Results& r) {
    const PartTwo& p = r.part_two;
    return part_two_block(r, kPapers[0], p.paged, p.paged ? paged_text(*p.paged) : "") + "\n" +
           part_two_block(r, kPapers[1], p.sharing, p.sharing ? sharing_text(*p.sharing) : "") +
           "\n" +
           part_two_block(r, kPapers[2], p.chunking, p.chunking ? chunking_text(*p.chunking) : "") +
           "\n" + part_two_block(r, kPapers[3], p.format, p.format ? format_text(*p.format) : "");
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
    for (const Shape& s : r.shapes)
        shapes.add_row({s.what, std::isnan(s.published) ? "n/a" : fixed(s.published, 1) + " x",
                        fixed(s.measured, 1) + " x"});
    json.add("figures", table).add("shapes", shapes).add("part_two", part_two_json(r));
    if (emit(out, json)) return 0;

    std::cout << "The book's closing table: the published figures and this run's\n\n";
    table.print(std::cout);
    std::cout << "\nThe shapes that must hold on any machine:\n\n";
    shapes.print(std::cout);
    std::cout << "\nPart II, where servers went next: each chapter's headline beside what its "
                 "paper reports\n\n"
              << part_two_text(r);
    return 0;
}

}  // namespace kv::ch06
