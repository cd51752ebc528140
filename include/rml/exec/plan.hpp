// Compiling a graph into a plan: kernels chosen per node for the static
// shapes, elementwise chains fused into groups, matmul/conv epilogues
// absorbed, weights prepacked, and one arena laid out from value lifetimes.
#pragma once

#include <memory>
#include <numeric>
#include <optional>
#include <sstream>

#include "rml/exec/arena.hpp"
#include "rml/exec/kernels/attention.hpp"
#include "rml/exec/kernels/conv_pool.hpp"
#include "rml/exec/kernels/elementwise.hpp"
#include "rml/exec/kernels/layout.hpp"
#include "rml/exec/kernels/linalg.hpp"
#include "rml/exec/kernels/reduce.hpp"
#include "rml/exec/model.hpp"

namespace rml::exec {

/// Where a value's memory comes from at run time.
enum class Storage : std::uint8_t { arena, constant, input, output, alias };

struct Plan {
  std::vector<std::unique_ptr<Kernel>> kernels;
  std::vector<Storage> storage;          // per value
  std::vector<std::size_t> offset;       // arena offset, per arena value
  std::vector<ValueId> alias_of;         // per alias value: the value whose memory it shares
  std::vector<ValueId> run_aliases;      // alias values to resolve at the start of each run, in order
  std::size_t arena_bytes = 0, shared_scratch_bytes = 0, thread_scratch_stride = 0;
  std::size_t fused_groups = 0;
};

namespace plan_detail {

/// Union-find over node indices.
struct Sets {
  std::vector<std::size_t> parent;
  explicit Sets(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  std::size_t find(std::size_t x) { return parent[x] == x ? x : parent[x] = find(parent[x]); }
};

class Compiler {
 public:
  Compiler(const Model& model, bool fuse) : graph_(model.graph()), order_(model.order()), fuse_(fuse) {
    const std::size_t values = graph_.values.size();
    producer_.assign(values, -1);
    readers_.assign(values, {});
    is_output_.assign(values, false);
    for (std::size_t n = 0; n < graph_.nodes.size(); ++n) {
      for (ValueId v : graph_.nodes[n].outputs) producer_[v] = static_cast<std::int64_t>(n);
      for (ValueId v : graph_.nodes[n].inputs)
        if (readers_[v].empty() || readers_[v].back() != n) readers_[v].push_back(n);
    }
    for (const NamedValue& out : graph_.outputs) is_output_[out.value] = true;
  }

  Plan compile() {
    form_groups();
    Plan plan;
    plan.storage.assign(graph_.values.size(), Storage::arena);
    plan.alias_of.assign(graph_.values.size(), 0);
    for (std::size_t v = 0; v < graph_.values.size(); ++v) {
      if (graph_.values[v].kind == ValueKind::constant) plan.storage[v] = Storage::constant;
      if (graph_.values[v].kind == ValueKind::input) plan.storage[v] = Storage::input;
      if (is_output_[v]) plan.storage[v] = Storage::output;
    }
    for (std::size_t n : order_) emit(n, plan);
    layout(plan);
    return plan;
  }

 private:
  const Node& node(std::size_t n) const { return graph_.nodes[n]; }
  const TensorType& type(ValueId v) const { return graph_.values[v].type; }
  bool single_private_reader(ValueId v) const { return readers_[v].size() == 1 && !is_output_[v]; }
  bool produced_by(ValueId v, auto predicate) const { return producer_[v] >= 0 && predicate(node(producer_[v])); }

  /// Elementwise nodes joined along single-reader edges of equal shape;
  /// single-reader broadcast_to nodes absorbed as broadcasting leaves.
  void form_groups() {
    Sets sets(graph_.nodes.size());
    std::vector<std::size_t> instrs(graph_.nodes.size(), 1), leaves(graph_.nodes.size());
    for (std::size_t n = 0; n < graph_.nodes.size(); ++n) leaves[n] = node(n).inputs.size();
    absorbed_.assign(graph_.nodes.size(), false);
    in_group_.assign(graph_.nodes.size(), false);
    for (std::size_t n : order_) {
      if (!is_elementwise_op(node(n).op)) continue;
      in_group_[n] = true;
      if (!fuse_) continue;
      const Shape& shape = type(node(n).outputs[0]).shape;
      for (ValueId v : node(n).inputs) {
        if (!single_private_reader(v) || producer_[v] < 0) continue;
        const std::size_t p = static_cast<std::size_t>(producer_[v]);
        if (holds<BroadcastTo>(node(p).op)) {
          absorbed_[p] = true;
        } else if (is_elementwise_op(node(p).op) && type(v).shape == shape) {
          const std::size_t a = sets.find(p), b = sets.find(n);
          if (a == b || instrs[a] + instrs[b] > ElementwiseGroup::max_instrs ||
              leaves[a] + leaves[b] > ElementwiseGroup::max_leaves)
            continue;
          sets.parent[a] = b;
          instrs[b] += instrs[a];
          leaves[b] += leaves[a];
        }
      }
    }
    group_of_.assign(graph_.nodes.size(), 0);
    for (std::size_t n = 0; n < graph_.nodes.size(); ++n) group_of_[n] = sets.find(n);
    // The root of a group is its member whose output leaves the group.
    is_root_.assign(graph_.nodes.size(), false);
    for (std::size_t n = 0; n < graph_.nodes.size(); ++n) {
      if (!in_group_[n]) continue;
      const ValueId out = node(n).outputs[0];
      bool internal = single_private_reader(out) && group_of_[readers_[out][0]] == group_of_[n] && readers_[out][0] != n;
      is_root_[n] = !internal;
    }
    // A matmul/conv whose product only feeds a group becomes that group's
    // epilogue producer: emitted at the group's root.
    epilogue_owner_.assign(graph_.nodes.size(), -1);
    if (!fuse_) return;
    for (std::size_t n = 0; n < graph_.nodes.size(); ++n) {
      // (A 1-D right operand drops the product's column axis, so tiles would
      // not map onto the epilogue's rows and columns.)
      const bool gemm_op = ((holds<MatMul>(node(n).op) && type(node(n).inputs[1]).shape.size() > 1) ||
                            holds<Conv2d>(node(n).op)) &&
                           type(node(n).outputs[0]).dtype == DType::f32;
      if (!gemm_op) continue;
      const ValueId v = node(n).outputs[0];
      if (!single_private_reader(v) || !in_group_[readers_[v][0]]) continue;
      const std::size_t root = group_root(group_of_[readers_[v][0]]);
      if (type(node(root).outputs[0]).shape != type(v).shape) continue;
      if (holds<Conv2d>(node(n).op) && !conv_epilogue_ok(root, v)) continue;
      bool taken = false;
      for (std::size_t m = 0; m < n; ++m) taken = taken || epilogue_owner_[m] == static_cast<std::int64_t>(root);
      if (!taken) epilogue_owner_[n] = static_cast<std::int64_t>(root);
    }
  }

  std::size_t group_root(std::size_t set) const {
    for (std::size_t n = 0; n < graph_.nodes.size(); ++n)
      if (in_group_[n] && is_root_[n] && group_of_[n] == set) return n;
    return set;
  }

  /// Members of the group rooted at `root`, in execution order.
  std::vector<std::size_t> members(std::size_t root) const {
    std::vector<std::size_t> out;
    for (std::size_t n : order_)
      if (in_group_[n] && group_of_[n] == group_of_[root]) out.push_back(n);
    return out;
  }

  /// The leaf a member input reads: through an absorbed broadcast_to, its source.
  ValueId leaf_value(ValueId v) const {
    if (producer_[v] >= 0 && absorbed_[producer_[v]]) return node(producer_[v]).inputs[0];
    return v;
  }

  /// Builds the group rooted at `root`. With `view`, the group is evaluated
  /// over that view of the output (conv epilogues: [N, O, H*W]).
  ElementwiseGroup build_group(std::size_t root, bool keep_last, const std::optional<Shape>& view = std::nullopt) const {
    const std::vector<std::size_t> group = members(root);
    std::vector<ElementwiseGroup::Leaf> leaves;
    std::vector<ElementwiseGroup::Instr> instrs;
    std::vector<std::pair<ValueId, int>> operand_of;  // value -> operand index
    auto operand = [&](ValueId v) -> int {
      for (const auto& [value, index] : operand_of)
        if (value == v) return index;
      const ValueId leaf = leaf_value(v);
      for (const auto& [value, index] : operand_of)
        if (value == leaf && index < static_cast<int>(leaves.size())) return index;
      Shape shape = type(leaf).shape;
      if (view) shape = view_shape(shape);
      leaves.push_back({leaf, shape});
      const int index = static_cast<int>(leaves.size()) - 1;
      operand_of.emplace_back(leaf, index);
      return index;
    };
    // Leaves first (operand indices below the temps), in a stable order.
    for (std::size_t n : group)
      for (ValueId v : node(n).inputs)
        if (producer_[v] < 0 || !in_group_[producer_[v]] || group_of_[producer_[v]] != group_of_[root]) operand(v);
    const int leaf_count = static_cast<int>(leaves.size());
    for (std::size_t n : group) {
      ElementwiseGroup::Instr instr{block_function(node(n).op, types_of(node(n).inputs)), {}, std::string(op_name(node(n).op))};
      for (ValueId v : node(n).inputs) instr.args.push_back(operand(v));
      instrs.push_back(std::move(instr));
      operand_of.emplace_back(node(n).outputs[0], leaf_count + static_cast<int>(instrs.size()) - 1);
    }
    const ValueId out = node(root).outputs[0];
    return ElementwiseGroup(view ? *view : type(out).shape, out, std::move(leaves), std::move(instrs), keep_last);
  }

  /// A 4-D NCHW-broadcastable shape as seen in the [N, O, H*W] view.
  static Shape view_shape(Shape shape) {
    while (shape.size() < 4) shape.insert(shape.begin(), 1);
    return {shape[0], shape[1], shape[2] * shape[3]};
  }
  bool conv_epilogue_ok(std::size_t root, ValueId product) const {
    const Shape& y = type(product).shape;
    for (std::size_t n : members(root))
      for (ValueId v : node(n).inputs) {
        Shape s = type(leaf_value(v)).shape;
        if (s.size() > 4) return false;
        while (s.size() < 4) s.insert(s.begin(), 1);
        const bool full = s[2] == y[2] && s[3] == y[3], none = s[2] == 1 && s[3] == 1;
        if (!full && !none) return false;
      }
    return true;
  }

  Types types_of(const std::vector<ValueId>& ids) const {
    Types out;
    for (ValueId v : ids) out.push_back(type(v));
    return out;
  }

  void emit(std::size_t n, Plan& plan) {
    const Node& nd = node(n);
    if (absorbed_[n]) return;
    if (in_group_[n] && !is_root_[n]) return;
    if (epilogue_owner_[n] >= 0) return;  // emitted with its epilogue at the group root
    std::unique_ptr<Kernel> kernel;
    std::vector<std::size_t> covered{n};
    if (in_group_[n]) {
      covered = members(n);
      std::optional<std::size_t> producer;
      for (std::size_t m = 0; m < graph_.nodes.size(); ++m)
        if (epilogue_owner_[m] == static_cast<std::int64_t>(n)) producer = m;
      if (producer) {
        kernel = gemm_kernel(*producer, n);
        covered.insert(covered.begin(), *producer);
      } else {
        kernel = std::make_unique<ElementwiseKernel>(build_group(n, false));
      }
      if (covered.size() > 1) ++plan.fused_groups;
    } else {
      kernel = single_kernel(n, plan);
    }
    kernel->nodes = covered;
    // What the kernel reads from outside and writes.
    std::vector<ValueId> internal;
    for (std::size_t m : covered)
      for (ValueId v : node(m).outputs) internal.push_back(v);
    for (std::size_t m : covered)
      for (ValueId v : node(m).inputs) {
        const ValueId read = leaf_value(v);
        if (std::find(internal.begin(), internal.end(), read) == internal.end() &&
            std::find(kernel->reads.begin(), kernel->reads.end(), read) == kernel->reads.end())
          kernel->reads.push_back(read);
      }
    kernel->writes = in_group_[n] ? std::vector<ValueId>{nd.outputs[0]} : nd.outputs;
    plan.kernels.push_back(std::move(kernel));
  }

  std::unique_ptr<Kernel> gemm_kernel(std::size_t producer, std::optional<std::size_t> epilogue_root) const {
    const Node& nd = node(producer);
    if (holds<Conv2d>(nd.op)) {
      std::optional<ElementwiseGroup> epilogue;
      const Shape& y = type(nd.outputs[0]).shape;
      if (epilogue_root) epilogue = build_group(*epilogue_root, true, Shape{y[0], y[1], y[2] * y[3]});
      std::optional<ValueId> bias;
      if (nd.inputs.size() == 3) bias = nd.inputs[2];
      return std::make_unique<Conv2dKernel>(std::get<Conv2d>(nd.op), nd.inputs[0], nd.inputs[1], bias, nd.outputs[0],
                                            type(nd.inputs[0]).shape, type(nd.inputs[1]).shape, y, std::move(epilogue));
    }
    Shape a = type(nd.inputs[0]).shape, b = type(nd.inputs[1]).shape;
    if (a.size() == 1) a.insert(a.begin(), 1);
    if (b.size() == 1) b.push_back(1);
    const Shape batch = broadcast_shapes(std::span(a).first(a.size() - 2), std::span(b).first(b.size() - 2), "matmul");
    const Value& b_value = graph_.values[nd.inputs[1]];
    const Tensor* b_constant = b_value.kind == ValueKind::constant ? &*b_value.data : nullptr;
    std::optional<ElementwiseGroup> epilogue;
    // The epilogue's rows are the product's rows over all batches.
    if (epilogue_root) epilogue = build_group(*epilogue_root, true);
    if (type(nd.inputs[0]).dtype == DType::i32)
      return std::make_unique<IntMatMulKernel>(nd.inputs[0], nd.inputs[1], nd.outputs[0], a, b, batch);
    return std::make_unique<MatMulKernel>(nd.inputs[0], nd.inputs[1], nd.outputs[0], a, b, batch, b_constant, std::move(epilogue));
  }

  std::unique_ptr<Kernel> single_kernel(std::size_t n, Plan& plan) const {
    const Node& nd = node(n);
    const Types in = types_of(nd.inputs);
    const ValueId out = nd.outputs[0];
    const Shape& y = type(out).shape;
    return std::visit(
        [&](const auto& op) -> std::unique_ptr<Kernel> {
          using Op = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<Op, MatMul> || std::is_same_v<Op, Conv2d>) {
            return gemm_kernel(n, std::nullopt);
          } else if constexpr (std::is_same_v<Op, Reshape>) {
            const bool copy = is_output_[out] || plan.storage[nd.inputs[0]] == Storage::constant;
            return std::make_unique<ReshapeKernel>(nd.inputs[0], out, static_cast<std::size_t>(element_count(y)) * 4, copy);
          } else if constexpr (std::is_same_v<Op, Transpose>) {
            const Shape strides = contiguous_strides(in[0].shape);
            StridedCopy copy{y, {}, contiguous_strides(y)};
            for (auto p : op.perm) copy.src_strides.push_back(strides[p]);
            return std::make_unique<CopyKernel>("transpose", out, element_count(y), std::vector{std::pair{nd.inputs[0], copy}});
          } else if constexpr (std::is_same_v<Op, BroadcastTo>) {
            StridedCopy copy{y, broadcast_strides(y, in[0].shape), contiguous_strides(y)};
            return std::make_unique<CopyKernel>("broadcast_to", out, element_count(y), std::vector{std::pair{nd.inputs[0], copy}});
          } else if constexpr (std::is_same_v<Op, Slice>) {
            const Shape strides = contiguous_strides(in[0].shape);
            StridedCopy copy{y, {}, contiguous_strides(y)};
            const auto ranges = op.ranges(in[0].shape);
            for (std::size_t d = 0; d < ranges.size(); ++d) {
              copy.src_strides.push_back(ranges[d].step * strides[d]);
              copy.src_offset += ranges[d].start * strides[d];
            }
            return std::make_unique<CopyKernel>("slice", out, element_count(y), std::vector{std::pair{nd.inputs[0], copy}});
          } else if constexpr (std::is_same_v<Op, Concat>) {
            const std::size_t axis = normalize_axis(op.axis, y.size(), "concat");
            const Shape out_strides = contiguous_strides(y);
            std::vector<std::pair<ValueId, StridedCopy>> copies;
            std::int64_t at = 0;
            for (std::size_t i = 0; i < in.size(); ++i) {
              copies.emplace_back(nd.inputs[i], StridedCopy{in[i].shape, contiguous_strides(in[i].shape), out_strides, 0,
                                                            at * out_strides[axis]});
              at += in[i].shape[axis];
            }
            return std::make_unique<CopyKernel>("concat", out, element_count(y), std::move(copies));
          } else if constexpr (std::is_same_v<Op, Pad>) {
            const Shape out_strides = contiguous_strides(y);
            StridedCopy copy{in[0].shape, contiguous_strides(in[0].shape), out_strides};
            for (std::size_t d = 0; d < y.size(); ++d) copy.dst_offset += op.pads[d] * out_strides[d];
            std::uint32_t bits;
            if (in[0].dtype == DType::f32) {
              const float v = static_cast<float>(op.value);
              std::memcpy(&bits, &v, 4);
            } else {
              const std::int32_t v = static_cast<std::int32_t>(op.value);
              std::memcpy(&bits, &v, 4);
            }
            return std::make_unique<CopyKernel>("pad", out, element_count(y), std::vector{std::pair{nd.inputs[0], copy}}, bits);
          } else if constexpr (std::is_same_v<Op, Gather>) {
            const std::int64_t axis = normalize_axis(op.axis, in[0].shape.size(), "gather");
            return std::make_unique<GatherKernel>(nd.inputs[0], nd.inputs[1], out, in[0].shape, axis, element_count(in[1].shape));
          } else if constexpr (std::is_same_v<Op, TopK>) {
            const std::int64_t dim = in[0].shape.back();
            const std::int64_t rows = dim == 0 ? 0 : element_count(in[0].shape) / dim;
            return std::make_unique<TopKKernel>(nd.inputs[0], nd.outputs[0], nd.outputs[1], in[0].dtype, rows, dim, op.k);
          } else if constexpr (std::is_same_v<Op, ReduceSum> || std::is_same_v<Op, ReduceMean> ||
                               std::is_same_v<Op, ReduceMax> || std::is_same_v<Op, ReduceMin>) {
            constexpr ReduceKind kind = std::is_same_v<Op, ReduceSum>    ? ReduceKind::sum
                                        : std::is_same_v<Op, ReduceMean> ? ReduceKind::mean
                                        : std::is_same_v<Op, ReduceMax>  ? ReduceKind::max
                                                                         : ReduceKind::min;
            return std::make_unique<ReduceKernel>(kind, in[0].dtype, nd.inputs[0], out, in[0].shape,
                                                  normalize_axes(op.axes, in[0].shape.size(), "reduce"));
          } else if constexpr (std::is_same_v<Op, Softmax>) {
            const Shape& x = in[0].shape;
            const std::size_t axis = normalize_axis(op.axis, x.size(), "softmax");
            std::int64_t outer = 1, inner = 1;
            for (std::size_t d = 0; d < axis; ++d) outer *= x[d];
            for (std::size_t d = axis + 1; d < x.size(); ++d) inner *= x[d];
            return std::make_unique<SoftmaxKernel>(nd.inputs[0], out, outer, x[axis], inner);
          } else if constexpr (std::is_same_v<Op, LayerNorm>) {
            const std::int64_t dim = in[0].shape.back();
            return std::make_unique<LayerNormKernel>(nd.inputs, out, dim == 0 ? 0 : element_count(in[0].shape) / dim, dim, op.eps);
          } else if constexpr (std::is_same_v<Op, MaxPool2d> || std::is_same_v<Op, AvgPool2d>) {
            return std::make_unique<PoolKernel<Op>>(op, nd.inputs[0], out, in[0].shape, y);
          } else if constexpr (std::is_same_v<Op, Sdpa>) {
            return std::make_unique<SdpaKernel>(op, nd.inputs, out, in, y);
          } else {
            static_assert(is_elementwise<Op>, "the executor has no kernel for this op: add one in rml/exec/kernels/");
            return nullptr;  // elementwise ops always run as groups
          }
        },
        nd.op);
  }

  /// Lifetimes -> arena offsets; aliases; in-place reuse; scratch sizes.
  void layout(Plan& plan) const {
    const std::size_t values = graph_.values.size();
    // Aliases: reshapes that re-label, and products written into their epilogue's output.
    for (const auto& kernel : plan.kernels) {
      if (kernel->aliases_input) {
        const ValueId out = kernel->writes[0];
        plan.storage[out] = Storage::alias;
        plan.alias_of[out] = kernel->reads[0];
      }
      for (std::size_t m : kernel->nodes)
        if (epilogue_owner_[m] >= 0) {
          const ValueId product = node(m).outputs[0];
          plan.storage[product] = Storage::alias;
          plan.alias_of[product] = kernel->writes[0];
          plan.run_aliases.push_back(product);
        }
    }
    auto root = [&](ValueId v) {
      while (plan.storage[v] == Storage::alias) v = plan.alias_of[v];
      return v;
    };
    constexpr std::size_t never = ~std::size_t{0};
    std::vector<std::size_t> first(values, never), last(values, 0);
    for (std::size_t step = 0; step < plan.kernels.size(); ++step) {
      for (ValueId v : plan.kernels[step]->writes) {
        const ValueId r = root(v);
        if (first[r] == never) first[r] = step;
        last[r] = std::max(last[r], step);
      }
      for (ValueId v : plan.kernels[step]->reads) last[root(v)] = std::max(last[root(v)], step);
    }
    // Values read through aliases keep their root alive too.
    for (std::size_t step = 0; step < plan.kernels.size(); ++step)
      for (std::size_t m : plan.kernels[step]->nodes)
        for (ValueId v : node(m).inputs) last[root(v)] = std::max(last[root(v)], step);
    // In place: an elementwise group may write its output over a leaf of the
    // same shape that nothing reads afterwards (each block reads its inputs
    // before writing the same positions).
    for (std::size_t step = 0; step < plan.kernels.size(); ++step) {
      const auto* group = dynamic_cast<const ElementwiseKernel*>(plan.kernels[step].get());
      if (!group) continue;
      const ValueId out = group->group().output();
      if (plan.storage[out] != Storage::arena) continue;
      for (const auto& leaf : group->group().leaves()) {
        const ValueId r = root(leaf.value);
        if (plan.storage[r] != Storage::arena || r == out || last[r] != step || leaf.shape != type(out).shape) continue;
        plan.storage[out] = Storage::alias;
        plan.alias_of[out] = r;
        last[r] = std::max(last[r], last[out]);
        break;
      }
    }
    std::vector<ValueId> buffers;
    std::vector<Lifetime> lifetimes;
    for (ValueId v = 0; v < values; ++v)
      if (plan.storage[v] == Storage::arena && first[v] != never) {
        buffers.push_back(v);
        lifetimes.push_back({static_cast<std::size_t>(element_count(type(v).shape)) * 4, first[v], last[v]});
      }
    const ArenaLayout arena = plan_arena(lifetimes);
    plan.offset.assign(values, 0);
    for (std::size_t i = 0; i < buffers.size(); ++i) plan.offset[buffers[i]] = arena.offsets[i];
    plan.arena_bytes = arena.bytes;
    std::size_t thread_bytes = 0;
    for (const auto& kernel : plan.kernels) {
      plan.shared_scratch_bytes = std::max(plan.shared_scratch_bytes, align_up(kernel->shared_scratch_bytes));
      thread_bytes = std::max(thread_bytes, kernel->thread_scratch_bytes);
    }
    plan.thread_scratch_stride = align_up(thread_bytes);
  }

  const Graph& graph_;
  const std::vector<std::size_t>& order_;
  bool fuse_;
  std::vector<std::int64_t> producer_;
  std::vector<std::vector<std::size_t>> readers_;
  std::vector<bool> is_output_, absorbed_, in_group_, is_root_;
  std::vector<std::size_t> group_of_;
  std::vector<std::int64_t> epilogue_owner_;
};

}  // namespace plan_detail

inline Plan compile_plan(const Model& model, bool fuse) { return plan_detail::Compiler(model, fuse).compile(); }

}  // namespace rml::exec
