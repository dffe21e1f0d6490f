// A minimal row-major float matrix: the only container the model needs.
#pragma once

#include <cstddef>
#include <new>
#include <span>
#include <vector>

namespace kv {

// Storage aligned to a 64-byte cache line. The kernels read 16 floats (64
// bytes) at a time; from plain new's 16-byte alignment, three reads in four
// would straddle two lines.
template <class T>
struct CacheLineAllocator {
    using value_type = T;
    static constexpr std::align_val_t kAlignment{64};
    CacheLineAllocator() = default;
    template <class U>
    CacheLineAllocator(const CacheLineAllocator<U>&) {}
    T* allocate(std::size_t n) {
        return static_cast<T*>(::operator new(n * sizeof(T), kAlignment));
    }
    void deallocate(T* p, std::size_t) { ::operator delete(p, kAlignment); }
    template <class U>
    bool operator==(const CacheLineAllocator<U>&) const {
        return true;
    }
};

// A vector of floats whose first element starts a cache line.
using AlignedFloats = std::vector<float, CacheLineAllocator<float>>;

struct Matrix {
    int rows = 0;
    int cols = 0;
    AlignedFloats data;  // (rows, cols), row i starts at i * cols

    Matrix() = default;
    Matrix(int rows_, int cols_) : rows(rows_), cols(cols_), data(std::size_t(rows_) * cols_) {}

    // The buffer only grows: a scratch matrix reused every pass allocates once.
    void resize_rows(int rows_) {
        rows = rows_;
        if (data.size() < std::size_t(rows) * cols) data.resize(std::size_t(rows) * cols);
    }

    float* row(int i) { return data.data() + std::size_t(i) * cols; }
    const float* row(int i) const { return data.data() + std::size_t(i) * cols; }
    std::span<float> row_span(int i) { return {row(i), std::size_t(cols)}; }
    std::span<const float> row_span(int i) const { return {row(i), std::size_t(cols)}; }
    float& at(int i, int j) { return row(i)[j]; }
    float at(int i, int j) const { return row(i)[j]; }
};

}  // namespace kv
