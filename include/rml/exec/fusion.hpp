// Which nodes run together: elementwise nodes joined along single-reader edges
// of equal shape become one group (and a value whose readers all share one
// group joins its producer to it), single-reader broadcast_to and slice nodes
// become a group's leaves (read broadcast, or in place), and a matmul or conv2d whose product only feeds
// a group takes that group as its epilogue. Unfused, every elementwise node is
// a group of one, so both paths compute each element with the same functions.
#pragma once

#include <algorithm>
#include <numeric>
#include <optional>

#include "rml/exec/dispatch.hpp"
#include "rml/exec/model.hpp"

namespace rml::exec {

/// Who produces and who reads each value.
struct GraphUses {
  std::vector<std::int64_t> producer;             // per value: node index, -1 for inputs and constants
  std::vector<std::vector<std::size_t>> readers;  // per value: reading nodes, each once
  std::vector<bool> is_output;                    // per value: a graph output?

  explicit GraphUses(const Graph& graph)
      : producer(graph.values.size(), -1), readers(graph.values.size()), is_output(graph.values.size(), false) {
    for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
      for (ValueId v : graph.nodes[n].outputs) producer[v] = static_cast<std::int64_t>(n);
      for (ValueId v : graph.nodes[n].inputs)
        if (readers[v].empty() || readers[v].back() != n) readers[v].push_back(n);
    }
    for (const NamedValue& out : graph.outputs) is_output[out.value] = true;
  }
  bool single_private_reader(ValueId v) const { return readers[v].size() == 1 && !is_output[v]; }
};

class Fusion {
 public:
  Fusion(const Graph& graph, const std::vector<std::size_t>& order, const GraphUses& uses, bool fuse)
      : graph_(graph), order_(order), uses_(uses) {
    form_groups(fuse);
    if (fuse) choose_epilogues();
    gather_conv_inputs(fuse);
    gather_sdpa_transposes(fuse);
    choose_prologues(fuse);
  }

  /// A node run inside the kernel of the node it feeds: in a direct conv's
  /// padding (the channel concat feeding it, or a nearest upsampling's
  /// reshape, broadcast_to and reshape), as the strided rows an sdpa reads
  /// (a transpose of [B, L, H, D] to [B, H, L, D]), or as a member of a
  /// reduction's prologue: no kernel.
  bool gathered(std::size_t n) const { return gathered_by_[n] >= 0; }
  /// The nodes gathered into node `consumer`'s kernel, in execution order.
  std::vector<std::size_t> gathered_into(std::size_t consumer) const {
    std::vector<std::size_t> out;
    for (std::size_t n : order_)
      if (gathered_by_[n] == static_cast<std::int64_t>(consumer)) out.push_back(n);
    return out;
  }
  /// Per node: the channel pieces its conv reads instead of its input (PlanContext::conv_pieces).
  const std::vector<std::vector<ChannelPiece>>& conv_pieces() const { return conv_pieces_; }
  /// Per node: what an sdpa reads for q, k and v and where it writes (PlanContext::sdpa_operands).
  const std::vector<std::vector<ValueId>>& sdpa_operands() const { return sdpa_operands_; }
  /// A transpose of an sdpa's output back to [B, L, H, D] that the sdpa's
  /// kernel writes directly: no kernel of its own.
  bool written_by_producer(std::size_t n) const { return written_by_[n] >= 0; }
  /// The transpose whose output sdpa node `n` writes in place of its own, if any.
  std::optional<std::size_t> output_transpose(std::size_t n) const {
    if (output_transpose_[n] < 0) return std::nullopt;
    return static_cast<std::size_t>(output_transpose_[n]);
  }

  /// The group a reduction computes its input with, slab by slab, if any.
  std::optional<ElementwiseGroup> prologue(std::size_t n) const {
    if (prologue_root_[n] < 0) return std::nullopt;
    return build_group(static_cast<std::size_t>(prologue_root_[n]), false);
  }

  /// A broadcast_to or slice read only by a group, as one of its leaves: no kernel.
  bool absorbed(std::size_t n) const { return absorbed_[n]; }
  bool in_group(std::size_t n) const { return in_group_[n]; }
  /// The group member whose output leaves the group: where it is emitted.
  bool is_root(std::size_t n) const { return is_root_[n]; }
  /// A matmul/conv2d emitted with its epilogue, at the epilogue's root.
  bool is_epilogue_producer(std::size_t n) const { return epilogue_owner_[n] >= 0; }
  /// The matmul/conv2d whose epilogue is the group rooted at `root`, if any.
  std::optional<std::size_t> epilogue_producer(std::size_t root) const {
    for (std::size_t m = 0; m < graph_.nodes.size(); ++m)
      if (epilogue_owner_[m] == static_cast<std::int64_t>(root)) return m;
    return std::nullopt;
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
    if (uses_.producer[v] >= 0 && absorbed_[uses_.producer[v]]) return node(uses_.producer[v]).inputs[0];
    return v;
  }

  /// The group rooted at `root`, evaluated on its own.
  ElementwiseGroup group(std::size_t root) const { return build_group(root, false); }

  /// The group rooted at `root` as the epilogue of `producer`: over the
  /// product's rows and columns (a conv's output viewed as [N, O, H*W]).
  ElementwiseGroup epilogue(std::size_t producer, std::size_t root) const {
    if (holds<Conv2d>(node(producer).op)) {
      const Shape& y = type(node(producer).outputs[0]).shape;
      return build_group(root, true, Shape{y[0], y[1], y[2] * y[3]});
    }
    return build_group(root, true);
  }

 private:
  const Node& node(std::size_t n) const { return graph_.nodes[n]; }
  const TensorType& type(ValueId v) const { return graph_.values[v].type; }

  /// Union-find over node indices.
  struct Sets {
    std::vector<std::size_t> parent;
    explicit Sets(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
    std::size_t find(std::size_t x) { return parent[x] == x ? x : parent[x] = find(parent[x]); }
  };

  void form_groups(bool fuse) {
    const std::size_t nodes = graph_.nodes.size();
    Sets sets(nodes);
    std::vector<std::size_t> instrs(nodes, 1), leaves(nodes);
    for (std::size_t n = 0; n < nodes; ++n) leaves[n] = node(n).inputs.size();
    absorbed_.assign(nodes, false);
    in_group_.assign(nodes, false);
    epilogue_owner_.assign(nodes, -1);
    for (std::size_t n : order_) {
      if (!is_elementwise_op(node(n).op)) continue;
      in_group_[n] = true;
      if (!fuse) continue;
      const Shape& shape = type(node(n).outputs[0]).shape;
      for (ValueId v : node(n).inputs) {
        if (!uses_.single_private_reader(v) || uses_.producer[v] < 0) continue;
        const std::size_t p = static_cast<std::size_t>(uses_.producer[v]);
        if (holds<BroadcastTo>(node(p).op) || holds<Slice>(node(p).op)) {
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
    // A value several members of one group read (x in select(x > 0, x, 0.2 x),
    // x * sigmoid(x)) brings its producer into that group as well; from the
    // last producer back, so a chain of such values joins whole.
    if (fuse)
      for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
        const std::size_t p = *it;
        if (!in_group_[p]) continue;
        const std::optional<std::size_t> reader_set = only_reader_set(p, sets);
        if (!reader_set) continue;
        const std::size_t a = sets.find(p), b = *reader_set;
        if (a == b || instrs[a] + instrs[b] > ElementwiseGroup::max_instrs ||
            leaves[a] + leaves[b] > ElementwiseGroup::max_leaves)
          continue;
        sets.parent[a] = b;
        instrs[b] += instrs[a];
        leaves[b] += leaves[a];
      }
    group_of_.assign(nodes, 0);
    for (std::size_t n = 0; n < nodes; ++n) group_of_[n] = sets.find(n);
    is_root_.assign(nodes, false);
    for (std::size_t n = 0; n < nodes; ++n) {
      if (!in_group_[n]) continue;
      const ValueId out = node(n).outputs[0];
      const auto& readers = uses_.readers[out];
      const bool internal = !uses_.is_output[out] && !readers.empty() &&
                            std::all_of(readers.begin(), readers.end(), [&](std::size_t r) {
                              return r != n && in_group_[r] && group_of_[r] == group_of_[n];
                            });
      is_root_[n] = !internal;
    }
  }

  /// The set holding every reader of elementwise node p's output, when there
  /// are several readers, all grouped elementwise nodes of one set and of p's
  /// output shape, and the output is not a graph output.
  std::optional<std::size_t> only_reader_set(std::size_t p, Sets& sets) const {
    const ValueId v = node(p).outputs[0];
    const auto& readers = uses_.readers[v];
    if (uses_.is_output[v] || readers.size() < 2) return std::nullopt;
    std::optional<std::size_t> set;
    for (std::size_t r : readers) {
      if (!in_group_[r] || type(node(r).outputs[0]).shape != type(v).shape) return std::nullopt;
      if (set && sets.find(r) != *set) return std::nullopt;
      set = sets.find(r);
    }
    return set;
  }

  /// A matmul/conv whose product only feeds a group becomes that group's
  /// epilogue producer, emitted at the group's root.
  void choose_epilogues() {
    for (std::size_t n = 0; n < graph_.nodes.size(); ++n) {
      // (A 1-D right operand drops the product's column axis, so tiles would
      // not map onto the epilogue's rows and columns.)
      const bool gemm_op = ((holds<MatMul>(node(n).op) && type(node(n).inputs[1]).shape.size() > 1) ||
                            holds<Conv2d>(node(n).op)) &&
                           type(node(n).outputs[0]).dtype == DType::f32;
      if (!gemm_op) continue;
      const ValueId v = node(n).outputs[0];
      if (!uses_.single_private_reader(v) || !in_group_[uses_.readers[v][0]]) continue;
      const std::size_t root = group_root(group_of_[uses_.readers[v][0]]);
      if (type(node(root).outputs[0]).shape != type(v).shape) continue;
      if (holds<Conv2d>(node(n).op) && !conv_epilogue_ok(root, v)) continue;
      bool taken = false;
      for (std::size_t m = 0; m < n; ++m) taken = taken || epilogue_owner_[m] == static_cast<std::int64_t>(root);
      if (!taken) epilogue_owner_[n] = static_cast<std::int64_t>(root);
    }
  }

  /// A direct conv whose input is a channel concat only it reads, of values
  /// that may each be nearest-upsampled (also read by nothing else), reads
  /// their planes as it pads them: the concat and the upsampled copies are
  /// never written (the bench unet's decoder: 0.3 ms of copies at batch 16).
  void gather_conv_inputs(bool fuse) {
    conv_pieces_.assign(graph_.nodes.size(), {});
    gathered_by_.assign(graph_.nodes.size(), -1);
    if (!fuse) return;
    for (std::size_t n = 0; n < graph_.nodes.size(); ++n) {
      if (!runs_direct_conv(graph_, node(n))) continue;
      std::vector<std::size_t> gathered;
      std::vector<ValueId> parts{node(n).inputs[0]};
      const std::optional<std::size_t> concat = private_producer(parts[0]);
      if (concat && holds<Concat>(node(*concat).op) &&
          normalize_axis(get<Concat>(node(*concat).op).axis, 4, "concat") == 1) {
        parts = node(*concat).inputs;
        gathered.push_back(*concat);
      }
      std::vector<ChannelPiece> pieces;
      for (ValueId v : parts) pieces.push_back(nearest_upsampling(v, gathered).value_or(ChannelPiece{v, type(v).shape[1]}));
      if (gathered.empty()) continue;
      for (std::size_t m : gathered) gathered_by_[m] = static_cast<std::int64_t>(n);
      conv_pieces_[n] = std::move(pieces);
    }
  }

  /// Attention's heads are split by a reshape to [B, L, H, D] and a transpose
  /// to [B, H, L, D] (the layout sdpa takes), and joined again by the
  /// transpose back: an sdpa that is the only reader of such a transpose reads
  /// its input instead, rows H * D floats apart, and an sdpa whose output only
  /// such a transpose reads writes the transpose's output. Neither transpose
  /// is written out.
  void gather_sdpa_transposes(bool fuse) {
    sdpa_operands_.assign(graph_.nodes.size(), {});
    written_by_.assign(graph_.nodes.size(), -1);
    output_transpose_.assign(graph_.nodes.size(), -1);
    if (!fuse) return;
    const auto swaps_heads = [&](std::size_t m) {
      return holds<Transpose>(node(m).op) && get<Transpose>(node(m).op).perm == Ints{0, 2, 1, 3};
    };
    for (std::size_t n = 0; n < graph_.nodes.size(); ++n) {
      if (!holds<Sdpa>(node(n).op)) continue;
      std::vector<ValueId> operands(node(n).inputs.begin(), node(n).inputs.begin() + 3);
      operands.push_back(node(n).outputs[0]);
      bool any = false;
      for (std::size_t i = 0; i < 3; ++i) {
        const std::optional<std::size_t> p = private_producer(operands[i]);
        if (!p || !swaps_heads(*p)) continue;
        gathered_by_[*p] = static_cast<std::int64_t>(n);
        operands[i] = node(*p).inputs[0];
        any = true;
      }
      if (const ValueId y = operands[3]; uses_.single_private_reader(y) && swaps_heads(uses_.readers[y][0])) {
        const std::size_t m = uses_.readers[y][0];
        written_by_[m] = static_cast<std::int64_t>(n);
        output_transpose_[n] = static_cast<std::int64_t>(m);
        operands[3] = node(m).outputs[0];
        any = true;
      }
      if (any) sdpa_operands_[n] = std::move(operands);
    }
  }

  /// A reduction that alone reads a group's output (a group that is no
  /// product's epilogue) computes that output slab by slab as it reduces
  /// (exec/kernels/reduce.hpp): a weighted sum of a mixture's experts, a sum
  /// of squares, is never written out.
  void choose_prologues(bool fuse) {
    prologue_root_.assign(graph_.nodes.size(), -1);
    if (!fuse) return;
    std::vector<bool> has_epilogue(graph_.nodes.size(), false);
    for (std::int64_t root : epilogue_owner_)
      if (root >= 0) has_epilogue[static_cast<std::size_t>(root)] = true;
    for (std::size_t n = 0; n < graph_.nodes.size(); ++n) {
      const AnyOp& op = node(n).op;
      const Ints* axes = holds<ReduceSum>(op)    ? &get<ReduceSum>(op).axes
                         : holds<ReduceMean>(op) ? &get<ReduceMean>(op).axes
                         : holds<ReduceMax>(op)  ? &get<ReduceMax>(op).axes
                         : holds<ReduceMin>(op)  ? &get<ReduceMin>(op).axes
                                                 : nullptr;
      if (!axes) continue;
      const ValueId x = node(n).inputs[0];
      const std::optional<std::size_t> root = private_producer(x);
      if (!root || !is_root_[*root] || has_epilogue[*root] || type(x).dtype != DType::f32) continue;
      const Shape& shape = type(x).shape;
      if (ReduceKernel::prologue_slab(shape, normalize_axes(*axes, shape.size(), "reduce")) == 0) continue;
      prologue_root_[n] = static_cast<std::int64_t>(*root);
      for (std::size_t m : members(*root)) gathered_by_[m] = static_cast<std::int64_t>(n);
    }
  }

  /// The node producing v, when v is an intermediate only that one node reads.
  std::optional<std::size_t> private_producer(ValueId v) const {
    if (!uses_.single_private_reader(v) || uses_.producer[v] < 0) return std::nullopt;
    return static_cast<std::size_t>(uses_.producer[v]);
  }

  /// v = reshape(broadcast_to(reshape(s))) with s [N, C, H, W] going through
  /// [N, C, H, 1, W, 1] and [N, C, H, sh, W, sw] to [N, C, H*sh, W*sw] (how
  /// PyTorch exports nearest upsampling), each step read only by the next:
  /// s as a piece scaled sh x sw; its three nodes are added to `gathered`.
  std::optional<ChannelPiece> nearest_upsampling(ValueId v, std::vector<std::size_t>& gathered) const {
    const std::optional<std::size_t> last = private_producer(v);
    if (!last || !holds<Reshape>(node(*last).op)) return std::nullopt;
    const std::optional<std::size_t> repeat = private_producer(node(*last).inputs[0]);
    if (!repeat || !holds<BroadcastTo>(node(*repeat).op)) return std::nullopt;
    const std::optional<std::size_t> first = private_producer(node(*repeat).inputs[0]);
    if (!first || !holds<Reshape>(node(*first).op)) return std::nullopt;
    const ValueId source = node(*first).inputs[0];
    const Shape &s = type(source).shape, &unit = type(node(*first).outputs[0]).shape;
    const Shape &wide = type(node(*repeat).outputs[0]).shape, &out = type(v).shape;
    if (s.size() != 4 || unit != Shape{s[0], s[1], s[2], 1, s[3], 1} || wide.size() != 6 ||
        wide != Shape{s[0], s[1], s[2], wide[3], s[3], wide[5]} || wide[3] < 1 || wide[5] < 1 ||
        out != Shape{s[0], s[1], s[2] * wide[3], s[3] * wide[5]})
      return std::nullopt;
    gathered.insert(gathered.end(), {*first, *repeat, *last});
    return ChannelPiece{source, s[1], wide[3], wide[5]};
  }

  std::size_t group_root(std::size_t set) const {
    for (std::size_t n = 0; n < graph_.nodes.size(); ++n)
      if (in_group_[n] && is_root_[n] && group_of_[n] == set) return n;
    return set;
  }

  /// A conv epilogue sees the output as [N, O, H*W]: each leaf must cover
  /// the whole plane or be constant over it.
  bool conv_epilogue_ok(std::size_t root, ValueId product) const {
    const Shape& y = type(product).shape;
    for (std::size_t n : members(root))
      for (ValueId v : node(n).inputs) {
        if (uses_.producer[v] >= 0 && absorbed_[uses_.producer[v]] && holds<Slice>(node(uses_.producer[v]).op))
          return false;  // read in place with its own strides, which the view cannot merge
        Shape s = type(leaf_value(v)).shape;
        if (s.size() > 4) return false;
        while (s.size() < 4) s.insert(s.begin(), 1);
        const bool full = s[2] == y[2] && s[3] == y[3], none = s[2] == 1 && s[3] == 1;
        if (!full && !none) return false;
      }
    return true;
  }

  /// How a group reads value v from outside: v itself, an absorbed
  /// broadcast_to's source, or an absorbed slice's input in place.
  ElementwiseGroup::Leaf leaf_of(ValueId v) const {
    const std::int64_t p = uses_.producer[v];
    if (p < 0 || !absorbed_[p]) return {v, type(v).shape, {}, 0};
    const ValueId source = node(p).inputs[0];
    if (!holds<Slice>(node(p).op)) return {source, type(source).shape, {}, 0};
    const Shape& x = type(source).shape;
    const Shape contiguous = contiguous_strides(x);
    ElementwiseGroup::Leaf leaf{source, type(v).shape, Shape(x.size(), 0), 0};
    const auto ranges = get<Slice>(node(p).op).ranges(x);
    for (std::size_t d = 0; d < ranges.size(); ++d) {
      // (A lone element's step may be huge: only a step between two taken elements is walked.)
      if (ranges[d].count > 1) leaf.strides[d] = ranges[d].step * contiguous[d];
      leaf.offset += ranges[d].start * contiguous[d];
    }
    return leaf;
  }

  /// A 4-D NCHW-broadcastable shape as seen in the [N, O, H*W] view.
  static Shape view_shape(Shape shape) {
    while (shape.size() < 4) shape.insert(shape.begin(), 1);
    return {shape[0], shape[1], shape[2] * shape[3]};
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
      ElementwiseGroup::Leaf leaf = leaf_of(v);
      if (view) leaf.shape = view_shape(leaf.shape);
      const auto same = std::find(leaves.begin(), leaves.end(), leaf);
      const int index = static_cast<int>(same - leaves.begin());
      if (same == leaves.end()) leaves.push_back(std::move(leaf));
      operand_of.emplace_back(v, index);
      return index;
    };
    auto from_outside = [&](ValueId v) {
      const std::int64_t p = uses_.producer[v];
      return p < 0 || !in_group_[p] || group_of_[p] != group_of_[root];
    };
    // Leaves first (operand indices below the temps), in a stable order.
    for (std::size_t n : group)
      for (ValueId v : node(n).inputs)
        if (from_outside(v)) operand(v);
    const int leaf_count = static_cast<int>(leaves.size());
    for (std::size_t n : group) {
      Types in;
      for (ValueId v : node(n).inputs) in.push_back(type(v));
      ElementwiseGroup::Instr instr{block_function(node(n).op, in), {}, std::string(op_name(node(n).op)), block_cost(node(n).op)};
      for (ValueId v : node(n).inputs) instr.args.push_back(operand(v));
      instrs.push_back(std::move(instr));
      operand_of.emplace_back(node(n).outputs[0], leaf_count + static_cast<int>(instrs.size()) - 1);
    }
    const ValueId out = node(root).outputs[0];
    return ElementwiseGroup(view ? *view : type(out).shape, out, std::move(leaves), std::move(instrs), keep_last);
  }

  const Graph& graph_;
  const std::vector<std::size_t>& order_;
  const GraphUses& uses_;
  std::vector<bool> absorbed_, in_group_, is_root_;
  std::vector<std::size_t> group_of_;
  std::vector<std::int64_t> epilogue_owner_;  // per node: the root of its epilogue group, or -1
  std::vector<std::int64_t> gathered_by_;     // per node: the conv or sdpa whose kernel runs it, or -1
  std::vector<std::vector<ChannelPiece>> conv_pieces_;  // per node: its conv's input pieces, if gathered
  std::vector<std::vector<ValueId>> sdpa_operands_;    // per sdpa node with a gathered transpose: q, k, v read, y written
  std::vector<std::int64_t> written_by_;      // per node: the sdpa whose kernel writes its output, or -1
  std::vector<std::int64_t> output_transpose_;  // per sdpa node: the transpose whose output it writes, or -1
  std::vector<std::int64_t> prologue_root_;     // per reduction node: the root of its prologue group, or -1
};

}  // namespace rml::exec
