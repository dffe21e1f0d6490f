// The closing table reads back the chapters' JSON: what report.h writes,
// saved_results.h must read, nested values and all; Part II's chapters are
// read by their keys when their files are there, and said to be missing
// when not.
#include <doctest/doctest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../chapters/02_kv_cache/experiment.h"
#include "../chapters/02_kv_cache/report.h"
#include "../chapters/06_closing_table/experiment.h"
#include "../chapters/06_closing_table/report.h"
#include "../common/kit/program.h"
#include "../common/kit/report.h"
#include "../common/kit/saved_results.h"
#include "run_captured.h"
#include "test_files.h"

using namespace kv;

namespace {

SavedResults save_and_load(const std::string& text) {
    const test::TempDir dir;
    write_file(dir.file("ch02.json"), text);
    return ch06::load_saved_results(dir.file("ch02.json"), "02");
}

std::string contents_of(const std::string& path) {
    return read_file(path, "", 1 << 20);
}

// A results object's text as `chapter` writes it: its origin first
// (with_origin, report.h), then the fields of `text`, an object.
std::string stamped(const std::string& chapter, const std::string& text) {
    const std::string origin = with_origin(Json(), chapter).str();  // {"results_format": ...}
    return origin.substr(0, origin.size() - 1) + (text == "{}" ? "" : ", ") + text.substr(1);
}

}  // namespace

TEST_CASE("saved results read back the numbers a chapter wrote") {
    Table table({"a", "b"});
    table.add_row({"x, \"quoted\" } ]", Cell(1.5, 1)});
    const Json json = Json()
                          .add("chapter", "02_kv_cache")
                          .add("naive_answer_ms", 295.8125)
                          .add("tokens", std::vector<int>{1, 2, 3})
                          .add("steps", table)
                          .add("nested", Json().add("naive_answer_ms", 1.0))
                          .add("cached_answer_ms", 28.75)
                          .add("bytes_per_token", std::uint64_t(131072))
                          .add("same_tokens", true);
    const SavedResults r = save_and_load(with_origin(json, "02_kv_cache").str());
    CHECK(r.number("naive_answer_ms") == 295.8125);  // the top-level one, not the nested one
    CHECK(r.number("cached_answer_ms") == 28.75);
    CHECK(r.number("bytes_per_token") == 131072.0);
    CHECK_THROWS_AS(r.number("chapter"), std::runtime_error);  // a string, not a number
    CHECK_THROWS_AS(r.number("missing"), std::runtime_error);
}

TEST_CASE("saved results refuse files that are not one JSON object") {
    CHECK_THROWS_AS(save_and_load("[1, 2]"), std::runtime_error);
    CHECK_THROWS_AS(save_and_load("{\"a\": 1"), std::runtime_error);
    CHECK_THROWS_AS(save_and_load("{\"a\" 1}"), std::runtime_error);
    CHECK_THROWS_AS(save_and_load(""), std::runtime_error);
    CHECK_THROWS_AS(ch06::load_saved_results("/nonexistent/ch02.json", "02"), std::runtime_error);
    CHECK_THROWS_AS(save_and_load(stamped("02_kv_cache", "{}")).number("x"), std::runtime_error);
}

// Chapters 03 and 05's saved figures, as a run would leave them.
static void write_memory_and_queue(const test::TempDir& dir) {
    write_file(dir.file("ch03.json"),
               with_origin(Json()
                               .add("bytes_per_token", std::uint64_t(131072))
                               .add("bytes_per_conversation", std::uint64_t(1) << 29),
                           "03_memory_arithmetic")
                   .str());
    write_file(dir.file("ch05.json"), with_origin(Json()
                                                      .add("median_ttft_no_cache_s", 300.0)
                                                      .add("median_ttft_cache_s", 20.0)
                                                      .add("median_ttft_continuous_s", 10.0),
                                                  "05_queue_simulation")
                                          .str());
}

TEST_CASE("the closing table reads each figure and derives the ratios from it") {
    const test::TempDir dir;
    write_file(dir.file("ch02.json"),
               with_origin(Json().add("naive_answer_ms", 400.0).add("cached_answer_ms", 50.0),
                           "02_kv_cache")
                   .str());
    write_memory_and_queue(dir);
    ch06::Experiment experiment;
    experiment.results_dir = dir.file("");
    const ch06::Results r = experiment.run();
    REQUIRE(r.figures.size() == std::size(ch06::kPublished));
    CHECK(r.figures[0] == 400.0);
    CHECK(r.figures[2] == 128.0);  // KiB
    CHECK(r.figures[3] == 512.0);  // MiB
    REQUIRE(r.shapes.size() == 3);
    CHECK(r.shapes[0].measured == 8.0);
    CHECK(r.shapes[0].published == doctest::Approx(567.0 / 39.0));
    CHECK(r.shapes[1].measured == 15.0);
    CHECK(r.shapes[2].measured == 2.0);
    experiment.results_dir = dir.file("missing");
    CHECK_THROWS_AS(experiment.run(), std::runtime_error);
}

namespace {

// The message parse() throws for `text`, or "" if it reads.
std::string parse_error(const std::string& text) {
    try {
        SavedResults::parse("r.json", text);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("saved results take JSON numbers only") {
    for (const char* number : {"0", "-0", "12", "-3.25", "1e5", "1E+5", "2.5e-3", "0.5"}) {
        INFO(number);
        CHECK(parse_error(std::string("{\"a\": ") + number + "}") == "");
    }
    for (const char* number : {"NaN", "nan", "Infinity", "-Infinity", "inf", "0x10", "+5", ".5",
                               "5.", "01", "1e", "1e+", "--1", "1.5.2", "5abc", "1 2"}) {
        INFO(number);
        CHECK(parse_error(std::string("{\"a\": ") + number + "}")
                  .find("r.json is not a JSON object") == 0);
    }
    CHECK(SavedResults::parse("r", "{\"a\": -3.25e1}").number("a") == -32.5);
    // Too large for a double is refused, not read as infinity.
    CHECK_THROWS_WITH_AS(SavedResults::parse("r", "{\"a\": 1e999}").number("a"),
                         "r: \"a\" = 1e999 is too large for a double", std::runtime_error);
}

TEST_CASE("saved results refuse what follows the object and malformed values anywhere") {
    CHECK(parse_error("{\"a\": 1} x") ==
          "r.json is not a JSON object: text after the object at byte 9");
    CHECK(parse_error("{\"a\": 1}{}").find("text after the object") != std::string::npos);
    CHECK(parse_error("{\"a\": 1}\n  \n") == "");
    CHECK(parse_error("{\"a\": 1, \"a\": 2}").find("\"a\" appears twice") != std::string::npos);
    CHECK(parse_error("{\"n\": {\"a\": NaN}}") != "");  // nested values are checked too
    CHECK(parse_error("{\"n\": [1, 2,]}") != "");
    CHECK(parse_error("{\"n\": [true, false, null, \"\\u00e9\\n\"]}") == "");
    CHECK(parse_error("{\"n\": tru}") != "");
    CHECK(parse_error("{\"s\": \"\\q\"}") != "");
    CHECK(parse_error("{\"s\": \"a\nb\"}") != "");  // a raw newline inside a string
    CHECK(parse_error(std::string(100, '[')).find("nested more than") == std::string::npos);
    CHECK(parse_error("{\"n\": " + std::string(100, '[') + std::string(100, ']') + "}")
              .find("nested more than 64 deep") != std::string::npos);
}

TEST_CASE("a results path that is not a regular file names what it is") {
    const test::TempDir dir;
    std::filesystem::create_directories(dir.file("ch02.json"));
    try {
        ch06::load_saved_results(dir.file("ch02.json"), "02");
        FAIL("a folder was read");
    } catch (const std::runtime_error& e) {
        // A folder is not a missing file: no hint to run `make run`.
        CHECK(std::string(e.what()) == dir.file("ch02.json") + ": a folder, not a regular file");
    }
    CHECK_THROWS_WITH_AS(ch06::load_saved_results("/dev/zero", "02"),
                         doctest::Contains("a character device, not a regular file"),
                         std::runtime_error);
}

TEST_CASE("the closing table needs every figure finite and above zero") {
    const test::TempDir dir;
    write_memory_and_queue(dir);
    ch06::Experiment experiment;
    experiment.results_dir = dir.file("");
    for (const char* bad : {"0", "-5", "-0.0"}) {
        write_file(dir.file("ch02.json"),
                   stamped("02_kv_cache", std::string("{\"naive_answer_ms\": ") + bad +
                                              ", \"cached_answer_ms\": 50}"));
        CHECK_THROWS_WITH_AS(experiment.run(),
                             doctest::Contains("\"naive_answer_ms\" must be above zero, got"),
                             std::runtime_error);
    }
    write_file(dir.file("ch02.json"), "{\"naive_answer_ms\": NaN, \"cached_answer_ms\": 50}");
    CHECK_THROWS_AS(experiment.run(), std::runtime_error);
}

TEST_CASE("the closing table refuses a ratio too large to print") {
    const test::TempDir dir;
    write_memory_and_queue(dir);
    write_file(dir.file("ch02.json"),
               with_origin(Json().add("naive_answer_ms", 1.0).add("cached_answer_ms", 1e-320),
                           "02_kv_cache")
                   .str());
    ch06::Experiment experiment;
    experiment.results_dir = dir.file("");
    CHECK_THROWS_WITH_AS(experiment.run(), doctest::Contains("too large to print"),
                         std::runtime_error);
}

// ---------------------------------------------------------------- Part II

TEST_CASE("saved results read a table's cells by path and strings") {
    Table fit({"memory", "block size", "unused (%)"});
    fit.add_row({"reserve the whole context", "-", Cell(60.0, 1)});
    fit.add_row({"paged", 16, Cell(10.0, 1)});
    const std::string text = Json()
                                 .add("fit", fit)
                                 .add("headline", "a \"quoted\" line")
                                 .add("numbers", std::vector<int>{1, 2})
                                 .add("n", 3)
                                 .str();
    const SavedResults r = SavedResults::parse("r.json", text);
    CHECK(r.text("fit.0.memory") == "reserve the whole context");
    CHECK_THROWS_WITH_AS(r.number("fit.0.block size"),
                         "r.json: \"fit.0.block size\" is not a number",
                         std::runtime_error);  // "-"
    CHECK(r.number("fit.1.block size") == 16.0);
    CHECK(r.number("fit.1.unused (%)") == 10.0);
    CHECK(r.number("numbers.1") == 2.0);
    CHECK(r.text("headline") == "a \"quoted\" line");
    CHECK_THROWS_WITH_AS(r.text("n"), "r.json: \"n\" is not a string", std::runtime_error);
    CHECK_THROWS_WITH_AS(r.number("fit"), "r.json: \"fit\" is not a number", std::runtime_error);
    CHECK_THROWS_WITH_AS(r.number("missing"), "r.json has no \"missing\"", std::runtime_error);
    CHECK_THROWS_WITH_AS(r.number_between("fit.1.unused (%)", 20, 100),
                         "r.json: \"fit.1.unused (%)\" must be from 20 to 100, got 10",
                         std::runtime_error);
    CHECK(parse_error("{\"t\": [{\"a\": 1, \"a\": 2}]}").find("\"a\" appears twice") !=
          std::string::npos);
}

namespace {

// Chapters 07 to 09's saved figures, as their reports write them, with any
// top-level value replaced by the JSON text in `raw` (a bad value).
using Raw = std::map<std::string, std::string>;

std::string with(const Raw& raw, Json json,
                 const std::vector<std::pair<std::string, std::string>>& fields) {
    for (const auto& [key, value] : fields) json.add_raw(key, raw.count(key) ? raw.at(key) : value);
    return json.str();
}

std::string ch07_text(const Raw& raw = {}) {
    return with(raw, with_origin(Json(), "07_paged_kv_cache"),
                {{"kv_budget_mib", "16"},
                 {"block_size", "16"},
                 {"conversations_reserved", "20"},
                 {"conversations_paged", "50"},
                 {"reserved_held_share", "0.4"},
                 {"paged_held_share", "0.92"},
                 {"headline", "\"paged KV cache: the seventh headline\""}});
}

std::string ch08_text(const Raw& raw = {}) {
    return with(raw, with_origin(Json(), "08_prefix_caching"),
                {{"prompt_share_from_cache", "0.75"},
                 {"memory_not_copied_bytes", "2097152"},
                 {"ttft_median_without_s", "40"},
                 {"ttft_median_with_s", "16"},
                 {"headline", "\"prefix cache: the eighth headline\""}});
}

std::string ch09_text(const Raw& raw = {}) {
    return with(raw, with_origin(Json(), "09_chunked_prefill"),
                {{"long_prompt", "512"},
                 {"chunk", "64"},
                 {"tbt_p99_prefill_first_s", "0.5"},
                 {"tbt_p99_chunked_s", "0.025"},
                 {"ttft_median_prefill_first_s", "80"},
                 {"ttft_median_chunked_s", "84"},
                 {"headline", "\"chunked prefill: the ninth headline\""}});
}

std::string ch10_text(const Raw& raw = {}) {
    return with(raw, with_origin(Json(), "10_cache_number_format"),
                {{"kv_budget_mib", "16"},
                 {"prompts", "16"},
                 {"conversations_float32", "60"},
                 {"conversations_16bit", "125"},
                 {"conversations_int8", "240"},
                 {"identical_bfloat16", "13"},
                 {"identical_float16", "15"},
                 {"identical_int8", "0"},
                 {"headline", "\"cache number format: the tenth headline\""}});
}

std::string ch11_text(const Raw& raw = {}) {
    return with(raw, with_origin(Json(), "11_second_tier"),
                {{"tier_mib", "64"},
                 {"returning_share_reloaded", "0.5"},
                 {"ttft_median_without_s", "9"},
                 {"ttft_median_with_s", "6"},
                 {"reload_prefix", "4096"},
                 {"reload_speedup", "120"},
                 {"read_cold_bytes_per_s", "1.5e9"},
                 {"headline", "\"second tier: the eleventh headline\""}});
}

// Part I's files and, for each of "07" to "11" in `part_two`, its file.
void write_results(const test::TempDir& dir, const std::string& part_two = "0708091011") {
    write_file(dir.file("ch02.json"),
               with_origin(Json().add("naive_answer_ms", 400.0).add("cached_answer_ms", 50.0),
                           "02_kv_cache")
                   .str());
    write_memory_and_queue(dir);
    if (part_two.find("07") != std::string::npos) write_file(dir.file("ch07.json"), ch07_text());
    if (part_two.find("08") != std::string::npos) write_file(dir.file("ch08.json"), ch08_text());
    if (part_two.find("09") != std::string::npos) write_file(dir.file("ch09.json"), ch09_text());
    if (part_two.find("10") != std::string::npos) write_file(dir.file("ch10.json"), ch10_text());
    if (part_two.find("11") != std::string::npos) write_file(dir.file("ch11.json"), ch11_text());
}

// What report() prints on stdout for `r` (text, or JSON with `json`).
std::string printed(const ch06::Results& r, bool json = false) {
    std::ostringstream text;
    struct Restore {  // std::cout's own buffer back, however report() ends
        std::streambuf* saved;
        ~Restore() { std::cout.rdbuf(saved); }
    } restore{std::cout.rdbuf(text.rdbuf())};
    OutputOptions out;
    out.json = json;
    CHECK(ch06::report(r, out) == 0);
    return text.str();
}

// `text` with each line break inside a labelled entry (a newline and the
// label's width of spaces) made one space.
std::string unwrapped(const std::string& text) {
    std::string wrap(ch06::kLabelWidth + 1, ' ');
    wrap[0] = '\n';
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
        if (text.compare(i, wrap.size(), wrap) == 0) {
            out += ' ';
            i += wrap.size();
        } else {
            out += text[i++];
        }
    }
    return out;
}

ch06::Results run_in(const test::TempDir& dir) {
    ch06::Experiment experiment;
    experiment.results_dir = dir.path.string();
    return experiment.run();
}

// The message run() throws, or "" if it reads every file.
std::string run_error(const test::TempDir& dir) {
    try {
        run_in(dir);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("the closing table's Part II reads chapters 07 to 11 beside their papers") {
    const test::TempDir dir;
    write_results(dir);
    const ch06::Results r = run_in(dir);
    REQUIRE(r.part_two.size() == 5);
    for (const auto& run : r.part_two) REQUIRE(run);
    CHECK(r.part_two[0]->headline == "paged KV cache: the seventh headline");
    const std::vector<std::string> this_run = {
        "40.0% of the positions reserved for whole contexts held a token (paged in blocks of 16: "
        "92.0%); conversations that fit in 16 MiB, paged / reserved: 2.5 x (50 / 20)",
        "75.0% of prompt tokens served from the cache; median time to first token, without / "
        "with the cache: 2.5 x (40.0 s / 16.0 s); 2 MiB of KV cache not copied",
        "512-token prompts, chunks of 64: p99 time between tokens, prefill first / chunked: "
        "20.0 x (500.0 ms -> 25.0 ms); median time to first token 80.0 s -> 84.0 s",
        "conversations that fit in 16 MiB, 16-bit / float32: 2.1 x (125 / 60), int8: 4.0 x "
        "(240); answers keeping every float32 token: bfloat16 13, float16 15, int8 0 of 16",
        "50.0% of returning prompt tokens read back from a tier of 64 MiB instead of computed "
        "again; median time to first token, without / with the tier: 1.5 x (9.00 s / 6.00 s); "
        "a cold reload of 4,096 tokens 120.0 x faster than recomputing them (read at 1.5 GB/s)",
    };
    for (std::size_t i = 0; i < this_run.size(); ++i) CHECK(r.part_two[i]->this_run == this_run[i]);

    const std::string text = printed(r);
    // The article's figures first, then Part II, in chapter order.
    const std::size_t article = text.find("48-token answer without the cache");
    const std::size_t part_two = text.find("Part II");
    const std::size_t ch07 =
        text.find(std::string("07 the paged KV cache\n  results:   ") + dir.file("ch07.json"));
    const std::size_t ch08 =
        text.find(std::string("08 sharing the cache\n  results:   ") + dir.file("ch08.json"));
    const std::size_t ch09 = text.find("09 steps that mix prefill and decode\n  results:   ");
    const std::size_t ch10 = text.find("10 the cache's number format\n  results:   ");
    const std::size_t ch11 = text.find("11 a second tier\n  results:   ");
    REQUIRE(article != std::string::npos);
    REQUIRE(part_two != std::string::npos);
    REQUIRE(ch07 != std::string::npos);
    REQUIRE(ch08 != std::string::npos);
    REQUIRE(ch09 != std::string::npos);
    REQUIRE(ch10 != std::string::npos);
    REQUIRE(ch11 != std::string::npos);
    CHECK(ch09 < ch10);
    CHECK(ch10 < ch11);
    CHECK(article < part_two);
    CHECK(part_two < ch07);
    CHECK(ch07 < ch08);
    CHECK(ch08 < ch09);
    // The section wraps its lines: compare with the breaks made spaces.
    const std::string one_line = unwrapped(text);
    for (const char* expected :
         {"paged KV cache: the seventh headline", "prefix cache: the eighth headline",
          "chunked prefill: the ninth headline", "blocks of 16: 92.0%); conversations",
          "20.4 % to 38.2 %", "Kwon et al., SOSP 2023", "up to 6.4 x", "50 % to 99 %",
          "Zheng et al., NeurIPS 2024", "Agrawal et al., OSDI 2024", "2.6 x the load of vLLM",
          "cache number format: the tenth headline", "approximately double the amount of space",
          "Liu et al., ICML 2024", "second tier: the eleventh headline",
          "Gao et al., USENIX ATC 2024", "up to 87 %"}) {
        INFO(expected);
        CHECK(one_line.find(expected) != std::string::npos);
    }
    for (std::size_t start = 0, end; start < text.size(); start = end + 1) {
        end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        if (start < part_two) continue;  // the article's tables are as wide as they are
        INFO(text.substr(start, end - start));
        CHECK(end - start <= ch06::kLineWidth);
    }
    const std::string json = printed(r, true);
    CHECK(json.find("\"part_two\": {\"ch07\": {\"results\": ") != std::string::npos);
    CHECK(json.find("\"this_run\": \"40.0% of the positions reserved") != std::string::npos);
    CHECK(json.find("\"found\": false") == std::string::npos);
}

TEST_CASE("a Part II chapter that has not run gets a line saying what to run") {
    const test::TempDir dir;
    write_results(dir, "0709");  // chapter 08 has not run
    const ch06::Results r = run_in(dir);
    CHECK(r.part_two[0]);
    CHECK_FALSE(r.part_two[1]);
    CHECK(r.part_two[2]);
    const std::string text = printed(r);
    // The article's section prints whole, and the other two chapters do.
    CHECK(text.find("median time to first token, continuous batching") != std::string::npos);
    CHECK(text.find("median wait: cache / continuous batching") != std::string::npos);
    CHECK(text.find("paged KV cache: the seventh headline") != std::string::npos);
    CHECK(text.find("chunked prefill: the ninth headline") != std::string::npos);
    const std::string hint = std::string("  not run:   no ") + dir.file("ch08.json") +
                             ": run chapter 08 (`./build/ch08 --save-json " + dir.file("ch08.json");
    CHECK(unwrapped(text).find(hint) != std::string::npos);
    CHECK(text.find("prefix cache:") == std::string::npos);
    CHECK(text.find("Zheng et al.") == std::string::npos);  // no paper beside nothing
    CHECK(printed(r, true).find(std::string("\"ch08\": {\"results\": ") +
                                json_quote(dir.file("ch08.json")) + ", \"found\": false}") !=
          std::string::npos);

    // None of Part II has run: five hints, and still the article's table.
    const test::TempDir part_one;
    write_results(part_one, "");
    const std::string alone = printed(run_in(part_one));
    CHECK(alone.find("48-token answer with the cache") != std::string::npos);
    for (const char* chapter : {"07", "08", "09", "10", "11"})
        CHECK(alone.find(std::string("run chapter ") + chapter) != std::string::npos);

    // A file that is there but cannot be read is an error, not "not run".
    std::filesystem::create_directories(part_one.file("ch08.json"));
    CHECK(run_error(part_one) == part_one.file("ch08.json") + ": a folder, not a regular file");
}

TEST_CASE("Part II refuses a value that is not finite or below zero; naming the file and key") {
    struct Bad {
        const char* chapter;
        const char* key;
        const char* value;
        const char* says;  // the rest of the line after the file
    };
    const Bad bad[] = {
        {"07", "conversations_reserved", "-3",
         ": \"conversations_reserved\" must be above zero, got -3"},  // a ratio's: above zero
        {"07", "conversations_paged", "0", ": \"conversations_paged\" must be above zero, got 0"},
        {"07", "kv_budget_mib", "1e999", ": \"kv_budget_mib\" = 1e999 is too large for a double"},
        {"07", "headline", "12", ": \"headline\" is not a string"},
        {"08", "prompt_share_from_cache", "-0.1",
         ": \"prompt_share_from_cache\" must be from 0 to 1, got -0.1"},
        {"08", "prompt_share_from_cache", "1.5",
         ": \"prompt_share_from_cache\" must be from 0 to 1, got 1.5"},
        {"08", "ttft_median_without_s", "1e999",
         ": \"ttft_median_without_s\" = 1e999 is too large for a double"},
        {"08", "ttft_median_with_s", "-2", ": \"ttft_median_with_s\" must be above zero, got -2"},
        {"08", "memory_not_copied_bytes", "-1",
         ": \"memory_not_copied_bytes\" must be from 0 to 1e+18, got -1"},
        {"08", "memory_not_copied_bytes", "1e300",
         ": \"memory_not_copied_bytes\" must be from 0 to 1e+18, got 1e300"},
        {"09", "chunk", "-64", ": \"chunk\" must not be below zero, got -64"},
        {"09", "tbt_p99_prefill_first_s", "-0.5",
         ": \"tbt_p99_prefill_first_s\" must be above zero, got -0.5"},
        {"09", "tbt_p99_chunked_s", "1e999",
         ": \"tbt_p99_chunked_s\" = 1e999 is too large for a double"},
        {"09", "ttft_median_prefill_first_s", "-1",
         ": \"ttft_median_prefill_first_s\" must not be below zero, got -1"},
        {"09", "ttft_median_chunked_s", "-84",
         ": \"ttft_median_chunked_s\" must not be below zero, got -84"},
        {"09", "long_prompt", "\"512\"", ": \"long_prompt\" is not a number"},
        {"10", "kv_budget_mib", "-1", ": \"kv_budget_mib\" must not be below zero, got -1"},
        {"10", "headline", "10", ": \"headline\" is not a string"},
        {"10", "conversations_float32", "0",
         ": \"conversations_float32\" must be above zero, got 0"},
        {"10", "identical_int8", "-1", ": \"identical_int8\" must not be below zero, got -1"},
        {"11", "returning_share_reloaded", "1.2",
         ": \"returning_share_reloaded\" must be from 0 to 1, got 1.2"},
        {"11", "reload_speedup", "-1", ": \"reload_speedup\" must not be below zero, got -1"},
    };
    for (const Bad& b : bad) {
        const test::TempDir dir;
        write_results(dir);
        const Raw raw = {{b.key, b.value}};
        const std::string chapter = b.chapter;
        const std::string file = dir.file(std::string("ch") + chapter + ".json");
        write_file(file, chapter == "07"   ? ch07_text(raw)
                         : chapter == "08" ? ch08_text(raw)
                         : chapter == "09" ? ch09_text(raw)
                         : chapter == "10" ? ch10_text(raw)
                                           : ch11_text(raw));
        INFO(b.key << " = " << b.value);
        CHECK(run_error(dir) == file + b.says);
    }
    // NaN is not JSON: the file is refused where it stands.
    {
        const test::TempDir dir;
        write_results(dir);
        write_file(dir.file("ch09.json"), ch09_text({{"tbt_p99_chunked_s", "NaN"}}));
        CHECK(run_error(dir).find(dir.file("ch09.json") + " is not a JSON object") == 0);
    }
    // The held shares, each a fraction from 0 to 1.
    for (const char* held : {"-0.1", "1.2", "1e999"}) {
        const test::TempDir dir;
        write_results(dir);
        write_file(dir.file("ch07.json"), ch07_text({{"paged_held_share", held}}));
        INFO(held);
        CHECK(run_error(dir).find(dir.file("ch07.json") + ": \"paged_held_share\"") == 0);
    }
    // A missing key, and a ratio past the doubles, named too.
    {
        const test::TempDir dir;
        write_results(dir);
        write_file(dir.file("ch08.json"), stamped("08_prefix_caching", "{\"headline\": \"x\"}"));
        CHECK(run_error(dir) == dir.file("ch08.json") + " has no \"prompt_share_from_cache\"");
        write_file(dir.file("ch08.json"), ch08_text({{"ttft_median_with_s", "1e-320"}}));
        CHECK(run_error(dir) ==
              dir.file("ch08.json") +
                  ": ttft_median_without_s / ttft_median_with_s is too large to print");
    }
}

// ---------------------------------------------------- where a results file came from

TEST_CASE("the closing table refuses a file that another chapter or format wrote") {
    struct Case {
        const char* file;
        std::string text;
        std::string says;  // the message after the file's name
    };
    const std::string figures = R"("naive_answer_ms": 400, "cached_answer_ms": 50, )"
                                R"("bytes_per_token": 131072, "bytes_per_conversation": 1})";
    const Case cases[] = {
        // Chapter 05's results saved as ch02.json.
        {"ch02.json", R"({"results_format": 1, "chapter": "05_queue_simulation", )" + figures,
         ": written as \"results_format\": 1, \"chapter\": \"05_queue_simulation\"; expected "
         "chapter \"02_kv_cache\" in results format 1"},
        // The closing table's own output, whose units are KiB and MiB, not bytes.
        {"ch03.json", R"({"results_format": 1, "chapter": "06_closing_table", )" + figures,
         ": written as \"results_format\": 1, \"chapter\": \"06_closing_table\"; expected "
         "chapter \"03_memory_arithmetic\" in results format 1"},
        // A file from before results carried their origin.
        {"ch02.json", R"({"chapter": "02_kv_cache", )" + figures,
         ": written as no \"results_format\", \"chapter\": \"02_kv_cache\"; expected chapter "
         "\"02_kv_cache\" in results format 1"},
        // Another format, and a format that is not a number.
        {"ch05.json", R"({"results_format": 2, "chapter": "05_queue_simulation", )" + figures,
         ": written as \"results_format\": 2, \"chapter\": \"05_queue_simulation\"; expected "
         "chapter \"05_queue_simulation\" in results format 1"},
        {"ch02.json", R"({"results_format": "1", "chapter": "02_kv_cache", )" + figures,
         ": written as \"results_format\": \"1\", \"chapter\": \"02_kv_cache\"; expected chapter "
         "\"02_kv_cache\" in results format 1"},
        {"ch08.json", R"({"results_format": 1, "chapter": "07_paged_kv_cache", )" + figures,
         ": written as \"results_format\": 1, \"chapter\": \"07_paged_kv_cache\"; expected "
         "chapter \"08_prefix_caching\" in results format 1"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.text);
        const test::TempDir dir;
        write_results(dir);
        write_file(dir.file(c.file), c.text);
        CHECK(run_error(dir) == dir.file(c.file) + c.says);
    }
}

TEST_CASE("every chapter's results open with the format and the chapter that wrote them") {
    // What emit() prints and saves, whatever the results hold.
    std::ostringstream printed_json;
    std::streambuf* old = std::cout.rdbuf(printed_json.rdbuf());
    OutputOptions out;
    out.json = true;
    out.chapter = "03_memory_arithmetic";
    emit(out, Json().add("chapter", "an old name").add("bytes_per_token", 2));
    std::cout.rdbuf(old);
    CHECK(printed_json.str() ==
          "{\"results_format\": 1, \"chapter\": \"03_memory_arithmetic\", \"bytes_per_token\": "
          "2}\n");
    // A chapter's own run says so, and the closing table reads it back.
    const test::TempDir dir;
    write_results(dir);
    ch02::Experiment experiment;
    const test::Ran ran = test::run_captured("02_kv_cache", {"--layers",     "1",
                                                             "--dim",        "16",
                                                             "--heads",      "2",
                                                             "--kv-heads",   "1",
                                                             "--ffn",        "16",
                                                             "--vocab",      "40",
                                                             "--max-seq",    "16",
                                                             "--prompt-len", "2",
                                                             "--answer-len", "2",
                                                             "--repeats",    "1",
                                                             "--plot-dir",   dir.file("plots"),
                                                             "--save-json",  dir.file("ch02.json")},
                                             experiment, ch02::report);
    REQUIRE(ran.status == 0);
    CHECK(contents_of(dir.file("ch02.json"))
              .rfind("{\"results_format\": 1, \"chapter\": \"02_kv_cache\", ", 0) == 0);
    CHECK(run_error(dir).empty());
}

TEST_CASE("a number of 100,000 digits gives an error line of a few dozen characters") {
    const test::TempDir dir;
    write_results(dir);
    const std::string digits = "1" + std::string(100'000, '0');
    write_file(dir.file("ch02.json"), stamped("02_kv_cache", "{\"naive_answer_ms\": " + digits +
                                                                 ", \"cached_answer_ms\": 50}"));
    const std::string error = run_error(dir);
    INFO(error.substr(0, 300));
    CHECK(error.size() < dir.file("ch02.json").size() + 150);
    CHECK(error.find("\"naive_answer_ms\" = 1000000000000000000000000000000000000000...") !=
          std::string::npos);
    CHECK(error.find("(100,001 bytes) is too large for a double") != std::string::npos);
    // A key of that length, given twice, and a value out of range.
    const std::string key(100'000, 'k');
    write_file(dir.file("ch02.json"),
               stamped("02_kv_cache", "{\"" + key + "\": 1, \"" + key + "\": 2}"));
    CHECK(run_error(dir).size() < dir.file("ch02.json").size() + 150);
    write_file(dir.file("ch02.json"), stamped("02_kv_cache", "{\"naive_answer_ms\": -" + digits +
                                                                 ", \"cached_answer_ms\": 50}"));
    CHECK(run_error(dir).size() < dir.file("ch02.json").size() + 150);
}
