// A minimal row-major float matrix: the only container the model needs.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace kv {

struct Matrix {
    int rows = 0;
    int cols = 0;
    std::vector<float> data;  // (rows, cols), row i starts at i * cols

    Matrix() = default;
    Matrix(int rows_, int cols_) : rows(rows_), cols(cols_), data(std::size_t(rows_) * cols_) {}

    // Changes the number of rows, keeping the width; the buffer only grows,
    // so a scratch matrix reused for every forward pass allocates once.
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
