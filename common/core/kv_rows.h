// Where a cache keeps its keys (or its values): rows of one number format,
// a row being one position's key (or value) in one layer. float32 rows are
// plain floats, which the kernels read where they lie; narrower rows are
// bytes (number_format.h), which attention widens before it reads them.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "matrix.h"
#include "number_format.h"

namespace kv {

class KVRows {
  public:
    KVRows() = default;
    // `rows` rows, allocated and zeroed now.
    KVRows(const RowFormat& format, std::size_t rows)
        : format_(format), row_bytes_(format.bytes()) {
        if (format.format == NumberFormat::float32)
            floats_.assign(rows * std::size_t(format.numbers()), 0.0f);
        else
            packed_.assign(rows * row_bytes_, std::byte{0});
    }

    const RowFormat& format() const { return format_; }
    std::uint64_t bytes_allocated() const {
        return floats_.size() * sizeof(float) + packed_.size();
    }

    // A float32 row, where the kernels read it; asking a narrower one throws.
    const float* floats(std::size_t row) const {
        if (!float32())
            throw std::logic_error(std::string("a ") + format_name(format_.format) +
                                   " cache has no float32 rows to point at");
        return floats_.data() + row * std::size_t(format_.numbers());
    }
    // The writable rows: the same lookup, its const cast away (safe: *this is not const here).
    float* floats(std::size_t row) { return const_cast<float*>(std::as_const(*this).floats(row)); }

    // Any format: the row's bytes as stored (format().bytes() of them).
    const std::byte* bytes(std::size_t row) const {
        return float32() ? reinterpret_cast<const std::byte*>(floats(row))
                         : packed_.data() + row * row_bytes_;
    }
    std::byte* bytes(std::size_t row) {
        return const_cast<std::byte*>(std::as_const(*this).bytes(row));
    }

    // Writes one row of numbers(), rounded once to the format.
    void write(std::size_t row, const float* numbers) { narrow_row(format_, numbers, bytes(row)); }

  private:
    bool float32() const { return format_.format == NumberFormat::float32; }

    RowFormat format_;
    std::size_t row_bytes_ = 0;
    AlignedFloats floats_;                                          // float32: (rows, numbers)
    std::vector<std::byte, CacheLineAllocator<std::byte>> packed_;  // narrower: (rows, row_bytes)
};

}  // namespace kv
