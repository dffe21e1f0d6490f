// What the programs print of text that came from outside (common/kit/
// report.h): JSON strings are always valid JSON, whatever bytes a path
// holds; the text report shows a path through visible(), as the error
// messages do; and an error quotes at most a few dozen characters of a
// value, however long it is; fixed() prints every digit.
#include <doctest/doctest.h>

#include <cstdint>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../chapters/03_memory_arithmetic/experiment.h"
#include "../chapters/03_memory_arithmetic/report.h"
#include "../common/kit/flags.h"
#include "../common/kit/report.h"
#include "run_captured.h"
#include "test_files.h"

using namespace kv;

namespace {

// Whether `s` is UTF-8 (RFC 3629), checked here apart from the code under test.
bool is_utf8(const std::string& s) {
    for (std::size_t i = 0; i < s.size();) {
        const auto b = [&](std::size_t k) {
            return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u;
        };
        const unsigned c = b(i);
        std::size_t n = 0;
        std::uint32_t cp = 0;
        if (c < 0x80) {
            n = 1;
            cp = c;
        } else if ((c & 0xE0) == 0xC0) {
            n = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        for (std::size_t k = 1; k < n; ++k) {
            if ((b(i + k) & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (b(i + k) & 0x3F);
        }
        const std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += n;
    }
    return true;
}

// Whether `s` is one JSON string as RFC 8259 has it: UTF-8, quoted, no raw
// control character, every escape one JSON knows.
bool is_json_string(const std::string& s) {
    if (!is_utf8(s) || s.size() < 2 || s.front() != '"' || s.back() != '"') return false;
    for (std::size_t i = 1; i + 1 < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == '"') return false;
        if (c != '\\') continue;
        const char e = s[++i];
        if (e == 'u') {
            for (int k = 0; k < 4; ++k)
                if (!std::isxdigit(static_cast<unsigned char>(s[++i]))) return false;
        } else if (std::string("\"\\/bfnrt").find(e) == std::string::npos) {
            return false;
        }
    }
    return true;
}

}  // namespace

TEST_CASE("fixed prints every digit of a very large number") {
    // Against the stream's own fixed notation: a second writer of the same digits.
    for (const double value : {123.456, 1e300, -std::numeric_limits<double>::max(), 0x1p70}) {
        std::ostringstream stream;
        stream << std::fixed << std::setprecision(2) << value;
        INFO(value);
        CHECK(fixed(value, 2) == stream.str());
    }
    CHECK(fixed(1e300, 0).size() == 301);
}

TEST_CASE("a JSON string is valid JSON whatever bytes it is given") {
    const std::vector<std::string> bytes = {
        "\xff",              // never in UTF-8
        "plots/\xc3",        // a sequence cut short
        "\xc3(",             // a lead byte without its continuation
        "\xc0\xaf",          // an overlong '/'
        "\xed\xa0\x80",      // a UTF-16 surrogate
        "\xf4\x90\x80\x80",  // above U+10FFFF
        "\x80",              // a continuation alone
        "a\x1b[31mb\x7f",    // an escape sequence and DEL
        "\xe2\x82",          // cut short at the end
    };
    for (const std::string& s : bytes) {
        CAPTURE(visible(s));
        CHECK(is_json_string(json_quote(s)));
    }
    // Each byte that is not UTF-8 becomes U+FFFD (\ufffd); the rest stays.
    CHECK(json_quote("a\xff"
                     "b") == "\"a\\ufffdb\"");
    CHECK(json_quote("\xc0\xaf") == "\"\\ufffd\\ufffd\"");
    CHECK(json_quote("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");
    CHECK(json_quote("\x1b") == "\"\\u001b\"");
    // Valid UTF-8 in any script is kept as it is.
    for (const std::string s : {"caf\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x98\x80",
                                "\xef\xbf\xbd", "\xf4\x8f\xbf\xbf"})
        CHECK(json_quote(s) == "\"" + s + "\"");
}

TEST_CASE("visible escapes what a terminal would act on and bytes that are not UTF-8") {
    CHECK(visible("a\x1b[2Jb") == "a\\x1b[2Jb");
    CHECK(visible("\xc2\x9b"
                  "31m") == "\\u009b31m");  // CSI, the one-character escape
    CHECK(visible("\xc2\x85") == "\\u0085");
    CHECK(visible("\xff\xfe") == "\\xff\\xfe");
    CHECK(visible("plots/\xc3") == "plots/\\xc3");
    CHECK(visible("caf\xc3\xa9 \xc2\xa0 \xe6\x97\xa5") == "caf\xc3\xa9 \xc2\xa0 \xe6\x97\xa5");
    CHECK(visible("\x7f\r\t\n") == "\\x7f\\r\\t\\n");
}

TEST_CASE("an error quotes at most a few dozen characters of what it was given") {
    const std::string digits(100'000, '9');
    CHECK(excerpt("short") == "short");
    const std::string cut = excerpt(digits);
    CHECK(cut.size() < 90);
    CHECK(cut == std::string(40, '9') + "..." + std::string(20, '9') + " (100,000 bytes)");
    // Cut between characters, never inside one.
    std::string accents;
    for (int i = 0; i < 100; ++i) accents += "\xc3\xa9";
    CHECK(is_utf8(excerpt(accents)));

    // Every kind of flag.
    int layers = 4;
    double rate = 0;
    std::string policy = "a";
    Flags flags("test", "a test program");
    flags.add("layers", layers, 1, 64, "layers");
    flags.add("rate", rate, 0.0, 10.0, "rate");
    flags.add_choice("policy", policy, {"a", "b"}, "policy");
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"--layers", digits},
                                               {"--layers", "x" + digits},
                                               {"--rate", digits},
                                               {"--rate", "1e" + digits},
                                               {"--policy", digits},
                                               {"--" + digits},
                                               {digits}}) {
        std::vector<const char*> argv = {"test"};
        for (const std::string& a : args) argv.push_back(a.c_str());
        try {
            flags.parse(static_cast<int>(argv.size()), argv.data());
            FAIL("taken");
        } catch (const UsageError& e) {
            INFO(std::string(e.what()).substr(0, 200));
            CHECK(std::string(e.what()).size() < 160);
        }
    }
}

TEST_CASE("paths in the text report and in the JSON show what a terminal and a parser can take") {
    // A plot folder whose name holds an escape sequence and a byte that is
    // not UTF-8: the text shows both escaped, the JSON stays valid UTF-8.
    const test::TempDir dir;
    const std::string odd = dir.file("plots \x1b[31mred\x1b[0m \xff");
    for (const bool json : {false, true}) {
        ch03::Experiment experiment;
        std::vector<std::string> args = {"--measure-tokens", "16", "--plot-dir", odd};
        if (json) args.push_back("--json");
        const test::Ran ran =
            test::run_captured("03_memory_arithmetic", args, experiment, ch03::report);
        REQUIRE(ran.status == 0);
        CHECK(ran.out.find('\x1b') == std::string::npos);
        CHECK(is_utf8(ran.out));
        if (json) {
            CHECK(ran.out.find("plots \\u001b[31mred\\u001b[0m \\ufffd/03_cache_bytes.svg") !=
                  std::string::npos);
        } else {
            CHECK(ran.out.find("plot: " + dir.file("plots \\x1b[31mred\\x1b[0m \\xff") +
                               "/03_cache_bytes.svg") != std::string::npos);
        }
    }
}

// ---------------------------------------------------------------- findings

TEST_CASE("findings print text and JSON from one list") {
    Table table({"name", "count"});
    table.add_row({"a \"quoted\" name", 3});
    Findings f("Title");
    f.line("size", "size", bytes_cell(3 << 20))
        .line("share", "share", Cell("12.5%", 0.125))
        .text("")
        .table("rows", "The rows:", table)
        .text("words that teach")
        .data("tokens", std::vector<int>{1, 2})
        .headline("the one line");
    std::ostringstream text;
    f.print(text);
    CHECK(text.str() ==
          "Title\n\nsize: 3 MiB\nshare: 12.5%\n\nThe rows:\n"
          "  name             count\n  ---------------  -----\n  a \"quoted\" name      3\n"
          "words that teach\n\nthe one line\n");
    // The same values, each under its key; text alone is not in the JSON.
    CHECK(f.json().str() ==
          "{\"size\": 3145728, \"share\": 0.125, \"rows\": [{\"name\": \"a \\\"quoted\\\" name\", "
          "\"count\": 3}], \"tokens\": [1, 2], \"headline\": \"the one line\"}");
}

TEST_CASE("findings escape what they carry and refuse a key written twice") {
    Findings f("T");
    f.line("path", "path", outside_text("a\x1b[31m\xff"));
    std::ostringstream text;
    f.print(text);
    CHECK(text.str().find("path: a\\x1b[31m\\xff") != std::string::npos);
    CHECK(f.json().str() == "{\"path\": \"a\\u001b[31m\\ufffd\"}");
    CHECK_THROWS_AS(f.line("path", "again", 1), std::logic_error);
    CHECK_THROWS_AS(f.data("path", Cell(2.0, 1)), std::logic_error);
}

TEST_CASE("a finding's numbers keep full precision in the JSON and print as rounded") {
    Findings f("T");
    f.line("ms", "time", Cell(1.0 / 3.0, 2)).line("n", "count", std::uint64_t(1234567));
    std::ostringstream text;
    f.print(text);
    CHECK(text.str() == "T\n\ntime: 0.33\ncount: 1,234,567\n");
    CHECK(f.json().str() == "{\"ms\": 0.3333333333333333, \"n\": 1234567}");
}

TEST_CASE("the cells every chapter shows print for people and keep the number in JSON") {
    CHECK(duration_cell(0.0123).text == "12.3 ms");
    CHECK(duration_cell(0.0123).json == "0.0123");
    CHECK(times_cell(5.26).text == "5.3 x");
    CHECK(percent_cell(0.75).text == "75.0%");
    CHECK(percent_cell(0.75).json == "0.75");
    CHECK(rate_cell(26.84e9).text == "26.8 GB/s");
    CHECK(rate_cell(0.88e9).text == "0.880 GB/s");
    CHECK(yes_no(true).text == "yes");
    CHECK(yes_no(false).json == "false");
    CHECK(bytes_cell(3 << 20).text == "3 MiB");
    CHECK(bytes_cell(3 << 20).json == "3145728");
    // concat: text as it is, whole numbers in decimal.
    CHECK(concat("batch ", 8, " of ", std::uint64_t(64), ", ", std::string("dim"), " ", -3) ==
          "batch 8 of 64, dim -3");
}
