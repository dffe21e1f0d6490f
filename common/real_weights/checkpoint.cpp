#include "checkpoint.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <span>
#include <stdexcept>

#include "../core/checked.h"
#include "../core/kernels.h"  // RopeTable
#include "../kit/files.h"
#include "../kit/program.h"  // Allocating
#include "../kit/report.h"

namespace kv {

static_assert(std::numeric_limits<float>::is_iec559 && sizeof(float) == 4,
              "the checkpoint's numbers are IEEE-754 float32, and so must ours be");

// ------------------------------------------------------ little-endian files

std::int32_t le_int32(const unsigned char* b) {
    return std::bit_cast<std::int32_t>(std::uint32_t(b[0]) | std::uint32_t(b[1]) << 8 |
                                       std::uint32_t(b[2]) << 16 | std::uint32_t(b[3]) << 24);
}

float le_float32(const unsigned char* bytes) {
    return std::bit_cast<float>(le_int32(bytes));
}

void append_le_int32(std::string& out, std::int32_t value) {
    const auto u = std::bit_cast<std::uint32_t>(value);
    for (int shift = 0; shift < 32; shift += 8) out += static_cast<char>((u >> shift) & 0xFF);
}

void append_le_float32(std::string& out, float value) {
    append_le_int32(out, std::bit_cast<std::int32_t>(value));
}

// ------------------------------------------------------------------ header

namespace {

constexpr int header_ints = 7;
constexpr std::uint64_t header_bytes = header_ints * 4;

// llama2.c's newer exports (version 1 and 2) begin with this magic number,
// the bytes "24ka", where a legacy file has dim.
constexpr std::int64_t versioned_magic = 0x616b3432;

struct HeaderField {
    const char* name;
    std::int64_t max;  // the same limits as the model-shape flags (model_flags.cpp)
    int Config::*field;
};
constexpr std::array<HeaderField, header_ints> header_fields = {{
    {"dim", 1 << 16, &Config::dim},
    {"hidden_dim", 1 << 18, &Config::ffn_dim},
    {"n_layers", 1024, &Config::n_layers},
    {"n_heads", 1024, &Config::n_heads},
    {"n_kv_heads", 1024, &Config::n_kv_heads},
    {"vocab_size", 1 << 20, &Config::vocab_size},  // written negative: an output table follows
    {"seq_len", 1 << 20, &Config::max_seq},
}};

[[noreturn]] void fail(const std::string& path, const std::string& message) {
    throw std::runtime_error(file_label("checkpoint", path) + ": " + message);
}

std::string field_text(int i, std::int64_t value) {
    return std::string("header value ") + header_fields[i].name + " = " + std::to_string(value);
}

// Every header number is checked here, with the name llama2.c gives it,
// before Config::validate() sees it (whose messages name the flags).
Config config_from_header(const std::string& path, const unsigned char* bytes) {
    if (le_int32(bytes) == versioned_magic)
        fail(path,
             "starts with the magic number of llama2.c's version 1/2 exports; this reader takes "
             "the legacy version 0 format (llama2.c's export.py --version 0)");
    Config c;
    for (int i = 0; i < header_ints; ++i) {
        const std::int64_t raw = le_int32(bytes + 4 * i);
        const std::int64_t value = i == 5 ? std::abs(raw) : raw;  // vocab_size: its size is |v|
        if (value <= 0)
            fail(path, field_text(i, raw) + (i == 5 ? " must not be zero" : " must be positive"));
        if (value > header_fields[i].max)
            fail(path, field_text(i, raw) + " is absurd (this reader allows at most " +
                           std::to_string(header_fields[i].max) +
                           "): is this a llama2.c version 0 checkpoint?");
        c.*header_fields[i].field = static_cast<int>(value);
        if (i == 5) c.shared_output = raw > 0;
    }
    if (c.dim % c.n_heads != 0)
        fail(path,
             field_text(0, c.dim) + " is not divisible by n_heads = " + std::to_string(c.n_heads));
    if (c.n_heads % c.n_kv_heads != 0)
        fail(path, field_text(3, c.n_heads) +
                       " is not divisible by n_kv_heads = " + std::to_string(c.n_kv_heads));
    if (c.head_size() % 2 != 0)
        fail(path, "head size dim / n_heads = " + std::to_string(c.head_size()) +
                       " is odd, but RoPE rotates pairs of numbers");
    c.validate();  // cannot fail after the checks above; kept as a backstop
    return c;
}

// Opens the checkpoint, checks its size against its header, and leaves the
// file at the first weight.
Config open_checkpoint(const std::string& path, InputFile& in) {
    const std::uint64_t size = in.size();
    if (size < header_bytes)
        fail(path, "the file has " + std::to_string(size) + " bytes, too few for the " +
                       std::to_string(header_bytes) + "-byte header");
    std::array<unsigned char, header_bytes> header{};
    if (!in.read(header.data(), header.size())) fail(path, "the file ended inside the header");
    const Config config = config_from_header(path, header.data());
    const std::uint64_t need = checkpoint_bytes(config);
    if (size < need)
        fail(path, "the header's shape needs " + with_commas(need) + " bytes but the file has " +
                       with_commas(size) + ": truncated?");
    if (size > need)
        fail(path, "the file has " + with_commas(size) + " bytes, " + with_commas(size - need) +
                       " more than the header's shape needs: not a llama2.c version 0 checkpoint?");
    return config;
}

constexpr std::uint64_t any_size = std::numeric_limits<std::uint64_t>::max();  // the header says

}  // namespace

// parameter_count() counts the stored tensors; the two RoPE tables add
// seq_len * head_size / 2 numbers each.
std::uint64_t checkpoint_bytes(const Config& c) {
    const char* what = "checkpoint size";
    const std::uint64_t rope =
        checked_mul(std::uint64_t(c.max_seq), std::uint64_t(c.head_size()), what);
    const std::uint64_t floats = checked_add(c.parameter_count(), rope, what);
    return checked_add(header_bytes, checked_mul(floats, sizeof(float), what), what);
}

Config read_checkpoint_config(const std::string& path) {
    InputFile in(path, "checkpoint", any_size);
    return open_checkpoint(path, in);
}

// ------------------------------------------------------------- the tensors

namespace {

// A tensor's numbers: a matrix's, or a norm's vector.
template <class T>
auto numbers(T& t) {
    if constexpr (requires { t.rows; })
        return std::span(t.data);
    else
        return std::span(t);
}

// ------------------------------------------------------------------ reading

// Reads one float32 tensor, a block of bytes at a time.
void read_tensor(const std::string& path, InputFile& in, std::span<float> out,
                 const std::string& tensor) {
    constexpr std::size_t block = 1 << 16;  // numbers per read
    std::vector<unsigned char> bytes(std::min(out.size(), block) * 4);
    for (std::size_t start = 0; start < out.size(); start += block) {
        const std::size_t n = std::min(block, out.size() - start);
        if (!in.read(bytes.data(), n * 4)) fail(path, "the file ended while reading " + tensor);
        for (std::size_t i = 0; i < n; ++i) {
            const float value = le_float32(bytes.data() + 4 * i);
            // A NaN would spread through every later logit and print as garbage text.
            if (!std::isfinite(value))
                fail(path, tensor + " holds a non-finite number (" + std::to_string(value) +
                               ") at index " + std::to_string(start + i));
            out[start + i] = value;
        }
    }
}

}  // namespace

Checkpoint read_checkpoint(const std::string& path) {
    InputFile file(path, "checkpoint", any_size);  // one file, opened once
    Checkpoint result{open_checkpoint(path, file), {}};
    const Config& c = result.config;
    Weights& w = result.weights;
    {
        const Allocating note("the weights of " + file_label("checkpoint", path) + " (" +
                              format_bytes(c.weight_bytes()) + ")");
        w = empty_weights(c);
    }
    for_each_tensor(c, w, [&](const std::string& name, auto& t, int, int) {
        read_tensor(path, file, numbers(t), name);
    });
    if (!file.skip(std::uint64_t(c.max_seq) * std::uint64_t(c.head_size()) * 4))  // cos and sin
        fail(path, "the file ended while skipping the RoPE tables");
    if (c.shared_output) {
        // The Transformer reads its own output matrix, so it gets a copy.
        const Allocating note("a copy of the embedding table of " + file_label("checkpoint", path));
        w.output = w.token_embedding;
    } else {
        read_tensor(path, file, w.output.data, "the output projection");
    }
    return result;
}

// ------------------------------------------------------------------ writing

namespace {

void check_shapes(const Config& c, const Weights& w) {
    auto check = [](const std::string& name, const auto& t, int rows, int cols) {
        auto text = [](auto r, auto c) { return std::to_string(r) + "x" + std::to_string(c); };
        std::string is = text(1, numbers(t).size());  // a norm: one row
        if constexpr (requires { t.rows; }) is = text(t.rows, t.cols);
        if (is != text(rows, cols) || numbers(t).size() != std::size_t(rows) * std::size_t(cols))
            throw std::invalid_argument("write_checkpoint: " + name + " is " + is +
                                        ", the config says " + text(rows, cols));
    };
    if (w.layers.size() != std::size_t(c.n_layers))
        throw std::invalid_argument("write_checkpoint: " + std::to_string(w.layers.size()) +
                                    " layers, the config says " + std::to_string(c.n_layers));
    for_each_tensor(c, w, check);
    check("the output projection", w.output, c.vocab_size, c.dim);
    if (c.shared_output && w.output.data != w.token_embedding.data)
        throw std::invalid_argument(
            "write_checkpoint: config.shared_output is set but the output projection differs "
            "from the embedding table; the file would lose it");
}

}  // namespace

void write_checkpoint(const std::string& path, const Config& c, const Weights& w,
                      std::string_view what) {
    c.validate();
    check_shapes(c, w);
    OutputFile out(path, what);  // replaced whole, or left as it was
    std::string buffer;          // written out a megabyte at a time
    for (const HeaderField& f : header_fields)
        append_le_int32(buffer, f.field == &Config::vocab_size && !c.shared_output ? -c.vocab_size
                                                                                   : c.*f.field);
    auto floats = [&](std::span<const float> values) {
        for (float v : values) {
            append_le_float32(buffer, v);
            if (buffer.size() < (1 << 20)) continue;
            out.write(buffer);
            buffer.clear();
        }
    };
    for_each_tensor(c, w, [&](const std::string&, const auto& t, int, int) { floats(numbers(t)); });
    // The RoPE tables llama2.c's exporter writes, which readers skip: the
    // file is what other tools of that format expect.
    const RopeTable rope(c.head_size(), c.max_seq);
    floats(rope.cosines());
    floats(rope.sines());
    if (!c.shared_output) floats(w.output.data);
    out.write(buffer);
    out.commit();
}

}  // namespace kv
