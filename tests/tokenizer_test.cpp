// Text in and out: the byte-pair tokenizer of llama2.c's tokenizer.bin, on a
// tiny vocabulary made here, and every way its file can be wrong.
#include <doctest/doctest.h>

#include <fstream>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/real_weights/tokenizer.h"
#include "test_files.h"

using namespace kv;
using kv::test::Bytes;
using kv::test::TempDir;
using kv::test::write_bytes;

namespace {

// A tiny Llama-style vocabulary: <unk>, BOS, EOS, the 256 byte tokens, then
// single characters (two of them multi-byte) and merges with their scores.
struct TinyVocabulary {
    std::vector<std::string> pieces = {"<unk>", "\n<s>\n", "\n</s>\n"};
    std::vector<float> scores = {0, 0, 0};

    TinyVocabulary() {
        const char* hex = "0123456789ABCDEF";
        for (int b = 0; b < 256; ++b) add(std::string("<0x") + hex[b / 16] + hex[b % 16] + ">", 0);
        for (const char* c : {" ", "t", "h", "e", "c", "a", "o", "l", "w", "r", "d", "\xC3\xA9",
                              "\xE6\x97\xA5", "\xE6\x9C\xAC"})  // é, 日, 本
            add(c, 0);
        add("th", 5);
        add("he", 4);
        add(" t", 3);
        add(" th", 6);
        add(" the", 7);
        add(" c", 2);
        add("ca", 2);
        add("at", 1);
        add(" cat", 8);
        add("\xE6\x97\xA5\xE6\x9C\xAC", 9);  // 日本
    }
    void add(const std::string& piece, float score) {
        pieces.push_back(piece);
        scores.push_back(score);
    }
    int id(const std::string& piece) const {
        for (std::size_t i = 0; i < pieces.size(); ++i)
            if (pieces[i] == piece) return static_cast<int>(i);
        FAIL("no piece " << piece);
        return -1;
    }
    Tokenizer tokenizer() const { return Tokenizer(pieces, scores); }
    std::string file_bytes() const {
        Bytes b;
        b.i32(6);  // the longest piece: "\n</s>\n", "<0x00>" and 日本 have 6 bytes
        for (std::size_t i = 0; i < pieces.size(); ++i) b.token(scores[i], pieces[i]);
        return b.data;
    }
};

// The text of tokens as a reader sees it: BOS and EOS are not text.
std::string decode_all(const Tokenizer& t, const std::vector<int>& tokens) {
    std::string text;
    int prev = -1;
    for (int token : tokens) {
        if (token != Tokenizer::bos && token != Tokenizer::eos) text += t.decode(prev, token);
        prev = token;
    }
    return text;
}

void expect_tokenizer_error(const TempDir& dir, const std::string& bytes, int vocab_size,
                            const std::string& fragment) {
    const std::string path = dir.file("bad_tokenizer.bin");
    write_bytes(path, bytes);
    try {
        read_tokenizer(path, vocab_size);
    } catch (const std::runtime_error& e) {
        const std::string message = e.what();
        INFO(message);
        CHECK(message.find("tokenizer " + path + ": ") == 0);
        CHECK(message.find(fragment) != std::string::npos);
        CHECK(message.find('\n') == std::string::npos);
        return;
    }
    FAIL("no error for a tokenizer file that should give: " << fragment);
}

}  // namespace

// ------------------------------------------------------------------- encode

TEST_CASE("merges pick the highest score each time and end in whole words") {
    const TinyVocabulary v;
    const Tokenizer t = v.tokenizer();
    // " the cat": "th" (5) first, then " th" (6), " the" (7); of " c" and
    // "ca" (both 2) the leftmost, then "at" (1), then " cat" (8).
    CHECK(t.encode("the cat", true, false) ==
          std::vector<int>{Tokenizer::bos, v.id(" the"), v.id(" cat")});
    CHECK(t.encode("the cat", false, true) ==
          std::vector<int>{v.id(" the"), v.id(" cat"), Tokenizer::eos});
}

TEST_CASE("of two possible merges the higher score wins and on a tie the leftmost") {
    auto make = [](float ab, float bc) {
        TinyVocabulary v;
        v.add("b", 0);
        v.add("ab", ab);
        v.add("bc", bc);
        v.add("aa", 1);
        return v;
    };
    const TinyVocabulary bc_first = make(1, 5), ab_first = make(5, 1);
    CHECK(bc_first.tokenizer().encode("abc", false, false) ==
          std::vector<int>{bc_first.id(" "), bc_first.id("a"), bc_first.id("bc")});
    CHECK(ab_first.tokenizer().encode("abc", false, false) ==
          std::vector<int>{ab_first.id(" "), ab_first.id("ab"), ab_first.id("c")});
    CHECK(ab_first.tokenizer().encode("aaa", false, false) ==
          std::vector<int>{ab_first.id(" "), ab_first.id("aa"), ab_first.id("a")});
}

TEST_CASE("UTF-8 characters are looked up whole and fall back to byte tokens") {
    const TinyVocabulary v;
    const Tokenizer t = v.tokenizer();
    // é has a token; 日本 merges into one; ü (C3 BC) has none: its two bytes.
    CHECK(t.encode("\xC3\xA9", false, false) == std::vector<int>{v.id(" "), v.id("\xC3\xA9")});
    CHECK(t.encode("\xE6\x97\xA5\xE6\x9C\xAC", false, false) ==
          std::vector<int>{v.id(" "), v.id("\xE6\x97\xA5\xE6\x9C\xAC")});
    CHECK(t.encode("\xC3\xBC", false, false) == std::vector<int>{v.id(" "), 3 + 0xC3, 3 + 0xBC});
    // An emoji (F0 9F 98 80): four byte tokens.
    CHECK(t.encode("\xF0\x9F\x98\x80", false, false) ==
          std::vector<int>{v.id(" "), 3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80});
    CHECK(t.decode(5, 3 + 0xC3) == "\xC3");
    CHECK(t.decode(5, 3 + '\n') == "\n");
}

TEST_CASE("encode then decode gives the text back") {
    const TinyVocabulary v;
    const Tokenizer t = v.tokenizer();
    for (const std::string text : {"the cat", "hello world", "h\xC3\xA9llo w\xC3\xB6rld",
                                   "\xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80!", "a\tb\nc",
                                   "  two  spaces", "x", "\xFF\xC3 stray bytes \x80"}) {
        INFO(text);
        const std::vector<int> tokens = t.encode(text, true, true);
        CHECK(tokens.front() == Tokenizer::bos);
        CHECK(tokens.back() == Tokenizer::eos);
        CHECK(decode_all(t, tokens) == text);
    }
    CHECK(t.encode("", true, false) == std::vector<int>{Tokenizer::bos});  // no space prefix
    CHECK(t.encode("", false, false).empty());
}

TEST_CASE("decode drops the space after BOS and nowhere else") {
    const TinyVocabulary v;
    const Tokenizer t = v.tokenizer();
    CHECK(t.decode(Tokenizer::bos, v.id(" the")) == "the");
    CHECK(t.decode(v.id("a"), v.id(" the")) == " the");
    CHECK(t.decode(Tokenizer::bos, v.id("th")) == "th");
    CHECK_THROWS_AS(t.decode(0, t.vocab_size()), std::out_of_range);
    CHECK_THROWS_AS(t.decode(0, -1), std::out_of_range);
}

TEST_CASE("a character without a token needs byte tokens to exist") {
    const Tokenizer no_bytes({"<unk>", "\n<s>\n", "\n</s>\n", " ", "a"}, {0, 0, 0, 0, 0});
    CHECK(no_bytes.encode("a", true, false) == std::vector<int>{1, 3, 4});
    CHECK_THROWS_WITH_AS(no_bytes.encode("b", true, false), doctest::Contains("<0x62>"),
                         std::runtime_error);
}

// --------------------------------------------------------------------- file

TEST_CASE("a tokenizer file made by hand reads back and writing gives the same bytes") {
    TempDir dir;
    const TinyVocabulary v;
    const std::string path = dir.file("tokenizer.bin");
    write_bytes(path, v.file_bytes());
    const Tokenizer t = read_tokenizer(path, static_cast<int>(v.pieces.size()));
    REQUIRE(t.vocab_size() == static_cast<int>(v.pieces.size()));
    CHECK(t.max_token_length() == 6);
    for (int i = 0; i < t.vocab_size(); ++i) {
        CHECK(t.piece(i) == v.pieces[i]);
        CHECK(t.score(i) == v.scores[i]);
    }
    const std::string written = dir.file("written.bin");
    write_tokenizer(written, t);
    std::ifstream in(written, std::ios::binary);
    CHECK(std::string((std::istreambuf_iterator<char>(in)), {}) == v.file_bytes());
}

TEST_CASE("bad tokenizer files give one line naming what is wrong") {
    TempDir dir;
    const TinyVocabulary v;
    const int n = static_cast<int>(v.pieces.size());
    const std::string good = v.file_bytes();

    try {
        read_tokenizer(dir.file("missing.bin"), n);
        FAIL("a missing file was read");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()).find("No such file or directory") != std::string::npos);
    }
    expect_tokenizer_error(dir, "\x06\x00", n, "too few for its 4-byte header");
    for (std::int32_t bad : {0, -5, 5000}) {
        Bytes b;
        b.i32(bad);
        expect_tokenizer_error(dir, b.data + good.substr(4), n,
                               "max_token_length = " + std::to_string(bad) + " is not in 1..1024");
    }
    // Made for another model: fewer or more tokens than its vocabulary.
    expect_tokenizer_error(dir, good, n + 1,
                           "ends after " + std::to_string(n) +
                               " tokens, but the model's vocabulary has " + std::to_string(n + 1));
    expect_tokenizer_error(dir, good, n - 1, "left after the model's " + std::to_string(n - 1));
    expect_tokenizer_error(dir, good, 1, "more than 1 tokens can fill");
    expect_tokenizer_error(dir, good.substr(0, good.size() - 3), n, "ends inside token");

    // One bad token: its length or its score.
    auto one_token = [](std::int32_t max_length, float score, std::int32_t length,
                        const std::string& piece) {
        Bytes b;
        b.i32(max_length);
        b.f32(score);
        b.i32(length);
        b.data += piece;
        return b.data;
    };
    expect_tokenizer_error(dir, one_token(10, 0, -1, "abc"), 1, "token 0 has length -1");
    expect_tokenizer_error(dir, one_token(10, 0, 0, "abc"), 1, "token 0 has length 0");
    expect_tokenizer_error(dir, one_token(3, 0, 4, "ab"), 1,
                           "token 0 has length 4, not in 1..max_token_length = 3");
    expect_tokenizer_error(dir, one_token(1024, 0, 0x7FFFFFFF, "abc"), 1,
                           "token 0 has length 2147483647");
    expect_tokenizer_error(dir, one_token(10, 0, 5, "ab"), 1, "ends inside token 0");
    expect_tokenizer_error(dir, one_token(10, std::numeric_limits<float>::quiet_NaN(), 1, "a"), 1,
                           "token 0 has a non-finite score");
    write_bytes(dir.file("ok.bin"), one_token(10, 0.5f, 1, "a"));
    CHECK(read_tokenizer(dir.file("ok.bin"), 1).piece(0) == "a");
}

// ------------------------------------------------- random models and output

TEST_CASE("the byte-level tokenizer for random models fills any vocabulary") {
    CHECK_THROWS_AS(byte_level_tokenizer(258), std::invalid_argument);
    for (int vocab : {259, 300, 4096, 40000}) {
        const Tokenizer t = byte_level_tokenizer(vocab);
        REQUIRE(t.vocab_size() == vocab);
        CHECK(t.piece(3 + 0x41) == "<0x41>");
        std::set<std::string> distinct;
        for (int i = 0; i < vocab; ++i) distinct.insert(t.piece(i));
        CHECK(distinct.size() == std::size_t(vocab));  // no piece twice
        const std::string text = "Once upon a time, \xE6\x97\xA5 \xFF!";
        CHECK(decode_all(t, t.encode(text, true, false)) == text);
    }
    // With room for merges, a common word takes fewer tokens than letters.
    const Tokenizer t = byte_level_tokenizer(4096);
    CHECK(t.encode("the cat", false, false).size() < 8);
}

TEST_CASE("display text is valid UTF-8 without control characters") {
    CHECK(display_text("plain text\n\tindented") == "plain text\n\tindented");
    CHECK(display_text("h\xC3\xA9llo \xE6\x97\xA5 \xF0\x9F\x98\x80") ==
          "h\xC3\xA9llo \xE6\x97\xA5 \xF0\x9F\x98\x80");
    const std::string fffd = "\xEF\xBF\xBD";
    CHECK(display_text("a\xFF"
                       "b") == "a" + fffd + "b");
    CHECK(display_text("\xC0\xAF") == fffd + fffd);             // overlong '/'
    CHECK(display_text("\xED\xA0\x80") == fffd + fffd + fffd);  // a surrogate
    CHECK(display_text("end\xE6\x97") == "end" + fffd + fffd);  // cut short
    CHECK(display_text("\x1B[31mred\x7F\r") == "[31mred");      // escape, DEL, CR dropped
    CHECK(display_text("\xC2\x9B"
                       "x") == "x");  // U+009B, a C1 control
}

TEST_CASE("the fewest tokens a text can give bound what encode gives") {
    const TinyVocabulary v;
    const Tokenizer t(v.pieces, v.scores);
    REQUIRE(t.max_token_length() == 6);  // "<0xHH>" and 日本
    for (const std::string text : {"", "a", "the cat", " the the the", "\xE6\x97\xA5\xE6\x9C\xAC",
                                   "zzzz", "\x01\x02\x03", "the cat sat on the mat"}) {
        INFO(text);
        for (bool bos : {false, true})
            for (bool eos : {false, true})
                CHECK(t.fewest_tokens(text, bos, eos) <= t.encode(text, bos, eos).size());
    }
    // 日本 (6 bytes, one token) after the space: 7 bytes, so at least 2 tokens.
    CHECK(t.fewest_tokens("\xE6\x97\xA5\xE6\x9C\xAC", false, false) == 2);
    CHECK(t.encode("\xE6\x97\xA5\xE6\x9C\xAC", false, false).size() == 2);
    CHECK(t.fewest_tokens("", true, true) == 2);
    // A long text is bounded at once, without encoding it.
    CHECK(t.fewest_tokens(std::string(120'000, 'a'), true, false) == 20'002);
}

TEST_CASE("a tokenizer path that cannot be read names its real cause") {
    TempDir dir;
    const TinyVocabulary v;
    const int n = static_cast<int>(v.pieces.size());
    auto message = [&](const std::string& path) {
        try {
            read_tokenizer(path, n);
        } catch (const std::runtime_error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK(message("/dev/zero") == "tokenizer /dev/zero: a character device, not a regular file");
    CHECK(message(dir.path.string()) ==
          "tokenizer " + dir.path.string() + ": a folder, not a regular file");
    std::filesystem::create_symlink(dir.file("loop"), dir.file("loop"));
    CHECK(message(dir.file("loop")) ==
          "tokenizer " + dir.file("loop") + ": Too many levels of symbolic links");
    if (geteuid() != 0) {  // root reads anything
        write_bytes(dir.file("secret.bin"), v.file_bytes());
        std::filesystem::permissions(dir.file("secret.bin"), std::filesystem::perms::none);
        CHECK(message(dir.file("secret.bin")) ==
              "tokenizer " + dir.file("secret.bin") + ": Permission denied");
    }
    // The writer replaces a file whole and names a folder it cannot write in.
    CHECK_THROWS_WITH_AS(write_tokenizer(dir.file("none/t.bin"), Tokenizer(v.pieces, v.scores)),
                         doctest::Contains("No such file or directory"), std::runtime_error);
}
