// The closing table reads back the chapters' JSON: what report.h writes,
// saved_results.h must read, nested values and all.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "../chapters/06_closing_table/saved_results.h"
#include "../common/kit/program.h"
#include "../common/kit/report.h"
#include "test_files.h"

using namespace kv;

namespace {

SavedResults save_and_load(const std::string& text) {
    const test::TempDir dir;
    write_file(dir.file("ch02.json"), text);
    return SavedResults::load(dir.file("ch02.json"));
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
    CHECK_THROWS_AS(SavedResults::load("/nonexistent/ch02.json"), std::runtime_error);
    CHECK_THROWS_AS(save_and_load("{}").number("x"), std::runtime_error);
}
