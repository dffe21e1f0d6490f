// libFuzzer: chapter 06's reader of the chapters' saved JSON
// (chapters/06_closing_table/saved_results.h). Any text must parse or give
// one runtime_error; a number it hands out is finite.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "../../common/kit/saved_results.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const kv::SavedResults r = kv::SavedResults::parse("fuzz.json", text);
        for (const char* key : {"a", "naive_answer_ms", "", "x"}) {
            try {
                if (!std::isfinite(r.number(key))) __builtin_trap();
                if (!(r.positive_number(key) > 0)) __builtin_trap();
            } catch (const std::runtime_error&) {
            }
        }
    } catch (const std::runtime_error&) {
    }
    return 0;
}
