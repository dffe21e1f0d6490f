// Text in and out: the byte-pair tokenizer that goes with llama2.c's
// checkpoints (its tokenizer.bin, made from Llama 2's SentencePiece model).
//
// The file holds one int32 (the longest token's length in bytes), then for
// each of the model's vocab_size tokens: a float32 merge score, an int32
// byte length and that many bytes. The count is not stored: the model's
// vocabulary says it, so a tokenizer made for another model is caught by
// its size. Token 0 is <unk>, 1 is BOS, 2 is EOS, and tokens 3..258 are the
// 256 single bytes, "<0x00>" ... "<0xFF>", so any text can be written down.
// File errors are std::runtime_error whose one line starts "tokenizer FILE:".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kv {

class Tokenizer {
  public:
    static constexpr int bos = 1;               // begin of sequence
    static constexpr int eos = 2;               // end of sequence
    static constexpr int first_byte_token = 3;  // the token of byte b is 3 + b

    // pieces[i] is token i's bytes, scores[i] its merge priority (higher
    // first). Throws std::invalid_argument on an empty piece or a mismatch.
    Tokenizer(std::vector<std::string> pieces, std::vector<float> scores);

    int vocab_size() const { return static_cast<int>(pieces_.size()); }
    const std::string& piece(int token) const;
    float score(int token) const { return scores_.at(token); }
    int max_token_length() const { return max_token_length_; }

    // The bytes `token` stands for, after token `prev`: a "<0xHH>" token is
    // that byte, and a piece after BOS loses the leading space encode()
    // added. Throws std::out_of_range outside the vocabulary.
    std::string decode(int prev, int token) const;

    // Byte-pair encoding: a space in front of the text (so a word reads the
    // same at the start as in the middle; if the vocabulary has one), each
    // UTF-8 character its token or its byte tokens; then the adjacent pair
    // whose joined piece scores highest is merged, until no pair joins into
    // a token. BOS and EOS on request.
    std::vector<int> encode(std::string_view text, bool bos, bool eos) const;

    // The fewest tokens encode() can give, from the text's length alone
    // (no token covers more than max_token_length() bytes), so that a text
    // too long for a context is refused before the quadratic merging.
    std::uint64_t fewest_tokens(std::string_view text, bool bos, bool eos) const;

  private:
    int byte_token(unsigned char byte) const;  // 3 + byte, checked to be "<0xHH>"

    std::vector<std::string> pieces_;              // (vocab) each token's bytes
    std::vector<float> scores_;                    // (vocab) merge priority
    std::unordered_map<std::string, int> lookup_;  // piece -> lowest token id with it
    int max_token_length_ = 0;                     // longest piece in bytes
};

// Reads a tokenizer file for a model of `vocab_size` tokens, and writes one
// (a FileError "<what> <path>: <cause>" if it cannot, `what` the flag).
Tokenizer read_tokenizer(const std::string& path, int vocab_size);
void write_tokenizer(const std::string& path, const Tokenizer& tokenizer,
                     std::string_view what = "tokenizer");

// A tokenizer for the book's random models: <unk>, BOS, EOS and the 256
// byte tokens as in Llama 2's, then the printable ASCII characters, then
// strings of two, three, ... letters and spaces until the vocabulary is
// full. Needs vocab_size >= 259.
Tokenizer byte_level_tokenizer(int vocab_size);

// Decoded bytes made safe to print: invalid UTF-8 becomes U+FFFD, and
// control characters (terminal escapes among them) are dropped, except
// newline and tab.
std::string display_text(std::string_view bytes);

}  // namespace kv
