// The fuzz harnesses' seeds (tests/fuzz/corpus/, tests/fuzz/seed_corpus.sh):
// every harness has some, and each is a valid input of the reader it is
// for, small enough for `make fuzz`'s -max_len, so that the fuzzer starts
// from files the reader accepts. The seeds are committed text; the
// checkpoint and tokenizer seeds are shapes, written here the way
// seed_corpus.sh has chapter 02 write them.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "../common/core/weights.h"
#include "../common/kit/flags.h"
#include "../common/kit/model_flags.h"
#include "../common/kit/saved_results.h"
#include "../common/real_weights/checkpoint.h"
#include "../common/real_weights/tokenizer.h"
#include "test_files.h"

using namespace kv;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kMaxLen = 4096;  // the Makefile's -max_len for make fuzz

const fs::path kFuzz = fs::path(__FILE__).parent_path() / "fuzz";

std::string text_of(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

std::vector<fs::path> seeds_of(const std::string& harness) {
    std::vector<fs::path> seeds;
    const fs::path dir = kFuzz / "corpus" / harness;
    if (fs::is_directory(dir))
        for (const auto& entry : fs::directory_iterator(dir)) seeds.push_back(entry.path());
    return seeds;
}

// A .flags seed: chapter 02's model flags, as seed_corpus.sh gives them.
Config shape_of(const fs::path& seed) {
    std::vector<std::string> words = {"02_kv_cache"};
    std::istringstream in(text_of(seed));
    for (std::string w; in >> w;) words.push_back(w);
    std::vector<const char*> argv;
    for (const std::string& w : words) argv.push_back(w.c_str());
    Config c;
    std::uint64_t seed_value = 1;
    Flags flags("02_kv_cache", "seed shapes");
    add_model_flags(flags, c, seed_value);
    flags.parse(int(argv.size()), argv.data());
    c.validate();
    return c;
}

}  // namespace

TEST_CASE("every fuzz harness has seeds") {
    int harnesses = 0;
    for (const auto& entry : fs::directory_iterator(kFuzz)) {
        if (entry.path().extension() != ".cpp") continue;
        ++harnesses;
        INFO(entry.path().string());
        CHECK(seeds_of(entry.path().stem().string()).size() >= 2);
    }
    CHECK(harnesses == 4);
}

TEST_CASE("the JSON seeds are JSON objects the closing table reads") {
    for (const fs::path& seed : seeds_of("json_fuzz")) {
        INFO(seed.string());
        CHECK(seed.extension() == ".json");
        const std::string text = text_of(seed);
        CHECK(text.size() <= kMaxLen);
        CHECK_NOTHROW(SavedResults::parse(seed.string(), text));
    }
}

TEST_CASE("the flag seeds parse with the harness's flags") {
    for (const fs::path& seed : seeds_of("flags_fuzz")) {
        INFO(seed.string());
        CHECK(seed.extension() == ".args");
        std::vector<std::string> args = {"fuzz"};
        std::istringstream lines(text_of(seed));
        for (std::string line; std::getline(lines, line);) args.push_back(line);
        std::vector<const char*> argv;
        for (const std::string& a : args) argv.push_back(a.c_str());
        // The declarations of flags_fuzz.cpp.
        int layers = 4;
        std::uint64_t seed_value = 1;
        double rate = 0.5;
        bool json = false;
        std::string dir = "plots", policy = "serial";
        Flags flags("fuzz", "the flag parser under a fuzzer");
        flags.add("layers", layers, -5, 64, "layers");
        flags.add("seed", seed_value, 0, UINT64_MAX, "seed");
        flags.add("rate", rate, 0.0, 1e9, "rate");
        flags.add("json", json, "json");
        flags.add("plot-dir", dir, "dir");
        flags.add_choice("policy", policy, {"serial", "static", "continuous"}, "policy");
        std::ostringstream help;
        std::streambuf* old = std::cout.rdbuf(help.rdbuf());
        CHECK_NOTHROW(flags.parse(int(argv.size()), argv.data()));
        std::cout.rdbuf(old);
    }
}

TEST_CASE("the checkpoint and tokenizer seeds are shapes whose files read back") {
    const test::TempDir dir;
    for (const fs::path& seed : seeds_of("checkpoint_fuzz")) {
        INFO(seed.string());
        REQUIRE(seed.extension() == ".flags");
        const Config c = shape_of(seed);
        CHECK(checkpoint_bytes(c) <= kMaxLen);
        write_checkpoint(dir.file("model.bin"), c, random_weights(c, 1));
        CHECK(read_checkpoint(dir.file("model.bin")).config.dim == c.dim);
    }
    for (const fs::path& seed : seeds_of("tokenizer_fuzz")) {
        INFO(seed.string());
        REQUIRE(seed.extension() == ".flags");
        const Config c = shape_of(seed);
        CHECK(c.vocab_size <= 4096);  // the harness's two bytes choose 1..4096
        write_tokenizer(dir.file("tokenizer.bin"), byte_level_tokenizer(c.vocab_size));
        CHECK(2 + fs::file_size(dir.file("tokenizer.bin")) <= kMaxLen);
        CHECK(read_tokenizer(dir.file("tokenizer.bin"), c.vocab_size).vocab_size() == c.vocab_size);
    }
}
