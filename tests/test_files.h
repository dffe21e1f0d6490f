// What the file-reading tests share: a temporary folder per test, and
// little-endian bytes written by hand, independently of the code under test.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace kv::test {

// A folder of its own for one test, removed at the end.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        static int count = 0;
        path = std::filesystem::temp_directory_path() /
               ("kv_book_test_" + std::to_string(getpid()) + "_" + std::to_string(count++));
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string file(const std::string& name) const { return (path / name).string(); }
};

// Little-endian bytes, encoded here independently of the code under test.
struct Bytes {
    std::string data;
    void i32(std::int32_t v) {
        const auto u = static_cast<std::uint32_t>(v);
        for (int k = 0; k < 4; ++k) data += static_cast<char>((u >> (8 * k)) & 0xFF);
    }
    void f32(float f) {
        std::int32_t bits;
        std::memcpy(&bits, &f, 4);
        i32(bits);
    }
    // One tokenizer entry: its merge score, its length and its bytes.
    void token(float score, const std::string& piece) {
        f32(score);
        i32(static_cast<std::int32_t>(piece.size()));
        data += piece;
    }
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
}

}  // namespace kv::test
