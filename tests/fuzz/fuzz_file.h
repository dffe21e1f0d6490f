// What the file readers' harnesses share: the fuzzer's bytes as a file on
// disk (the readers take a path), one per process, rewritten each run.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

namespace kv::fuzz {

// The file, removed when the fuzzer exits.
struct InputPath {
    std::string path = "/tmp/kv_book_fuzz_" + std::to_string(getpid()) + ".bin";
    ~InputPath() { unlink(path.c_str()); }
};

inline const std::string& input_path() {
    static const InputPath file;
    return file.path;
}

inline const std::string& as_file(const std::uint8_t* data, std::size_t size) {
    std::ofstream out(input_path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
    return input_path();
}

}  // namespace kv::fuzz
