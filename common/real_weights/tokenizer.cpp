#include "tokenizer.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "../core/checked.h"
#include "../kit/files.h"
#include "checkpoint.h"  // little-endian numbers and file sizes

namespace kv {

namespace {

// "<0x41>" -> 0x41; anything else -> -1.
int byte_of_piece(std::string_view piece) {
    if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
    unsigned byte = 0;
    const auto [end, error] = std::from_chars(piece.data() + 3, piece.data() + 5, byte, 16);
    return error == std::errc() && end == piece.data() + 5 ? int(byte) : -1;
}

std::string byte_piece(int byte) {
    const char* digits = "0123456789ABCDEF";
    return std::string("<0x") + digits[byte / 16] + digits[byte % 16] + ">";
}

constexpr int longest_allowed_token = 1024;  // Llama 2's longest is 27 bytes

[[noreturn]] void fail(const std::string& path, const std::string& message) {
    throw std::runtime_error(file_label("tokenizer", path) + ": " + message);
}

}  // namespace

// --------------------------------------------------------------- the tokens

Tokenizer::Tokenizer(std::vector<std::string> pieces, std::vector<float> scores)
    : pieces_(std::move(pieces)), scores_(std::move(scores)) {
    if (pieces_.empty() || pieces_.size() != scores_.size())
        throw std::invalid_argument("Tokenizer: " + std::to_string(pieces_.size()) +
                                    " pieces and " + std::to_string(scores_.size()) + " scores");
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
        if (pieces_[i].empty())
            throw std::invalid_argument("Tokenizer: token " + std::to_string(i) + " is empty");
        lookup_.emplace(pieces_[i], static_cast<int>(i));  // keeps the first of duplicates
        max_token_length_ = std::max(max_token_length_, static_cast<int>(pieces_[i].size()));
    }
}

const std::string& Tokenizer::piece(int token) const {
    if (token < 0 || token >= vocab_size())
        throw std::out_of_range("token " + std::to_string(token) + " outside the vocabulary 0.." +
                                std::to_string(vocab_size() - 1));
    return pieces_[token];
}

std::string Tokenizer::decode(int prev, int token) const {
    std::string_view text = piece(token);
    if (prev == bos && text.front() == ' ') text.remove_prefix(1);
    const int byte = byte_of_piece(text);
    if (byte >= 0) return std::string(1, static_cast<char>(byte));
    return std::string(text);
}

int Tokenizer::byte_token(unsigned char byte) const {
    const int token = first_byte_token + byte;
    // A tokenizer without byte tokens would silently get the wrong ids here.
    if (token >= vocab_size() || byte_of_piece(pieces_[token]) != byte)
        throw std::runtime_error("tokenizer: no token for the byte " + byte_piece(byte) +
                                 " (token " + std::to_string(token) + " should be it)");
    return token;
}

std::vector<int> Tokenizer::encode(std::string_view text, bool add_bos, bool add_eos) const {
    std::vector<int> tokens;
    if (add_bos) tokens.push_back(bos);
    const std::size_t first = tokens.size();  // merges never touch BOS
    auto add_character = [&](std::string_view character) {
        const auto found = lookup_.find(std::string(character));
        if (found != lookup_.end()) {
            tokens.push_back(found->second);
        } else {
            for (unsigned char b : character) tokens.push_back(byte_token(b));
        }
    };

    // The "dummy prefix": a vocabulary of byte tokens alone has no space
    // token, and its byte token would not be dropped after BOS by decode().
    if (!text.empty() && lookup_.contains(" ")) add_character(" ");
    for (std::size_t i = 0; i < text.size();) {
        // A UTF-8 character: a lead byte, then continuation bytes 10xxxxxx, four bytes at most.
        std::size_t n = 1;
        while (n < 4 && i + n < text.size() &&
               (static_cast<unsigned char>(text[i + n]) & 0xC0) == 0x80)
            ++n;
        add_character(text.substr(i, n));
        i += n;
    }

    // Merge the best-scoring adjacent pair until no pair makes a token.
    for (;;) {
        std::size_t best = 0;
        int best_token = -1;
        for (std::size_t i = first; i + 1 < tokens.size(); ++i) {
            const auto found = lookup_.find(pieces_[tokens[i]] + pieces_[tokens[i + 1]]);
            if (found == lookup_.end()) continue;
            if (best_token < 0 || scores_[found->second] > scores_[best_token]) {
                best = i;  // on a tie the leftmost pair wins
                best_token = found->second;
            }
        }
        if (best_token < 0) break;
        tokens[best] = best_token;
        tokens.erase(tokens.begin() + std::ptrdiff_t(best) + 1);
    }
    if (add_eos) tokens.push_back(eos);
    return tokens;
}

std::uint64_t Tokenizer::fewest_tokens(std::string_view text, bool add_bos, bool add_eos) const {
    const std::uint64_t covered = text.size() + (!text.empty() && lookup_.contains(" ") ? 1 : 0);
    const std::uint64_t longest = std::uint64_t(max_token_length_);
    return (covered + longest - 1) / longest + (add_bos ? 1 : 0) + (add_eos ? 1 : 0);
}

// ---------------------------------------------------------------- the file

Tokenizer read_tokenizer(const std::string& path, int vocab_size) {
    if (vocab_size <= 0)
        throw std::invalid_argument("read_tokenizer: vocab_size " + std::to_string(vocab_size));
    InputFile in(path, "tokenizer", std::numeric_limits<std::uint64_t>::max());
    const std::uint64_t size = in.size();
    unsigned char header[4];
    if (size < sizeof header || !in.read(header, sizeof header))
        fail(path,
             "the file has " + std::to_string(size) + " bytes, too few for its 4-byte header");
    const std::int32_t max_length = le_int32(header);
    if (max_length <= 0 || max_length > longest_allowed_token)
        fail(path, "max_token_length = " + std::to_string(max_length) + " is not in 1.." +
                       std::to_string(longest_allowed_token));
    // The most bytes vocab_size tokens can take, checked before reading them.
    const std::uint64_t most = checked_add(
        sizeof header,
        checked_mul(std::uint64_t(vocab_size), 8 + std::uint64_t(max_length), "size"), "size");
    if (size > most)
        fail(path, "the file has " + std::to_string(size) + " bytes, more than " +
                       std::to_string(vocab_size) +
                       " tokens can fill: made for a larger vocabulary than the model's?");

    std::string bytes(size - sizeof header, '\0');
    if (!in.read(bytes.data(), bytes.size())) fail(path, "the file ended while it was read");
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
    std::vector<std::string> pieces;
    std::vector<float> scores;
    std::size_t at = 0;
    for (int token = 0; token < vocab_size; ++token) {
        if (bytes.size() - at < 8)
            fail(path, "the file ends after " + std::to_string(token) +
                           " tokens, but the model's vocabulary has " + std::to_string(vocab_size) +
                           ": truncated, or made for another model?");
        const float score = le_float32(data + at);
        const std::int32_t length = le_int32(data + at + 4);
        at += 8;
        if (!std::isfinite(score))
            fail(path, "token " + std::to_string(token) + " has a non-finite score");
        if (length <= 0 || length > max_length)
            fail(path, "token " + std::to_string(token) + " has length " + std::to_string(length) +
                           ", not in 1..max_token_length = " + std::to_string(max_length));
        if (bytes.size() - at < std::size_t(length))
            fail(path, "the file ends inside token " + std::to_string(token) + ": truncated?");
        pieces.push_back(bytes.substr(at, std::size_t(length)));
        scores.push_back(score);
        at += std::size_t(length);
    }
    if (at != bytes.size())
        fail(path, std::to_string(bytes.size() - at) + " bytes are left after the model's " +
                       std::to_string(vocab_size) + " tokens: made for a larger vocabulary?");
    return Tokenizer(std::move(pieces), std::move(scores));
}

void write_tokenizer(const std::string& path, const Tokenizer& tokenizer, std::string_view what) {
    std::string bytes;
    append_le_int32(bytes, tokenizer.max_token_length());
    for (int token = 0; token < tokenizer.vocab_size(); ++token) {
        const std::string& piece = tokenizer.piece(token);
        append_le_float32(bytes, tokenizer.score(token));
        append_le_int32(bytes, static_cast<std::int32_t>(piece.size()));
        bytes += piece;
    }
    OutputFile out(path, what);  // replaced whole, or left as it was
    out.write(bytes);
    out.commit();
}

// ------------------------------------------------- a tokenizer for random models

Tokenizer byte_level_tokenizer(int vocab_size) {
    const int specials_and_bytes = Tokenizer::first_byte_token + 256;
    if (vocab_size < specials_and_bytes)
        throw std::invalid_argument("a byte-level tokenizer needs a vocabulary of at least " +
                                    std::to_string(specials_and_bytes) + " tokens, not " +
                                    std::to_string(vocab_size));
    // The same special pieces as llama2.c's tokenizer.bin.
    std::vector<std::string> pieces = {"<unk>", "\n<s>\n", "\n</s>\n"};
    std::vector<float> scores(3, 0.0f);
    auto add = [&](std::string piece, float score) {
        if (int(pieces.size()) >= vocab_size) return;
        pieces.push_back(std::move(piece));
        scores.push_back(score);
    };
    for (int b = 0; b < 256; ++b) add(byte_piece(b), 0.0f);
    for (char c = ' '; c <= '~'; ++c) add(std::string(1, c), 0.0f);
    // Longer strings merge later (lower score), as in a trained tokenizer.
    const std::string letters = " abcdefghijklmnopqrstuvwxyz";
    for (int length = 2; int(pieces.size()) < vocab_size; ++length) {
        std::uint64_t count = 1;
        for (int k = 0; k < length; ++k) count *= letters.size();
        for (std::uint64_t n = 0; n < count && int(pieces.size()) < vocab_size; ++n) {
            std::string piece(length, ' ');  // the n-th string of `length` letters
            std::uint64_t rest = n;
            for (int k = length - 1; k >= 0; --k, rest /= letters.size())
                piece[k] = letters[rest % letters.size()];
            add(piece, 1.0f - float(length));
        }
    }
    return Tokenizer(std::move(pieces), std::move(scores));
}

// ------------------------------------------------------------- safe output

std::string display_text(std::string_view bytes) {
    const std::string replacement = "\xEF\xBF\xBD";  // U+FFFD
    std::string out;
    for (std::size_t i = 0; i < bytes.size();) {
        const unsigned char lead = static_cast<unsigned char>(bytes[i]);
        if (lead < 0x80) {
            if (lead >= 0x20 ? lead != 0x7F : lead == '\n' || lead == '\t') out += char(lead);
            ++i;
            continue;
        }
        std::size_t n = 0;                      // bytes in this character
        unsigned char low = 0x80, high = 0xBF;  // the range allowed for its second byte
        if (lead >= 0xC2 && lead <= 0xDF) {
            n = 2;
        } else if (lead >= 0xE0 && lead <= 0xEF) {
            n = 3;
            if (lead == 0xE0) low = 0xA0;   // shorter forms are overlong
            if (lead == 0xED) high = 0x9F;  // surrogates are not characters
        } else if (lead >= 0xF0 && lead <= 0xF4) {
            n = 4;
            if (lead == 0xF0) low = 0x90;   // overlong
            if (lead == 0xF4) high = 0x8F;  // past U+10FFFF
        }
        bool valid = n != 0 && i + n <= bytes.size();
        for (std::size_t k = 1; valid && k < n; ++k) {
            const unsigned char c = static_cast<unsigned char>(bytes[i + k]);
            valid = k == 1 ? c >= low && c <= high : (c & 0xC0) == 0x80;
        }
        if (!valid) {
            out += replacement;
            ++i;
            continue;
        }
        // U+0080..U+009F are control characters too (some terminals obey them).
        const bool c1_control = lead == 0xC2 && static_cast<unsigned char>(bytes[i + 1]) < 0xA0;
        if (!c1_control) out.append(bytes.substr(i, n));
        i += n;
    }
    return out;
}

}  // namespace kv
