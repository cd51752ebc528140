// fold_batch_norm: an inference batch norm after a convolution or a matrix
// product (a multiply by a per-channel constant and an add of one, as every
// exporter lowers it: python/rml/lowering/nn.py) goes into the product's
// constant weights and bias:
//
//   conv2d(x, W, b) * s  ->  conv2d(x, W * s[o], b * s)
//   conv2d(x, W, b) + t  ->  conv2d(x, W, b + t)
//   matmul(x, W) * s     ->  matmul(x, W * s[n])        (s along the last axis)
//
// when the product has no other reader and its weights (and bias) are
// constants. A conv -> batch norm -> relu then runs as one convolution with
// its relu applied as it stores. Scaling the weights before the sum rounds
// differently from scaling the sum: outputs move by a few ulp.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "rml/passes/common.hpp"

namespace rml::passes {

struct FoldBatchNorm {
  static constexpr std::string_view name = "fold_batch_norm";

  static void run(Rewriter& rw) {
    const std::size_t count = rw.graph().nodes.size();
    for (std::size_t n = 0; n < count; ++n) {
      const Node node = rw.graph().nodes[n];
      if (!is_live(rw, node) || node.outputs.size() != 1) continue;
      const bool mul = holds<Mul>(node.op);
      if (!mul && !holds<Add>(node.op)) continue;
      for (std::size_t slot = 0; slot < 2; ++slot)
        if (fold(rw, node, node.inputs[slot], node.inputs[1 - slot], mul)) break;
    }
  }

 private:
  /// Folds `node` (product op constant) into the product's producer if it can.
  static bool fold(Rewriter& rw, const Node& node, ValueId product, ValueId constant, bool mul) {
    const Node* producer = rw.producer(product);
    if (!producer || !rw.single_use(product) || !rw.is_constant(constant) ||
        rw.type(constant).dtype != DType::f32 || rw.type(node.outputs[0]) != rw.type(product))
      return false;
    if (holds<Conv2d>(producer->op)) return fold_into_conv(rw, node, *producer, constant, mul);
    if (holds<MatMul>(producer->op) && mul) return fold_into_matmul(rw, node, *producer, constant);
    return false;
  }

  /// The constant's value per channel when it varies along axis `axis` of a
  /// rank-`rank` output only (or not at all): `channels` values, else nothing.
  static std::optional<std::vector<float>> per_channel(const Rewriter& rw, ValueId c, std::size_t rank, std::size_t axis,
                                                       std::int64_t channels) {
    Shape s = rw.shape(c);
    if (s.size() > rank) return std::nullopt;
    s.insert(s.begin(), rank - s.size(), 1);
    for (std::size_t d = 0; d < rank; ++d)
      if (s[d] != 1 && !(d == axis && s[d] == channels)) return std::nullopt;
    const auto values = rw.data(c).values<float>();
    std::vector<float> out(static_cast<std::size_t>(channels));
    for (std::int64_t o = 0; o < channels; ++o) out[o] = values[s[axis] == 1 ? 0 : o];
    return out;
  }

  static bool fold_into_conv(Rewriter& rw, const Node& node, const Node& conv, ValueId constant, bool mul) {
    const ValueId w = conv.inputs[1];
    const bool has_bias = conv.inputs.size() > 2;
    if (!rw.is_constant(w) || (has_bias && !rw.is_constant(conv.inputs[2]))) return false;
    const std::int64_t outputs = rw.shape(w)[0];
    const auto factors = per_channel(rw, constant, 4, 1, outputs);
    if (!factors) return false;
    std::vector<ValueId> inputs{conv.inputs[0], w};
    if (mul) {
      const std::int64_t per_output = rw.data(w).elements() / std::max<std::int64_t>(outputs, 1);
      inputs[1] = scaled(rw, w, *factors, [&](std::int64_t i) { return i / per_output; });
      if (has_bias) inputs.push_back(scaled(rw, conv.inputs[2], *factors, [](std::int64_t i) { return i; }));
    } else {
      Tensor sum(TensorType{DType::f32, {outputs}});
      for (std::int64_t o = 0; o < outputs; ++o)
        sum.values<float>()[o] = (has_bias ? rw.data(conv.inputs[2]).values<float>()[o] : 0.0f) + (*factors)[o];
      // The sum keeps the conv bias's name, or else the added constant's (TensorFlow's bias parameter).
      std::string name = has_bias ? taken_name(rw, conv.inputs[2]) : std::string();
      if (name.empty()) name = taken_name(rw, constant);
      inputs.push_back(rw.add_constant(std::move(sum), std::move(name)));
    }
    rw.replace_uses(node.outputs[0], rw.add(conv.op, inputs));
    return true;
  }

  static bool fold_into_matmul(Rewriter& rw, const Node& node, const Node& matmul, ValueId constant) {
    const ValueId w = matmul.inputs[1];
    if (!rw.is_constant(w) || rw.shape(w).size() != 2) return false;
    const std::int64_t columns = rw.shape(w)[1];
    const std::size_t rank = rw.shape(node.outputs[0]).size();
    const auto factors = per_channel(rw, constant, rank, rank - 1, columns);
    if (!factors) return false;
    const ValueId scaled_w = scaled(rw, w, *factors, [&](std::int64_t i) { return i % columns; });
    rw.replace_uses(node.outputs[0], rw.add(matmul.op, {matmul.inputs[0], scaled_w}));
    return true;
  }

  /// A copy of constant `c` with element i multiplied by factors[channel(i)].
  template <class Channel>
  static ValueId scaled(Rewriter& rw, ValueId c, const std::vector<float>& factors, Channel channel) {
    Tensor copy = rw.data(c);
    auto values = copy.values<float>();
    for (std::int64_t i = 0; i < copy.elements(); ++i) values[i] = values[i] * factors[channel(i)];
    return rw.add_constant(std::move(copy), taken_name(rw, c));
  }

  /// A constant's name, moved to its replacement when this was its only use.
  static std::string taken_name(Rewriter& rw, ValueId c) {
    std::string name;
    if (rw.single_use(c)) std::swap(name, rw.graph().values[c].name);
    return name;
  }
};

}  // namespace rml::passes
