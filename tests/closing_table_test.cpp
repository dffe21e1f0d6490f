// The closing table reads back the chapters' JSON: what report.h writes,
// saved_results.h must read, nested values and all.
#include <doctest/doctest.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "../chapters/06_closing_table/experiment.h"
#include "../chapters/06_closing_table/saved_results.h"
#include "../common/kit/program.h"
#include "../common/kit/report.h"
#include "test_files.h"

using namespace kv;

namespace {

SavedResults save_and_load(const std::string& text) {
    const test::TempDir dir;
    write_file(dir.file("ch02.json"), text);
    return ch06::load_saved_results(dir.file("ch02.json"));
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
    const SavedResults r = save_and_load(json.str());
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
    CHECK_THROWS_AS(ch06::load_saved_results("/nonexistent/ch02.json"), std::runtime_error);
    CHECK_THROWS_AS(save_and_load("{}").number("x"), std::runtime_error);
}

// Chapters 03 and 05's saved figures, as a run would leave them.
static void write_memory_and_queue(const test::TempDir& dir) {
    write_file(dir.file("ch03.json"), Json()
                                          .add("bytes_per_token", std::uint64_t(131072))
                                          .add("bytes_per_conversation", std::uint64_t(1) << 29)
                                          .str());
    write_file(dir.file("ch05.json"), Json()
                                          .add("median_ttft_no_cache_s", 300.0)
                                          .add("median_ttft_cache_s", 20.0)
                                          .add("median_ttft_continuous_s", 10.0)
                                          .str());
}

TEST_CASE("the closing table reads each figure and derives the ratios from it") {
    const test::TempDir dir;
    write_file(dir.file("ch02.json"),
               Json().add("naive_answer_ms", 400.0).add("cached_answer_ms", 50.0).str());
    write_memory_and_queue(dir);
    ch06::Experiment experiment;
    experiment.results_dir = dir.file("");
    const ch06::Results r = experiment.run();
    REQUIRE(r.figures.size() == std::size(ch06::kPublished));
    CHECK(r.figures[0].measured == 400.0);
    CHECK(r.figures[2].measured == 128.0);  // KiB
    CHECK(r.figures[3].measured == 512.0);  // MiB
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
        ch06::load_saved_results(dir.file("ch02.json"));
        FAIL("a folder was read");
    } catch (const std::runtime_error& e) {
        // A folder is not a missing file: no hint to run `make run`.
        CHECK(std::string(e.what()) == dir.file("ch02.json") + ": a folder, not a regular file");
    }
    CHECK_THROWS_WITH_AS(ch06::load_saved_results("/dev/zero"),
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
                   std::string("{\"naive_answer_ms\": ") + bad + ", \"cached_answer_ms\": 50}");
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
               Json().add("naive_answer_ms", 1.0).add("cached_answer_ms", 1e-320).str());
    ch06::Experiment experiment;
    experiment.results_dir = dir.file("");
    CHECK_THROWS_WITH_AS(experiment.run(), doctest::Contains("too large to print"),
                         std::runtime_error);
}
