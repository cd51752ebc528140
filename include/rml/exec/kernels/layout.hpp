// Layout kernels: every layout op is a strided copy (transpose, slice,
// broadcast_to, concat, pad) or a re-label (reshape).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <optional>

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
    // A transpose of the last two axes, not a broadcast along the last one (source stride 0).
    if (shape.size() >= 2 && src_strides[shape.size() - 2] == 1 && s_inner != 1 && s_inner != 0 && d_inner == 1) {
      run_transposed(ctx, src, dst);
      return;
    }
    // Short rows (an upsampling broadcast copies runs of 2) go two axes at a
    // time, so the per-row bookkeeping is paid once per block of rows.
    const bool blocks = cols < 16 && shape.size() >= 3;
    const std::size_t outer_rank = shape.size() - (blocks ? 2 : 1);
    const std::int64_t block_rows = blocks ? shape[outer_rank] : 1;
    const std::int64_t s_row = blocks ? src_strides[outer_rank] : 0, d_row = blocks ? dst_strides[outer_rank] : 0;
    // A block that writes each of consecutive source elements `cols` times
    // in a row (nearest-neighbour upsampling's inner axes) is one loop.
    const bool repeats = blocks && s_inner == 0 && d_inner == 1 && s_row == 1 && d_row == cols;
    if (outer_rank > kMaxOuterRank) return run_by_division(ctx, src, dst, rows);
    ctx.pool->parallel_for(rows / block_rows, std::max<std::int64_t>(1, 8192 / std::max<std::int64_t>(cols * block_rows, 1)),
                           [&](std::int64_t r0, std::int64_t r1, int) {
      // The index of row (block) r0 once, then an odometer instead of a division per axis per row.
      std::int64_t index[kMaxOuterRank];
      std::int64_t s = src_offset, t = dst_offset, rest = r0;
      for (std::size_t d = outer_rank; d-- > 0;) {
        index[d] = rest % shape[d];
        rest /= shape[d];
        s += index[d] * src_strides[d];
        t += index[d] * dst_strides[d];
      }
      for (std::int64_t row = r0; row < r1; ++row) {
        if (repeats)
          repeat_each(src + 4 * s, dst + 4 * t, block_rows, cols);
        else
          for (std::int64_t i = 0; i < block_rows; ++i)
            copy_row(src + 4 * (s + i * s_row), dst + 4 * (t + i * d_row), cols, s_inner, d_inner);
        for (std::size_t d = outer_rank; d-- > 0;) {
          s += src_strides[d];
          t += dst_strides[d];
          if (++index[d] < shape[d]) break;
          s -= src_strides[d] * shape[d];
          t -= dst_strides[d] * shape[d];
          index[d] = 0;
        }
      }
    });
  }

  /// Axes beyond which a copy falls back to finding every row's start by division.
  static constexpr std::size_t kMaxOuterRank = 16;

  static void copy_row(const std::byte* from, std::byte* to, std::int64_t cols, std::int64_t s_inner,
                       std::int64_t d_inner) {
    if (s_inner == 1 && d_inner == 1) {
      std::memcpy(to, from, 4 * cols);
    } else if (s_inner == 0 && d_inner == 1) {  // a broadcast along the row: one value repeated
      std::uint32_t bits;
      std::memcpy(&bits, from, 4);
      for (std::int64_t c = 0; c < cols; ++c) std::memcpy(to + 4 * c, &bits, 4);
    } else {
      for (std::int64_t c = 0; c < cols; ++c) std::memcpy(to + 4 * c * d_inner, from + 4 * c * s_inner, 4);
    }
  }

  /// to[j * times + c] = from[j] for j < n, c < times (4-byte elements).
  static void repeat_each(const std::byte* from, std::byte* to, std::int64_t n, std::int64_t times) {
    auto element = [&](std::int64_t j) {
      std::uint32_t bits;
      std::memcpy(&bits, from + 4 * j, 4);
      return bits;
    };
    if (times == 2) {  // the usual 2x upsampling: a loop the compiler unrolls and vectorises
      for (std::int64_t j = 0; j < n; ++j) {
        const std::uint32_t pair[2] = {element(j), element(j)};
        std::memcpy(to + 8 * j, pair, 8);
      }
      return;
    }
    for (std::int64_t j = 0; j < n; ++j) {
      const std::uint32_t bits = element(j);
      for (std::int64_t c = 0; c < times; ++c) std::memcpy(to + 4 * (j * times + c), &bits, 4);
    }
  }

  void run_by_division(const RunContext& ctx, const std::byte* src, std::byte* dst, std::int64_t rows) const {
    const std::int64_t cols = shape.back();
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
        copy_row(src + 4 * s, dst + 4 * t, cols, src_strides.back(), dst_strides.back());
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
    // 16 tiles (16384 elements) a task at least: a smaller transpose costs less than a hand-off.
    ctx.pool->parallel_for(outer * row_tiles * col_tiles, 16, [&](std::int64_t t0, std::int64_t t1, int) {
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
    for (const auto& [value, copy] : copies_) {
      // An input computed in place (exec/memory.hpp: concat_inputs_in_place),
      // as one run or rows apart, is there already: only a placed input
      // starts where its copy would go.
      if (ctx.slots[value] == dst + 4 * copy.dst_offset) continue;
      copy.run(ctx, ctx.slots[value], dst);
    }
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
    copies_input_to_output = copy;
  }
  void run(RunContext& ctx) const override {
    if (copy_) {
      // The plan may have computed the input in the output's buffer already.
      if (bytes_ && ctx.slots[out_] != ctx.slots[in_]) std::memcpy(ctx.slots[out_], ctx.slots[in_], bytes_);
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

/// A slice that is one contiguous run of its input: its output is the
/// input's memory from `offset` on (set every run), unless it must be copied
/// (a graph output, a constant's slice).
class SliceViewKernel final : public Kernel {
 public:
  SliceViewKernel(ValueId in, ValueId out, std::int64_t offset) : in_(in), out_(out) {
    aliases_input = true;
    alias_offset = offset;
  }
  void run(RunContext& ctx) const override { ctx.slots[out_] = ctx.slots[in_] + 4 * alias_offset; }
  std::string describe() const override { return "slice (view, no copy)"; }

 private:
  ValueId in_, out_;
};

/// Where a slice starts in its input, if it takes one contiguous run of it:
/// every axis after some axis k whole, axis k a step-1 range, the axes before
/// k a single index each.
inline std::optional<std::int64_t> contiguous_slice_start(const Shape& x, const std::vector<Slice::Range>& ranges) {
  const Shape strides = contiguous_strides(x);
  std::size_t k = x.size();
  auto whole = [&](std::size_t d) {
    return ranges[d].start == 0 && ranges[d].count == x[d] && (ranges[d].step == 1 || x[d] <= 1);
  };
  while (k > 0 && whole(k - 1)) --k;
  std::int64_t start = 0;
  for (std::size_t d = 0; d < x.size(); ++d) {
    if (ranges[d].count == 0) return std::nullopt;  // empty: nothing to view
    if (d < k && ranges[d].count != 1 && !(d + 1 == k && ranges[d].step == 1)) return std::nullopt;
    start += ranges[d].start * strides[d];
  }
  return start;
}

/// Transpose, broadcast_to, slice, concat and pad are strided copies of
/// their inputs into the output (a contiguous slice is a view); reshape re-labels.
template <>
struct KernelFor<Reshape> {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const Reshape&) {
    const ValueId in = node.inputs[0], out = node.outputs[0];
    // A graph output must land in the caller's buffer, and a constant's
    // memory belongs to the model, not the run: both are copied.
    const bool copy = ctx.is_graph_output(out) || ctx.constant(in) != nullptr;
    return std::make_unique<ReshapeKernel>(in, out, static_cast<std::size_t>(element_count(ctx.output_shape(node))) * 4, copy);
  }
};

template <>
struct KernelFor<Transpose> {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const Transpose& op) {
    const Shape& y = ctx.output_shape(node);
    const Shape strides = contiguous_strides(ctx.type(node.inputs[0]).shape);
    StridedCopy copy{y, {}, contiguous_strides(y)};
    for (auto p : op.perm) copy.src_strides.push_back(strides[p]);
    return std::make_unique<CopyKernel>("transpose", node.outputs[0], element_count(y), std::vector{std::pair{node.inputs[0], copy}});
  }
};

template <>
struct KernelFor<BroadcastTo> {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const BroadcastTo&) {
    const Shape& y = ctx.output_shape(node);
    StridedCopy copy{y, broadcast_strides(y, ctx.type(node.inputs[0]).shape), contiguous_strides(y)};
    return std::make_unique<CopyKernel>("broadcast_to", node.outputs[0], element_count(y), std::vector{std::pair{node.inputs[0], copy}});
  }
};

template <>
struct KernelFor<Slice> {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const Slice& op) {
    const Shape& x = ctx.type(node.inputs[0]).shape;
    const Shape& y = ctx.output_shape(node);
    const Shape strides = contiguous_strides(x);
    StridedCopy copy{y, {}, contiguous_strides(y)};
    const auto ranges = op.ranges(x);
    const bool must_copy = ctx.is_graph_output(node.outputs[0]) || ctx.constant(node.inputs[0]) != nullptr;
    if (const auto start = contiguous_slice_start(x, ranges); start && !must_copy)
      return std::make_unique<SliceViewKernel>(node.inputs[0], node.outputs[0], *start);
    for (std::size_t d = 0; d < ranges.size(); ++d) {
      // A step only matters between two taken elements, and then step * stride
      // stays inside the tensor; a lone element's step may be 2^62.
      copy.src_strides.push_back(ranges[d].count > 1 ? ranges[d].step * strides[d] : 0);
      copy.src_offset += ranges[d].start * strides[d];
    }
    return std::make_unique<CopyKernel>("slice", node.outputs[0], element_count(y), std::vector{std::pair{node.inputs[0], copy}});
  }
};

template <>
struct KernelFor<Concat> {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const Concat& op) {
    const Shape& y = ctx.output_shape(node);
    const std::size_t axis = normalize_axis(op.axis, y.size(), "concat");
    const Shape out_strides = contiguous_strides(y);
    std::vector<std::pair<ValueId, StridedCopy>> copies;
    std::int64_t at = 0;
    for (ValueId v : node.inputs) {
      const Shape& x = ctx.type(v).shape;
      copies.emplace_back(v, StridedCopy{x, contiguous_strides(x), out_strides, 0, at * out_strides[axis]});
      at += x[axis];
    }
    return std::make_unique<CopyKernel>("concat", node.outputs[0], element_count(y), std::move(copies));
  }
};

template <>
struct KernelFor<Pad> {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const Pad& op) {
    const TensorType& x = ctx.type(node.inputs[0]);
    const Shape& y = ctx.output_shape(node);
    const Shape out_strides = contiguous_strides(y);
    StridedCopy copy{x.shape, contiguous_strides(x.shape), out_strides};
    for (std::size_t d = 0; d < y.size(); ++d) copy.dst_offset += op.pads[d] * out_strides[d];
    // The fill value's bits in the tensor's own dtype.
    std::uint32_t bits;
    if (x.dtype == DType::f32) {
      const float v = static_cast<float>(op.value);
      std::memcpy(&bits, &v, 4);
    } else {
      const std::int32_t v = static_cast<std::int32_t>(op.value);
      std::memcpy(&bits, &v, 4);
    }
    return std::make_unique<CopyKernel>("pad", node.outputs[0], element_count(y), std::vector{std::pair{node.inputs[0], copy}}, bits);
  }
};

}  // namespace rml::exec
