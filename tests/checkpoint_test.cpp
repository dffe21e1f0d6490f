// Real weights: llama2.c's checkpoint format read and written, and the
// loading helper the chapters use (model_source.h).
//
// The files are made here, in a temporary folder: a random model written and
// read back, and a tiny two-layer model written out number by number whose
// logits a plain scalar forward pass in this file works out on its own.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/core/cached_decoding.h"
#include "../common/kit/flags.h"
#include "../common/real_weights/checkpoint.h"
#include "../common/real_weights/model_source.h"
#include "../common/real_weights/tokenizer.h"
#include "test_files.h"
#include "tiny_models.h"

using namespace kv;
using kv::test::Bytes;
using kv::test::TempDir;
using kv::test::write_bytes;

namespace {

Bytes header(int dim, int hidden, int layers, int heads, int kv_heads, int vocab, int seq) {
    Bytes b;
    for (int v : {dim, hidden, layers, heads, kv_heads, vocab, seq}) b.i32(v);
    return b;
}

// Runs `read` and checks it throws an error whose one line names the file
// and contains `fragment` (a reader's runtime_error, or load_model's
// UsageError naming the flag).
template <class Read>
void expect_error(Read&& read, const std::string& path, const std::string& fragment) {
    try {
        read();
    } catch (const std::exception& e) {
        const std::string message = e.what();
        INFO(message);
        CHECK(message.find(path) != std::string::npos);
        CHECK(message.find(fragment) != std::string::npos);
        CHECK(message.find('\n') == std::string::npos);
        return;
    }
    FAIL("no error for a file that should give: " << fragment);
}

void expect_checkpoint_error(const TempDir& dir, const std::string& bytes,
                             const std::string& fragment) {
    const std::string path = dir.file("bad.bin");
    write_bytes(path, bytes);
    expect_error([&] { read_checkpoint(path); }, path, fragment);
}

std::vector<float> logits_after(Transformer& model, const std::vector<int>& tokens) {
    KVCache cache(model.config());
    const auto logits = model.forward(tokens, cache);
    return {logits.begin(), logits.end()};
}

}  // namespace

// ------------------------------------------------------------ little-endian

TEST_CASE("numbers are read and written little-endian whatever the host") {
    const unsigned char one_two_three_four[] = {0x01, 0x02, 0x03, 0x04};
    CHECK(le_int32(one_two_three_four) == 0x04030201);
    const unsigned char minus_one[] = {0xFF, 0xFF, 0xFF, 0xFF};
    CHECK(le_int32(minus_one) == -1);
    const unsigned char float_one[] = {0x00, 0x00, 0x80, 0x3F};  // 1.0f is 0x3F800000
    CHECK(le_float32(float_one) == 1.0f);
    std::string out;
    append_le_int32(out, 0x04030201);
    append_le_float32(out, 1.0f);
    CHECK(out == std::string("\x01\x02\x03\x04\x00\x00\x80\x3F", 8));
}

TEST_CASE("a shared output table is counted once") {
    Config c = test::tiny_config();
    const std::uint64_t unshared = c.parameter_count();
    c.shared_output = true;
    CHECK(c.parameter_count() == unshared - std::uint64_t(c.vocab_size) * c.dim);
}

// ----------------------------------------------------------------- round trip

TEST_CASE("a random model written and read back gives bit-identical logits") {
    TempDir dir;
    const std::string path = dir.file("model.bin");
    for (bool shared : {false, true})
        for (Config c : test::shapes_to_check()) {
            c.shared_output = shared;
            Weights weights = random_weights(c, 3);
            if (shared) weights.output = weights.token_embedding;  // tied, as the file will hold
            write_checkpoint(path, c, weights);
            INFO(c.describe() << (shared ? ", shared output" : ", own output"));
            CHECK(std::filesystem::file_size(path) == checkpoint_bytes(c));

            // The header, decoded here byte by byte.
            Bytes expected = header(c.dim, c.ffn_dim, c.n_layers, c.n_heads, c.n_kv_heads,
                                    shared ? c.vocab_size : -c.vocab_size, c.max_seq);
            std::ifstream in(path, std::ios::binary);
            std::string head(28, '\0');
            in.read(head.data(), 28);
            CHECK(head == expected.data);

            Checkpoint back = read_checkpoint(path);
            CHECK(back.config.describe() == c.describe());
            CHECK(back.config.shared_output == shared);
            CHECK(back.weights.output.data == weights.output.data);
            CHECK(back.weights.layers.back().w2.data == weights.layers.back().w2.data);

            Transformer original(c, weights), loaded(back.config, std::move(back.weights));
            const std::vector<int> prompt = fixed_prompt(9, c.vocab_size, 3);
            std::vector<std::vector<float>> a, b;
            const auto tokens_a = generate_cached(
                original, prompt, 8, [&](int, auto l) { a.emplace_back(l.begin(), l.end()); });
            const auto tokens_b = generate_cached(
                loaded, prompt, 8, [&](int, auto l) { b.emplace_back(l.begin(), l.end()); });
            CHECK(tokens_a == tokens_b);
            CHECK(a == b);  // bit for bit
        }
}

TEST_CASE("a shared checkpoint is smaller by exactly the output table") {
    Config c = test::tiny_config();
    const std::uint64_t own = checkpoint_bytes(c);
    c.shared_output = true;
    CHECK(own - checkpoint_bytes(c) == std::uint64_t(c.vocab_size) * c.dim * 4);
}

TEST_CASE("the writer refuses weights that do not fit the config") {
    TempDir dir;
    Config c = test::tiny_config();
    Weights w = random_weights(c, 1);
    c.shared_output = true;  // but the output table is not the embedding
    CHECK_THROWS_AS(write_checkpoint(dir.file("a.bin"), c, w), std::invalid_argument);
    c.shared_output = false;
    w.layers[1].wk = Matrix(3, 3);
    CHECK_THROWS_WITH_AS(write_checkpoint(dir.file("b.bin"), c, w),
                         doctest::Contains("wk of layer 1"), std::invalid_argument);
}

// ------------------------------------------------- a checkpoint made by hand

namespace {

// Two layers, dim 4, two query heads of size 2 sharing one KV head, ffn 6,
// vocab 7, seq_len 8: 332 numbers. Two layers, so that reading the file
// layer by layer (instead of tensor by tensor) would give other logits.
struct HandMade {
    static constexpr int dim = 4, hidden = 6, layers = 2, heads = 2, kv_heads = 1, vocab = 7,
                         seq = 8, head_size = dim / heads, kv_dim = kv_heads * head_size;
    bool shared;
    std::vector<float> numbers;  // everything after the header, in file order

    // Offsets of each tensor in `numbers`, in the order the format lists them.
    std::size_t emb, attn_norm, wq, wk, wv, wo, ffn_norm, w1, w2, w3, final_norm, rope, out;

    explicit HandMade(bool shared_output) : shared(shared_output) {
        std::size_t at = 0;
        auto take = [&](std::size_t n) {
            const std::size_t start = at;
            at += n;
            return start;
        };
        emb = take(vocab * dim);
        attn_norm = take(layers * dim);
        wq = take(layers * dim * dim);
        wk = take(layers * kv_dim * dim);
        wv = take(layers * kv_dim * dim);
        wo = take(layers * dim * dim);
        ffn_norm = take(layers * dim);
        w1 = take(layers * hidden * dim);
        w2 = take(layers * dim * hidden);
        w3 = take(layers * hidden * dim);
        final_norm = take(dim);
        rope = take(2 * seq * head_size / 2);
        out = shared ? emb : take(vocab * dim);
        numbers.resize(at);
        std::uint32_t state = 12345;  // a small generator of its own: numbers in [-1, 1)
        for (float& v : numbers) {
            state = state * 1664525u + 1013904223u;
            v = float(state >> 8) / float(1 << 23) - 1.0f;
        }
        for (std::size_t n : {attn_norm, ffn_norm})
            for (std::size_t i = 0; i < layers * dim; ++i)
                numbers[n + i] = 1.0f + 0.25f * numbers[n + i];
        // The RoPE tables must be skipped: a reader that used them as
        // weights would meet NaN and refuse the file.
        for (std::size_t i = 0; i < std::size_t(2 * seq * head_size / 2); ++i)
            numbers[rope + i] = std::numeric_limits<float>::quiet_NaN();
    }

    std::string bytes() const {
        Bytes b = header(dim, hidden, layers, heads, kv_heads, shared ? vocab : -vocab, seq);
        for (float v : numbers) b.f32(v);
        return b.data;
    }

    // y = W x for W at `offset`, (rows, cols) row-major.
    std::vector<double> times(std::size_t offset, int rows, int cols,
                              const std::vector<double>& x) const {
        std::vector<double> y(rows, 0.0);
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c) y[r] += double(numbers[offset + r * cols + c]) * x[c];
        return y;
    }

    std::vector<double> rmsnorm(const std::vector<double>& x, std::size_t scale) const {
        double ss = 0;
        for (double v : x) ss += v * v;
        const double inv = 1.0 / std::sqrt(ss / double(x.size()) + 1e-5);
        std::vector<double> y(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * numbers[scale + i];
        return y;
    }

    // Llama 2's rotation: pair (2i, 2i+1) of each head by pos * 10000^(-2i/head_size).
    static void rotate(std::vector<double>& v, int pos) {
        for (std::size_t h = 0; h < v.size(); h += head_size)
            for (int i = 0; i < head_size / 2; ++i) {
                const double angle = pos * std::pow(10000.0, -2.0 * i / head_size);
                const double a = v[h + 2 * i], b = v[h + 2 * i + 1];
                v[h + 2 * i] = a * std::cos(angle) - b * std::sin(angle);
                v[h + 2 * i + 1] = a * std::sin(angle) + b * std::cos(angle);
            }
    }

    // The whole forward pass, one position at a time, in double precision:
    // the logits after the last token.
    std::vector<double> logits(const std::vector<int>& tokens) const {
        std::vector<std::vector<std::vector<double>>> keys(layers), values(layers);
        std::vector<double> x;
        for (int pos = 0; pos < int(tokens.size()); ++pos) {
            x.assign(numbers.begin() + emb + tokens[pos] * dim,
                     numbers.begin() + emb + (tokens[pos] + 1) * dim);
            for (int l = 0; l < layers; ++l) {
                const std::vector<double> xb = rmsnorm(x, attn_norm + l * dim);
                std::vector<double> q = times(wq + l * dim * dim, dim, dim, xb);
                std::vector<double> k = times(wk + l * kv_dim * dim, kv_dim, dim, xb);
                rotate(q, pos);
                rotate(k, pos);
                keys[l].push_back(k);
                values[l].push_back(times(wv + l * kv_dim * dim, kv_dim, dim, xb));
                std::vector<double> att(dim, 0.0);
                for (int h = 0; h < heads; ++h) {
                    const int kvh = h / (heads / kv_heads);
                    std::vector<double> w(pos + 1);
                    double top = -1e300, sum = 0;
                    for (int t = 0; t <= pos; ++t) {
                        double s = 0;
                        for (int i = 0; i < head_size; ++i)
                            s += q[h * head_size + i] * keys[l][t][kvh * head_size + i];
                        w[t] = s / std::sqrt(double(head_size));
                        top = std::max(top, w[t]);
                    }
                    for (double& v : w) sum += (v = std::exp(v - top));
                    for (int t = 0; t <= pos; ++t)
                        for (int i = 0; i < head_size; ++i)
                            att[h * head_size + i] +=
                                w[t] / sum * values[l][t][kvh * head_size + i];
                }
                const std::vector<double> o = times(wo + l * dim * dim, dim, dim, att);
                for (int i = 0; i < dim; ++i) x[i] += o[i];
                const std::vector<double> xf = rmsnorm(x, ffn_norm + l * dim);
                std::vector<double> g = times(w1 + l * hidden * dim, hidden, dim, xf);
                const std::vector<double> u = times(w3 + l * hidden * dim, hidden, dim, xf);
                for (int i = 0; i < hidden; ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
                const std::vector<double> d = times(w2 + l * dim * hidden, dim, hidden, g);
                for (int i = 0; i < dim; ++i) x[i] += d[i];
            }
        }
        return times(out, vocab, dim, rmsnorm(x, final_norm));
    }
};

}  // namespace

TEST_CASE("a hand-made checkpoint gives the logits a scalar forward pass works out") {
    TempDir dir;
    const double tolerance = 1e-5;  // float32 against double, values of order 1
    for (bool shared : {false, true}) {
        const HandMade file(shared);
        const std::string path = dir.file("hand.bin");
        write_bytes(path, file.bytes());
        CHECK(file.numbers.size() == (shared ? 304u : 332u));

        Checkpoint checkpoint = read_checkpoint(path);
        const Config& c = checkpoint.config;
        CHECK(c.dim == 4);
        CHECK(c.ffn_dim == 6);
        CHECK(c.n_layers == 2);
        CHECK(c.n_heads == 2);
        CHECK(c.n_kv_heads == 1);
        CHECK(c.vocab_size == 7);
        CHECK(c.max_seq == 8);
        CHECK(c.shared_output == shared);
        Transformer model(c, std::move(checkpoint.weights));

        const std::vector<int> sequence = {1, 5, 3, 6, 0, 2};
        for (std::size_t n = 1; n <= sequence.size(); ++n) {
            const std::vector<int> tokens(sequence.begin(), sequence.begin() + n);
            const std::vector<float> got = logits_after(model, tokens);
            const std::vector<double> want = file.logits(tokens);
            double worst = 0;
            for (int i = 0; i < 7; ++i)
                worst = larger_difference(worst, std::fabs(got[i] - want[i]));
            INFO("output " << (shared ? "shared" : "own") << ", " << n
                           << " tokens: largest difference " << worst << " (tolerance " << tolerance
                           << ")");
            CHECK(worst <= tolerance);
        }
    }
}

// ------------------------------------------------------------------ bad files

TEST_CASE("bad checkpoints give one line naming what is wrong") {
    TempDir dir;
    // A valid tiny shape: dim 8, ffn 12, 1 layer, 2 heads, 1 KV head, vocab 5, seq 4.
    auto good_header = [] { return header(8, 12, 1, 2, 1, 5, 4); };

    expect_error([&] { read_checkpoint(dir.file("missing.bin")); }, dir.file("missing.bin"),
                 "No such file or directory");
    expect_error([&] { read_checkpoint(dir.path.string()); }, dir.path.string(),
                 "not a regular file");
    expect_checkpoint_error(dir, "", "too few for the 28-byte header");
    expect_checkpoint_error(dir, good_header().data.substr(0, 27), "too few");

    const char* names[] = {"dim",        "hidden_dim", "n_layers", "n_heads",
                           "n_kv_heads", "vocab_size", "seq_len"};
    for (int field = 0; field < 7; ++field) {
        std::string bytes = good_header().data;
        bytes.replace(4 * field, 4, std::string(4, '\0'));
        expect_checkpoint_error(dir, bytes, std::string(names[field]) + " = 0");
    }
    expect_checkpoint_error(dir, header(8, 12, -2, 2, 1, 5, 4).data,
                            "n_layers = -2 must be positive");
    expect_checkpoint_error(dir, header(8, 12, 1, 2, 1, 5, -1).data, "seq_len = -1");
    expect_checkpoint_error(dir, header(8, 12, 1, 2, 1, INT_MIN, 4).data,
                            "vocab_size = -2147483648 is absurd");
    expect_checkpoint_error(dir, header(1 << 30, 12, 1, 2, 1, 5, 4).data,
                            "dim = 1073741824 is absurd");
    expect_checkpoint_error(dir, header(8, 12, 5000, 2, 1, 5, 4).data, "n_layers = 5000 is absurd");
    expect_checkpoint_error(dir, header(6, 12, 1, 4, 1, 5, 4).data,
                            "dim = 6 is not divisible by n_heads = 4");
    expect_checkpoint_error(dir, header(24, 12, 1, 4, 3, 5, 4).data,
                            "n_heads = 4 is not divisible by n_kv_heads = 3");
    expect_checkpoint_error(dir, header(6, 12, 1, 2, 1, 5, 4).data, "head size dim / n_heads = 3");
    expect_checkpoint_error(dir, header(0x616b3432, 2, 0, 0, 0, 0, 0).data, "version 1/2");

    // The size is checked against the header before anything is read, so
    // a header promising terabytes is refused without allocating them.
    expect_checkpoint_error(dir, good_header().data, "truncated");
    expect_checkpoint_error(dir, header(1 << 16, 1 << 18, 1024, 1024, 1024, 1 << 20, 1 << 20).data,
                            "truncated");

    // A whole valid file, then the same with one number too many or too few.
    const Config c{.n_layers = 1,
                   .dim = 8,
                   .n_heads = 2,
                   .n_kv_heads = 1,
                   .ffn_dim = 12,
                   .vocab_size = 5,
                   .max_seq = 4};
    const std::string good = dir.file("good.bin");
    write_checkpoint(good, c, random_weights(c, 2));
    std::ifstream in(good, std::ios::binary);
    const std::string whole((std::istreambuf_iterator<char>(in)), {});
    CHECK_NOTHROW(read_checkpoint(good));
    expect_checkpoint_error(dir, whole.substr(0, whole.size() - 4), "truncated");
    expect_checkpoint_error(dir, whole + "1234", "4 more than the header's shape needs");

    // A NaN or an infinity among the weights: named by tensor and layer.
    // (Tensors after the embedding (5x8) and attn_norm (8): wq of layer 0
    // starts at number 48.)
    std::string with_nan = whole;
    Bytes nan;
    nan.f32(std::numeric_limits<float>::quiet_NaN());
    with_nan.replace(28 + 4 * 50, 4, nan.data);
    expect_checkpoint_error(dir, with_nan, "wq of layer 0 holds a non-finite number");
    std::string with_inf = whole;
    Bytes inf;
    inf.f32(std::numeric_limits<float>::infinity());
    with_inf.replace(28 + 4 * 3, 4, inf.data);
    expect_checkpoint_error(dir, with_inf, "the token embedding holds a non-finite number");
}

// ------------------------------------------------ loading for the chapters

namespace {

Config small_text_model() {  // vocabulary big enough for a byte-level tokenizer
    Config c = test::tiny_config();
    c.vocab_size = 300;
    c.max_seq = 40;
    return c;
}

}  // namespace

TEST_CASE("with no files the chapters get the random model and the fixed prompt") {
    const Config c = test::tiny_config();
    LoadedModel loaded = load_model(ModelSource{}, c, 5, 7, 10);
    CHECK(loaded.prompt == fixed_prompt(7, c.vocab_size, 5));
    CHECK_FALSE(loaded.tokenizer.has_value());
    CHECK(loaded.prompt_text().empty());
    Transformer same(c, 5);
    CHECK(logits_after(loaded.model, loaded.prompt) == logits_after(same, loaded.prompt));
}

TEST_CASE("a checkpoint and a tokenizer give the model and the prompt as text") {
    TempDir dir;
    const Config c = small_text_model();
    ModelSource source;
    source.checkpoint = dir.file("model.bin");
    source.tokenizer = dir.file("tokenizer.bin");
    source.prompt = "hello world";
    write_checkpoint(source.checkpoint, c, random_weights(c, 4));
    const Tokenizer tokenizer = byte_level_tokenizer(c.vocab_size);
    write_tokenizer(source.tokenizer, tokenizer);

    // The model-shape flags keep their defaults: the file sets the shape.
    LoadedModel loaded = load_model(source, Config{}, 1, 16, 8);
    CHECK(loaded.model.config().describe() == c.describe());
    CHECK(loaded.prompt == tokenizer.encode("hello world", true, false));
    CHECK(loaded.prompt.front() == Tokenizer::bos);
    CHECK(loaded.prompt_text() == "hello world");
    CHECK(loaded.weights == source.checkpoint);
    Transformer same(c, 4);
    CHECK(logits_after(loaded.model, loaded.prompt) == logits_after(same, loaded.prompt));

    // The answer's text is its tokens decoded, up to an end-of-text token.
    const std::vector<int> answer = tokenizer.encode("abc", false, false);
    CHECK(loaded.answer_text(answer) == " abc");
    std::vector<int> ended = answer;
    ended.push_back(Tokenizer::eos);
    ended.push_back(answer.back());
    CHECK(loaded.answer_text(ended) == " abc");
}

TEST_CASE("loading errors are usage errors or name the file") {
    TempDir dir;
    const Config c = small_text_model();
    const std::string model = dir.file("model.bin"), tokens = dir.file("tokenizer.bin");
    write_checkpoint(model, c, random_weights(c, 4));
    write_tokenizer(tokens, byte_level_tokenizer(c.vocab_size + 1));  // one token too many

    ModelSource source;
    source.prompt = "hi";
    CHECK_THROWS_WITH_AS(load_model(source, c, 1, 4, 4), doctest::Contains("--tokenizer"),
                         UsageError);

    source = ModelSource{};
    source.checkpoint = model;
    const Config changed{.dim = 128};
    CHECK_THROWS_WITH_AS(load_model(source, changed, 1, 4, 4), doctest::Contains("--dim"),
                         UsageError);
    CHECK_THROWS_WITH_AS(load_model(source, Config{}, 1, 30, 20),
                         doctest::Contains("exceeds the checkpoint's seq_len 40"), UsageError);

    source.tokenizer = tokens;
    expect_error([&] { load_model(source, Config{}, 1, 4, 4); }, tokens,
                 "left after the model's 300 tokens");

    source = ModelSource{};
    CHECK_THROWS_WITH_AS(
        load_model(source, c, 1, 30, 20),
        doctest::Contains("--prompt-len 30 + --answer-len 20 - 1 = 49 exceeds --max-seq"),
        UsageError);
}

TEST_CASE("the random model saved and loaded again is the same model") {
    TempDir dir;
    const Config c = small_text_model();
    ModelSource source;
    source.save_checkpoint = dir.file("saved.bin");
    source.save_tokenizer = dir.file("saved_tokenizer.bin");
    const LoadedModel original = load_model(source, c, 9, 5, 5);
    const std::string said = save_model_files(source, original);
    CHECK(said.find(source.save_checkpoint) != std::string::npos);
    CHECK(said.find(source.save_tokenizer) != std::string::npos);

    ModelSource again;
    again.checkpoint = source.save_checkpoint;
    again.tokenizer = source.save_tokenizer;
    LoadedModel loaded = load_model(again, Config{}, 9, 5, 5);
    CHECK(loaded.prompt == original.prompt);  // the fixed prompt: same seed, same vocabulary
    REQUIRE(loaded.tokenizer.has_value());
    CHECK(loaded.tokenizer->vocab_size() == c.vocab_size);
    Transformer same(c, 9);
    CHECK(logits_after(loaded.model, loaded.prompt) == logits_after(same, loaded.prompt));

    // A vocabulary too small for byte tokens has no byte-level tokenizer.
    Config tiny = test::tiny_config();
    const LoadedModel small = load_model(ModelSource{}, tiny, 1, 3, 3);
    ModelSource save_small;
    save_small.save_tokenizer = dir.file("small.bin");
    CHECK_THROWS_AS(save_model_files(save_small, small), UsageError);
}

TEST_CASE("a checkpoint path that is not a regular file is refused at once") {
    TempDir dir;
    expect_error([&] { read_checkpoint_config("/dev/zero"); }, "/dev/zero",
                 "a character device, not a regular file");
    const std::string fifo = dir.file("fifo.bin");
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    expect_error([&] { read_checkpoint(fifo); }, fifo, "a FIFO (named pipe), not a regular file");
    std::filesystem::create_symlink(dir.file("loop.bin"), dir.file("loop.bin"));
    expect_error([&] { read_checkpoint(dir.file("loop.bin")); }, dir.file("loop.bin"),
                 "Too many levels of symbolic links");
    const std::string long_name = dir.file(std::string(300, 'm'));
    expect_error([&] { read_checkpoint(long_name); }, long_name, "File name too long");
}

TEST_CASE("load_model names the flag of a file it cannot read") {
    TempDir dir;
    ModelSource source;
    source.checkpoint = "/dev/zero";
    CHECK_THROWS_WITH_AS(load_model(source, Config{}, 1, 4, 4),
                         "--checkpoint /dev/zero: a character device, not a regular file",
                         UsageError);
    source = ModelSource{};
    source.tokenizer = dir.path.string();
    CHECK_THROWS_WITH_AS(
        load_model(source, small_text_model(), 1, 4, 4),
        ("--tokenizer " + dir.path.string() + ": a folder, not a regular file").c_str(),
        UsageError);
}

TEST_CASE("a prompt too long for the context is refused before it is encoded") {
    TempDir dir;
    const Config c = small_text_model();  // max_seq 40
    ModelSource source;
    source.tokenizer = dir.file("tokenizer.bin");
    write_tokenizer(source.tokenizer, byte_level_tokenizer(c.vocab_size));
    source.prompt = std::string(120'000, 'a');
    // Encoding 120,000 characters takes minutes; the bound takes nothing.
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS(load_model(source, c, 1, 4, 4),
                         doctest::Contains("--prompt: its 120,000 bytes make at least"),
                         UsageError);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
    // Near the bound, the encoded length decides, with the same flags named.
    source.prompt = "hello world";
    CHECK_THROWS_WITH_AS(
        load_model(source, c, 1, 4, 38),
        doctest::Contains("the prompt's 13 tokens + --answer-len 38 - 1 = 50 exceeds"), UsageError);
}

TEST_CASE("without an answer the context error names no --answer-len") {
    // Chapter 04 decodes from its prompts and has no --answer-len.
    ModelSource source;
    const Config c = small_text_model();
    CHECK_THROWS_WITH_AS(load_model(source, c, 1, 41, 1), "--prompt-len 41 exceeds --max-seq 40",
                         UsageError);
}

TEST_CASE("a checkpoint written over an old one replaces it whole") {
    TempDir dir;
    const Config c = small_text_model();
    const std::string path = dir.file("model.bin");
    write_bytes(path, "an old file");
    write_checkpoint(path, c, random_weights(c, 4));
    CHECK(std::filesystem::file_size(path) == checkpoint_bytes(c));
    CHECK(read_checkpoint_config(path).describe() == c.describe());
    CHECK_THROWS_WITH_AS(write_checkpoint(dir.file("none/model.bin"), c, random_weights(c, 4)),
                         doctest::Contains("No such file or directory"), std::runtime_error);
    CHECK_FALSE(std::filesystem::exists(dir.file("none")));
}
