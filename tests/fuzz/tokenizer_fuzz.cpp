// libFuzzer: llama2.c tokenizer files (common/real_weights/tokenizer.h).
// The first two bytes choose the model's vocabulary size (1..4096), the
// rest is the file. A tokenizer that reads is then used: the file's first
// bytes encoded, and every token decoded and made printable.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "../../common/real_weights/tokenizer.h"
#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const int vocab_size = 1 + ((data[0] | data[1] << 8) % 4096);
    const std::string& path = kv::fuzz::as_file(data + 2, size - 2);
    try {
        const kv::Tokenizer t = kv::read_tokenizer(path, vocab_size);
        if (t.vocab_size() != vocab_size) __builtin_trap();
        const std::string_view text(reinterpret_cast<const char*>(data),
                                    std::min<std::size_t>(size, 64));
        try {
            const std::vector<int> tokens = t.encode(text, true, true);
            if (tokens.size() < t.fewest_tokens(text, true, true)) __builtin_trap();
            std::string out;
            int prev = -1;
            for (int token : tokens) {
                out += t.decode(prev, token);
                prev = token;
            }
            (void)kv::display_text(out);
        } catch (const std::runtime_error&) {  // a text byte without its byte token
        }
    } catch (const std::runtime_error&) {
    } catch (const std::invalid_argument&) {
    }
    return 0;
}
