// Layout kernels: every op that only moves elements is a strided copy
// (transpose, slice, broadcast_to, concat, pad), a re-label (reshape) or an
// indexed copy (gather); plus top_k.
#pragma once

#include <algorithm>
#include <cstring>
#include <numeric>

#include "rml/exec/kernel.hpp"

namespace rml::exec {

/// dst[dst_offset + i . dst_strides] = src[src_offset + i . src_strides] for
/// every index i of `shape`; strides in elements of 4 bytes.
struct StridedCopy {
  Shape shape, src_strides, dst_strides;
  std::int64_t src_offset = 0, dst_offset = 0;

  /// Merges axes both sides walk contiguously, for long inner loops.
  void collapse() {
    if (shape.empty()) shape = {1}, src_strides = {0}, dst_strides = {0};
    for (std::size_t d = shape.size(); d-- > 1;) {
      if (src_strides[d - 1] != src_strides[d] * shape[d] || dst_strides[d - 1] != dst_strides[d] * shape[d])
        continue;
      shape[d - 1] *= shape[d];
      shape.erase(shape.begin() + d);
      src_strides.erase(src_strides.begin() + d - 1);
      dst_strides.erase(dst_strides.begin() + d - 1);
    }
  }

  void run(const RunContext& ctx, const std::byte* src, std::byte* dst) const {
    const std::int64_t cols = shape.back();
    std::int64_t rows = 1;
    for (std::size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
    if (rows * cols == 0) return;
    const std::int64_t s_inner = src_strides.back(), d_inner = dst_strides.back();
    if (shape.size() >= 2 && src_strides[shape.size() - 2] == 1 && s_inner != 1 && d_inner == 1) {
      run_transposed(ctx, src, dst);
      return;
    }
    ctx.pool->parallel_for(rows, std::max<std::int64_t>(1, 8192 / std::max<std::int64_t>(cols, 1)),
                           [&](std::int64_t r0, std::int64_t r1, int) {
      for (std::int64_t row = r0; row < r1; ++row) {
        std::int64_t s = src_offset, t = dst_offset, rest = row;
        for (std::size_t d = shape.size() - 1; d-- > 0;) {
          const std::int64_t i = rest % shape[d];
          rest /= shape[d];
          s += i * src_strides[d];
          t += i * dst_strides[d];
        }
        const std::byte* from = src + 4 * s;
        std::byte* to = dst + 4 * t;
        if (s_inner == 1 && d_inner == 1) {
          std::memcpy(to, from, 4 * cols);
        } else {
          for (std::int64_t c = 0; c < cols; ++c) std::memcpy(to + 4 * c * d_inner, from + 4 * c * s_inner, 4);
        }
      }
    });
  }

  /// The last two axes are a transpose (the source walks the second-to-last
  /// axis contiguously): copy in square tiles so both sides stay in cache.
  void run_transposed(const RunContext& ctx, const std::byte* src, std::byte* dst) const {
    constexpr std::int64_t tile = 32;
    const std::size_t r = shape.size();
    const std::int64_t rows = shape[r - 2], cols = shape[r - 1];
    const std::int64_t s_col = src_strides[r - 1], d_row = dst_strides[r - 2];
    std::int64_t outer = 1;
    for (std::size_t d = 0; d + 2 < r; ++d) outer *= shape[d];
    const std::int64_t row_tiles = (rows + tile - 1) / tile, col_tiles = (cols + tile - 1) / tile;
    ctx.pool->parallel_for(outer * row_tiles * col_tiles, 4, [&](std::int64_t t0, std::int64_t t1, int) {
      for (std::int64_t task = t0; task < t1; ++task) {
        std::int64_t rest = task / (row_tiles * col_tiles);
        const std::int64_t tile_index = task % (row_tiles * col_tiles);
        std::int64_t s = src_offset, t = dst_offset;
        for (std::size_t d = r - 2; d-- > 0;) {
          const std::int64_t i = rest % shape[d];
          rest /= shape[d];
          s += i * src_strides[d];
          t += i * dst_strides[d];
        }
        const std::int64_t r0 = (tile_index / col_tiles) * tile, c0 = (tile_index % col_tiles) * tile;
        const std::int64_t r1 = std::min(r0 + tile, rows), c1 = std::min(c0 + tile, cols);
        for (std::int64_t c = c0; c < c1; ++c)
          for (std::int64_t row = r0; row < r1; ++row)
            std::memcpy(dst + 4 * (t + row * d_row + c), src + 4 * (s + row + c * s_col), 4);
      }
    });
  }
};

/// One or more strided copies into one output (several for concat), after
/// an optional fill (pad).
class CopyKernel final : public Kernel {
 public:
  CopyKernel(std::string label, ValueId out, std::int64_t out_elements, std::vector<std::pair<ValueId, StridedCopy>> copies,
             std::optional<std::uint32_t> fill_bits = std::nullopt)
      : label_(std::move(label)), out_(out), out_elements_(out_elements), copies_(std::move(copies)), fill_bits_(fill_bits) {
    for (auto& [value, copy] : copies_) copy.collapse();
  }
  void run(RunContext& ctx) const override {
    std::byte* dst = ctx.slots[out_];
    if (fill_bits_) {
      const std::uint32_t bits = *fill_bits_;
      for (std::int64_t i = 0; i < out_elements_; ++i) std::memcpy(dst + 4 * i, &bits, 4);
    }
    for (const auto& [value, copy] : copies_) copy.run(ctx, ctx.slots[value], dst);
  }
  std::string describe() const override { return label_ + " (strided copy)"; }

 private:
  std::string label_;
  ValueId out_;
  std::int64_t out_elements_;
  std::vector<std::pair<ValueId, StridedCopy>> copies_;
  std::optional<std::uint32_t> fill_bits_;
};

/// A reshape: its output is the input's memory, unless the output must
/// live in a caller's buffer (a graph output), when it is copied.
class ReshapeKernel final : public Kernel {
 public:
  ReshapeKernel(ValueId in, ValueId out, std::size_t bytes, bool copy) : in_(in), out_(out), bytes_(bytes), copy_(copy) {
    aliases_input = !copy;
  }
  void run(RunContext& ctx) const override {
    if (copy_) {
      if (bytes_) std::memcpy(ctx.slots[out_], ctx.slots[in_], bytes_);
    } else {
      ctx.slots[out_] = ctx.slots[in_];
    }
  }
  std::string describe() const override { return copy_ ? "reshape (copy to output)" : "reshape (alias, no copy)"; }

 private:
  ValueId in_, out_;
  std::size_t bytes_;
  bool copy_;
};

/// take(data, indices, axis) as block copies; indices checked first.
class GatherKernel final : public Kernel {
 public:
  GatherKernel(ValueId data, ValueId indices, ValueId out, const Shape& data_shape, std::int64_t axis,
               std::int64_t index_count)
      : data_(data), indices_(indices), out_(out), count_(index_count), axis_(axis) {
    outer_ = 1;
    for (std::int64_t d = 0; d < axis; ++d) outer_ *= data_shape[d];
    dim_ = data_shape[axis];
    block_ = 4;
    for (std::size_t d = axis + 1; d < data_shape.size(); ++d) block_ *= data_shape[d];
  }
  void run(RunContext& ctx) const override {
    const std::int32_t* idx = ctx.value<const std::int32_t>(indices_);
    for (std::int64_t i = 0; i < count_; ++i)
      if (idx[i] < -dim_ || idx[i] >= dim_)
        fail("gather: index ", idx[i], " at position ", i, " is out of range for axis ", axis_, " of size ", dim_);
    const std::byte* data = ctx.slots[data_];
    std::byte* out = ctx.slots[out_];
    ctx.pool->parallel_for(outer_ * count_, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(block_, 1)),
                           [&](std::int64_t b, std::int64_t e, int) {
      for (std::int64_t task = b; task < e; ++task) {
        const std::int64_t o = task / count_, i = task % count_;
        const std::int64_t index = idx[i] < 0 ? idx[i] + dim_ : idx[i];
        if (block_) std::memcpy(out + task * block_, data + (o * dim_ + index) * block_, block_);
      }
    });
  }
  std::string describe() const override { return "gather (block copy)"; }

 private:
  ValueId data_, indices_, out_;
  std::int64_t count_, axis_, outer_, dim_, block_;
};

/// The k largest per row of the last axis; ties to the lowest index.
class TopKKernel final : public Kernel {
 public:
  TopKKernel(ValueId in, ValueId values, ValueId indices, DType dtype, std::int64_t rows, std::int64_t dim, std::int64_t k)
      : in_(in), values_(values), indices_(indices), dtype_(dtype), rows_(rows), dim_(dim), k_(k) {
    thread_scratch_bytes = static_cast<std::size_t>(dim) * 4;
  }
  void run(RunContext& ctx) const override {
    visit_dtype(dtype_, [&](auto zero) {
      using T = decltype(zero);
      const T* x = ctx.value<const T>(in_);
      T* values = ctx.value<T>(values_);
      std::int32_t* indices = ctx.value<std::int32_t>(indices_);
      ctx.pool->parallel_for(rows_, 1, [&](std::int64_t r0, std::int64_t r1, int t) {
        std::int32_t* order = ctx.scratch_of<std::int32_t>(t);
        for (std::int64_t r = r0; r < r1; ++r) {
          const T* row = x + r * dim_;
          std::iota(order, order + dim_, 0);
          // A total order: larger first, NaN largest, then lower index.
          auto before = [&](std::int32_t a, std::int32_t b) {
            const T va = row[a], vb = row[b];
            const bool na = va != va, nb = vb != vb;
            if (na != nb) return na;
            if (!na && va != vb) return va > vb;
            return a < b;
          };
          std::partial_sort(order, order + k_, order + dim_, before);
          for (std::int64_t j = 0; j < k_; ++j) {
            values[r * k_ + j] = row[order[j]];
            indices[r * k_ + j] = order[j];
          }
        }
      });
    });
  }
  std::string describe() const override { return "top_k (partial sort per row)"; }

 private:
  ValueId in_, values_, indices_;
  DType dtype_;
  std::int64_t rows_, dim_, k_;
};

}  // namespace rml::exec
