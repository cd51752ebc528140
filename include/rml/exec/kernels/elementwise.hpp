// Elementwise ops run as groups: one pass over the output, block by block,
// every op of a fused chain applied to a block while it is in cache. Inputs
// ("leaves") broadcast NumPy-style through per-dimension strides, and a slice
// only the group reads is read in place (an offset and its input's strides). Unfused
// execution is the same machinery with one op per group.
#pragma once

#include <cmath>
#include <cstring>
#include <sstream>
#include <string_view>

#include "rml/exec/kernel.hpp"
#include "rml/exec/simd_math.hpp"

namespace rml::exec {

/// f32 maths for the executor's scalar block loops. Ops whose reference computes
/// in double get an f32 formulation here (within 1e-5 of the reference); the
/// rest reuse the op's own `apply`, so integer wrap-around and NaN rules are
/// shared. (exp, tanh, sigmoid, erf, log, sin and cos have vectorised blocks instead, below.)
template <class Op>
struct FastMath {
  template <class... T>
  static auto apply(T... x) { return Op::apply(x...); }
};
template <> struct FastMath<Sqrt> { static float apply(float x) { return std::sqrt(x); } };
template <> struct FastMath<Rsqrt> { static float apply(float x) { return 1.0f / std::sqrt(x); } };
template <> struct FastMath<Pow> { static float apply(float a, float b) { return std::pow(a, b); } };

/// A block function: out[0:n] = op(args[0][0:n], ...).
using BlockFn = void (*)(const void* const* args, void* out, std::int64_t n);

namespace block {

template <class Op, class T>
void unary(const void* const* a, void* out, std::int64_t n) {
  const T* x = static_cast<const T*>(a[0]);
  T* y = static_cast<T*>(out);
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(FastMath<Op>::apply(x[i]));
}
template <class Op, class T>
void binary(const void* const* a, void* out, std::int64_t n) {
  const T* x = static_cast<const T*>(a[0]);
  const T* z = static_cast<const T*>(a[1]);
  T* y = static_cast<T*>(out);
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(FastMath<Op>::apply(x[i], z[i]));
}
template <class Op, class T>
void compare(const void* const* a, void* out, std::int64_t n) {
  const T* x = static_cast<const T*>(a[0]);
  const T* z = static_cast<const T*>(a[1]);
  float* y = static_cast<float*>(out);
  for (std::int64_t i = 0; i < n; ++i) y[i] = Op::apply(x[i], z[i]) ? 1.0f : 0.0f;
}
template <class C, class T>
void select(const void* const* a, void* out, std::int64_t n) {
  const C* c = static_cast<const C*>(a[0]);
  const T* x = static_cast<const T*>(a[1]);
  const T* z = static_cast<const T*>(a[2]);
  T* y = static_cast<T*>(out);
  for (std::int64_t i = 0; i < n; ++i) y[i] = c[i] != C(0) ? x[i] : z[i];
}
template <class From, class To>
void cast(const void* const* a, void* out, std::int64_t n) {
  const From* x = static_cast<const From*>(a[0]);
  To* y = static_cast<To*>(out);
  for (std::int64_t i = 0; i < n; ++i) y[i] = Cast::apply<To>(x[i]);
}
/// An f32 function vectorised in simd_math.hpp (exp, tanh, sigmoid, erf, the GELUs, relu).
template <void (*Vectorised)(const float*, float*, std::int64_t)>
void f32(const void* const* a, void* out, std::int64_t n) {
  Vectorised(static_cast<const float*>(a[0]), static_cast<float*>(out), n);
}
/// f32 arithmetic of two operands, vectorised in simd_math.hpp.
template <simd::Arithmetic F>
void f32_arithmetic(const void* const* a, void* out, std::int64_t n) {
  simd::block<F>(static_cast<const float*>(a[0]), static_cast<const float*>(a[1]), static_cast<float*>(out), n);
}

}  // namespace block

/// The block function of an elementwise op, for its input dtypes:
///   template <> struct BlockFor<Op> { static BlockFn function(const Op&, const Types& inputs); };
/// A polynomial-evaluated function (exp, tanh, GELU, ...) also states
/// `static constexpr int cost = kTranscendentalCost`, its time per element
/// relative to an add, so small groups of them are still split across threads.
/// The unary, binary and comparison families get theirs here; any other
/// elementwise op must declare its own (exec/dispatch.hpp checks).
template <class Op>
struct BlockFor;

/// Roughly, a vectorised exp, sigmoid, tanh, erf or GELU against an add or a
/// multiply: 0.19, 0.24 and 0.34 ns an element for the first three in L1 on
/// an AVX-512 core (docs/performance.md), about 0.03 ns for an add.
inline constexpr int kTranscendentalCost = 8;

// Unary and binary ops run on f32, and on i32 too where they accept any dtype.
template <UnaryOp Op>
struct BlockFor<Op> {
  static BlockFn function(const Op&, const Types& in) {
    if constexpr (Op::accepts == Accepts::any)
      if (in[0].dtype == DType::i32) return &block::unary<Op, std::int32_t>;
    return &block::unary<Op, float>;
  }
};
template <BinaryOp Op>
struct BlockFor<Op> {
  static BlockFn function(const Op&, const Types& in) {
    if constexpr (Op::accepts == Accepts::any)
      if (in[0].dtype == DType::i32) return &block::binary<Op, std::int32_t>;
    return &block::binary<Op, float>;
  }
};
template <CompareOp Op>
struct BlockFor<Op> {
  static BlockFn function(const Op&, const Types& in) {
    return in[0].dtype == DType::f32 ? &block::compare<Op, float> : &block::compare<Op, std::int32_t>;
  }
};
/// The transcendental ones are vectorised (simd_math.hpp states their error bounds).
template <void (*Vectorised)(const float*, float*, std::int64_t)>
struct VectorisedBlock {
  static constexpr int cost = kTranscendentalCost;
  template <class Op>
  static BlockFn function(const Op&, const Types&) { return &block::f32<Vectorised>; }
};
template <> struct BlockFor<Exp> : VectorisedBlock<simd::exp_block> {};
template <> struct BlockFor<Tanh> : VectorisedBlock<simd::tanh_block> {};
template <> struct BlockFor<Sigmoid> : VectorisedBlock<simd::sigmoid_block> {};
template <> struct BlockFor<Erf> : VectorisedBlock<simd::erf_block> {};
template <> struct BlockFor<Log> : VectorisedBlock<simd::log_block> {};
template <> struct BlockFor<Sin> : VectorisedBlock<simd::sin_block> {};
template <> struct BlockFor<Cos> : VectorisedBlock<simd::cos_block> {};
/// So are relu and the commonest arithmetic on f32 (the same bits as the scalar
/// loops: exactly rounded, or an operand chosen); i32 keeps the op's own loop.
template <class Op, void (*Vectorised)(const float*, float*, std::int64_t)>
struct VectorisedF32Unary {
  static BlockFn function(const Op&, const Types& in) {
    return in[0].dtype == DType::i32 ? &block::unary<Op, std::int32_t> : &block::f32<Vectorised>;
  }
};
template <class Op, simd::Arithmetic F>
struct VectorisedF32Binary {
  static BlockFn function(const Op&, const Types& in) {
    if constexpr (Op::accepts == Accepts::any)
      if (in[0].dtype == DType::i32) return &block::binary<Op, std::int32_t>;
    return &block::f32_arithmetic<F>;
  }
};
template <> struct BlockFor<Relu> : VectorisedF32Unary<Relu, simd::relu_block> {};
template <> struct BlockFor<Add> : VectorisedF32Binary<Add, simd::Arithmetic::add> {};
template <> struct BlockFor<Sub> : VectorisedF32Binary<Sub, simd::Arithmetic::sub> {};
template <> struct BlockFor<Mul> : VectorisedF32Binary<Mul, simd::Arithmetic::mul> {};
template <> struct BlockFor<Div> : VectorisedF32Binary<Div, simd::Arithmetic::div> {};
template <> struct BlockFor<Maximum> : VectorisedF32Binary<Maximum, simd::Arithmetic::maximum> {};
template <> struct BlockFor<Minimum> : VectorisedF32Binary<Minimum, simd::Arithmetic::minimum> {};
template <>
struct BlockFor<Select> {
  static BlockFn function(const Select&, const Types& in) {
    const bool value_f32 = in[1].dtype == DType::f32;
    if (in[0].dtype == DType::f32) return value_f32 ? &block::select<float, float> : &block::select<float, std::int32_t>;
    return value_f32 ? &block::select<std::int32_t, float> : &block::select<std::int32_t, std::int32_t>;
  }
};
template <>
struct BlockFor<Cast> {
  static BlockFn function(const Cast& op, const Types& in) {
    const bool to_f32 = op.to == DType::f32;
    if (in[0].dtype == DType::f32) return to_f32 ? &block::cast<float, float> : &block::cast<float, std::int32_t>;
    return to_f32 ? &block::cast<std::int32_t, float> : &block::cast<std::int32_t, std::int32_t>;
  }
};

/// One or more elementwise ops evaluated together over one output shape.
class ElementwiseGroup {
 public:
  static constexpr std::int64_t block = 256;

  struct Leaf {
    ValueId value;
    Shape shape;     // as read: broadcasts into the group's output shape
    Shape strides;   // per axis of `shape`, in elements of `value` (empty: contiguous)
    std::int64_t offset = 0;  // where in `value` element 0 is (a slice read in place)
    bool plain() const { return strides.empty() && offset == 0; }
    bool operator==(const Leaf&) const = default;
  };
  struct Instr {
    BlockFn fn;
    std::vector<int> args;  // < leaves.size(): a leaf; otherwise a temp (an earlier instr)
    std::string name;
    int cost = 1;  // time per element, relative to an add (BlockFor<Op>::cost)
  };

  /// `dims`: the output shape; `leaves`' shapes broadcast into it.
  /// With keep_last, the last axis is never merged with the others, so
  /// (row, column) indexes match the output's last axis (epilogues need it).
  ElementwiseGroup(const Shape& out_shape, ValueId output, std::vector<Leaf> leaves,
                   std::vector<Instr> instrs, bool keep_last)
      : output_(output), leaves_(std::move(leaves)), instrs_(std::move(instrs)) {
    dims_ = out_shape.empty() ? Shape{1} : out_shape;
    for (const Leaf& leaf : leaves_) strides_.push_back(leaf_strides(leaf));
    collapse(keep_last);
    out_row_stride_ = cols();
  }

  std::int64_t rows() const { return span_size(0, dims_.size() - 1); }
  std::int64_t cols() const { return dims_.back(); }
  std::int64_t elements() const { return rows() * cols(); }
  ValueId output() const { return output_; }
  const std::vector<Leaf>& leaves() const { return leaves_; }
  std::size_t scratch_bytes() const { return (leaves_.size() + instrs_.size()) * block * 4; }

  /// Writes the output's rows `row_stride` elements apart (an epilogue whose
  /// producer writes into a larger tensor); `in_output` is a value that lives
  /// in the output's memory (the producer's product), whose leaves then read
  /// rows as far apart. False, changing nothing, where a leaf reads
  /// `in_output` other than whole and in order.
  bool write_rows_apart(ValueId in_output, std::int64_t row_stride) {
    Shape contiguous(dims_.size(), 1), apart(dims_.size(), 1);
    for (std::size_t d = dims_.size() - 1; d-- > 0;) {
      contiguous[d] = contiguous[d + 1] * dims_[d + 1];
      apart[d] = d + 2 == dims_.size() ? row_stride : apart[d + 1] * dims_[d + 1];
    }
    const auto whole = [&](std::size_t l) {  // (a unit axis's stride is never used)
      for (std::size_t d = 0; d < dims_.size(); ++d)
        if (dims_[d] != 1 && strides_[l][d] != contiguous[d]) return false;
      return leaves_[l].offset == 0;
    };
    for (std::size_t l = 0; l < leaves_.size(); ++l)
      if (leaves_[l].value == in_output && !whole(l)) return false;
    for (std::size_t l = 0; l < leaves_.size(); ++l)
      if (leaves_[l].value == in_output) strides_[l] = apart;
    out_row_stride_ = row_stride;
    return true;
  }

  /// The op's name when the group is one unary op on its one leaf (an
  /// activation a producer can apply as it stores), else empty.
  std::string_view activation() const {
    return instrs_.size() == 1 && leaves_.size() == 1 && instrs_[0].args.size() == 1 ? std::string_view(instrs_[0].name)
                                                                                      : std::string_view();
  }

  std::string describe() const {
    std::ostringstream out;
    for (std::size_t i = 0; i < instrs_.size(); ++i) out << (i ? "+" : "") << instrs_[i].name;
    out << " over " << to_string(dims_);
    return out.str();
  }

  /// Computes output rows [r0, r1) x columns [c0, c1).
  void eval(const RunContext& ctx, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1,
            int thread) const {
    eval_into(ctx, r0, r1, c0, c1, thread, ctx.slots[output_] + 4 * (r0 * out_row_stride_ + c0), out_row_stride_);
  }

  /// Computes output elements [first, last), in row-major order, into `out`
  /// instead of the output (for a reduction reading them as they are made).
  void eval_flat(const RunContext& ctx, std::int64_t first, std::int64_t last, float* out, int thread) const {
    for (std::int64_t i = first; i < last;) {
      const std::int64_t row = i / cols(), c0 = i % cols(), c1 = std::min(cols(), c0 + (last - i));
      eval_into(ctx, row, row + 1, c0, c1, thread, reinterpret_cast<std::byte*>(out + (i - first)), 0);
      i += c1 - c0;
    }
  }

  /// The fewest blocks a thread is handed at once: kMinTaskWork, about a
  /// microsecond's work. That is 16384 elements of one add, fewer of costlier
  /// ops (an LSTM step's gate maths over [16, 256] splits across two threads).
  std::int64_t min_blocks_per_task() const {
    std::int64_t cost = 0;
    for (const Instr& instr : instrs_) cost += instr.cost;
    return std::max<std::int64_t>(1, kMinTaskWork / (block * std::max<std::int64_t>(cost, 1)));
  }

  /// The whole output, split across the pool.
  void run_all(RunContext& ctx) const {
    const std::int64_t col_blocks = (cols() + block - 1) / block;
    const std::int64_t tasks = rows() * col_blocks;
    ctx.pool->parallel_for(tasks, min_blocks_per_task(), [&](std::int64_t begin, std::int64_t end, int t) {
      for (std::int64_t task = begin; task < end; ++task) {
        const std::int64_t row = task / col_blocks, c = (task % col_blocks) * block;
        eval(ctx, row, row + 1, c, std::min(c + block, cols()), t);
      }
    });
  }

  static constexpr std::size_t max_leaves = 16, max_instrs = 64;
  static constexpr std::int64_t kMinTaskWork = 16384;  // in adds: more than a hand-off costs

 private:
  /// eval, writing element (row, c) at out + 4 * ((row - r0) * row_stride + c - c0).
  void eval_into(const RunContext& ctx, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1, int thread,
                 std::byte* out, std::int64_t row_stride) const {
    std::byte* scratch = ctx.thread_scratch + thread * ctx.thread_scratch_stride;
    const std::size_t leaf_count = leaves_.size();
    const void* args[3];
    const void* operand[16 + 64];
    for (std::int64_t row = r0; row < r1; ++row) {
      // Each leaf's offset at the start of this row.
      std::int64_t base[16];
      for (std::size_t l = 0; l < leaf_count; ++l) base[l] = leaves_[l].offset + row_offset(row, strides_[l]);
      for (std::int64_t c = c0; c < c1; c += block) {
        const std::int64_t n = std::min(block, c1 - c);
        for (std::size_t l = 0; l < leaf_count; ++l) {
          const std::byte* data = ctx.slots[leaves_[l].value];
          const std::int64_t step = strides_[l].back();
          const std::byte* first = data + 4 * (base[l] + c * step);
          if (step == 1) {
            operand[l] = first;
          } else if (step == 0) {  // one value along the row (a per-row weight or scale)
            std::uint32_t bits;
            std::memcpy(&bits, first, 4);
            std::uint32_t* temp = reinterpret_cast<std::uint32_t*>(scratch + l * block * 4);
            std::fill(temp, temp + n, bits);
            operand[l] = temp;
          } else {
            std::byte* temp = scratch + l * block * 4;
            for (std::int64_t i = 0; i < n; ++i) std::memcpy(temp + 4 * i, first + 4 * i * step, 4);
            operand[l] = temp;
          }
        }
        for (std::size_t k = 0; k < instrs_.size(); ++k) {
          const Instr& instr = instrs_[k];
          for (std::size_t a = 0; a < instr.args.size(); ++a) args[a] = operand[instr.args[a]];
          void* target = k + 1 == instrs_.size() ? static_cast<void*>(out + 4 * ((row - r0) * row_stride + c - c0))
                                                  : static_cast<void*>(scratch + (leaf_count + k) * block * 4);
          instr.fn(args, target, n);
          operand[leaf_count + k] = target;
        }
      }
    }
  }

  std::int64_t span_size(std::size_t begin, std::size_t end) const {
    std::int64_t n = 1;
    for (std::size_t d = begin; d < end; ++d) n *= dims_[d];
    return n;
  }

  /// A leaf's strides over the group's axes: 0 where it broadcasts.
  Shape leaf_strides(const Leaf& leaf) const {
    if (leaf.strides.empty()) return broadcast_strides(dims_, leaf.shape);
    Shape strides(dims_.size(), 0);
    const std::size_t lead = dims_.size() - std::min(dims_.size(), leaf.shape.size());
    for (std::size_t d = 0; d < leaf.shape.size(); ++d)
      if (leaf.shape[d] != 1) strides[lead + d] = leaf.strides[d];
    return strides;
  }

  std::int64_t row_offset(std::int64_t row, const Shape& strides) const {
    std::int64_t offset = 0;
    for (std::size_t d = dims_.size() - 1; d-- > 0;) {
      offset += (row % dims_[d]) * strides[d];
      row /= dims_[d];
    }
    return offset;
  }

  /// Merges neighbouring axes that every leaf walks contiguously (or
  /// broadcasts along both), so inner loops run as long as possible.
  void collapse(bool keep_last) {
    for (std::size_t d = dims_.size(); d-- > 1;) {
      if (keep_last && d == dims_.size() - 1) continue;
      bool mergeable = true;
      for (const Shape& s : strides_) mergeable = mergeable && s[d - 1] == s[d] * dims_[d];
      if (!mergeable) continue;
      dims_[d - 1] *= dims_[d];
      dims_.erase(dims_.begin() + d);
      for (Shape& s : strides_) s.erase(s.begin() + d - 1);
    }
  }

  Shape dims_;
  ValueId output_;
  std::vector<Leaf> leaves_;
  std::vector<Shape> strides_;
  std::vector<Instr> instrs_;
  std::int64_t out_row_stride_ = 0;  // elements between output rows (cols() unless written into a larger tensor)
};

/// A kernel running one elementwise group on its own.
class ElementwiseKernel final : public Kernel {
 public:
  explicit ElementwiseKernel(ElementwiseGroup group) : group_(std::move(group)) {
    thread_scratch_bytes = group_.scratch_bytes();
  }
  void run(RunContext& ctx) const override { group_.run_all(ctx); }
  std::string describe() const override { return "elementwise " + group_.describe(); }
  const ElementwiseGroup& group() const { return group_; }

 private:
  ElementwiseGroup group_;
};

}  // namespace rml::exec
