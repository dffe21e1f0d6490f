// libFuzzer: llama2.c checkpoints (common/real_weights/checkpoint.h). Any
// bytes must give a model or one runtime_error, never a crash, a hang or an
// allocation the file's own size does not justify.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "../../common/real_weights/checkpoint.h"
#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& path = kv::fuzz::as_file(data, size);
    try {
        const kv::Checkpoint c = kv::read_checkpoint(path);
        if (c.weights.layers.size() != std::size_t(c.config.n_layers)) __builtin_trap();
    } catch (const std::runtime_error&) {
    } catch (const std::invalid_argument&) {
    }
    return 0;
}
