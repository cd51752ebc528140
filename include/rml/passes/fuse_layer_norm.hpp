// fuse_layer_norm: (x - mean x) * rsqrt(mean((x - mean x)^2) + eps) over the
// last axis becomes layer_norm, taking a following constant scale (another
// factor of the product) and bias (an added constant) along.
#pragma once

#include "rml/passes/common.hpp"

namespace rml::passes {

struct FuseLayerNorm {
  static constexpr std::string_view name = "fuse_layer_norm";

  static void run(Rewriter& rw) {
    const std::size_t count = rw.graph().nodes.size();
    for (std::size_t n = 0; n < count; ++n) {
      const Node node = rw.graph().nodes[n];
      if (!is_live(rw, node)) continue;
      if (holds<Add>(node.op)) {
        // (normalised * scale) + bias: either operand may be the bias.
        for (std::size_t slot = 0; slot < 2; ++slot)
          if (rw.is_constant(node.inputs[1 - slot]) && fuse(rw, node.outputs[0], node.inputs[slot], node.inputs[1 - slot]))
            break;
      } else if (holds<Mul>(node.op) && !inside_larger_match(rw, node.outputs[0])) {
        fuse(rw, node.outputs[0], node.outputs[0], std::nullopt);
      }
    }
  }

 private:
  /// A product only read by a larger product (its factors include this one's)
  /// or by an add with a constant (a bias): fuse from there, taking more along.
  static bool inside_larger_match(const Rewriter& rw, ValueId v) {
    if (!rw.single_use(v) || rw.readers(v).empty()) return false;
    const Node& reader = rw.graph().nodes[rw.readers(v)[0]];
    if (holds<Mul>(reader.op)) return true;
    return holds<Add>(reader.op) && std::any_of(reader.inputs.begin(), reader.inputs.end(),
                                                [&](ValueId in) { return in != v && rw.is_constant(in); });
  }

  /// A constant usable as layer_norm's [D] scale or bias: shape [.., 1, D].
  static std::optional<ValueId> as_vector(Rewriter& rw, ValueId c, std::int64_t d) {
    const Shape& s = rw.shape(c);
    if (rw.type(c).dtype != DType::f32 || s.empty() || s.back() != d) return std::nullopt;
    if (!std::all_of(s.begin(), s.end() - 1, [](std::int64_t x) { return x == 1; })) return std::nullopt;
    if (s.size() == 1) return c;
    // The name moves to the [D] copy when nothing else reads the original.
    std::string name;
    if (rw.single_use(c)) std::swap(name, rw.graph().values[c].name);
    return rw.add_constant(compute(Reshape{{d}}, {&rw.data(c)}), std::move(name));
  }

  /// Replaces `root` (the product, or product + bias) when `product` is a layer norm.
  static bool fuse(Rewriter& rw, ValueId root, ValueId product, std::optional<ValueId> bias) {
    std::vector<ValueId> parts = factors(rw, product);
    if (parts.size() < 2 || parts.size() > 3) return false;
    // Find the centred x and the rsqrt among the factors; a third must be the scale.
    for (std::size_t ci = 0; ci < parts.size(); ++ci)
      for (std::size_t ri = 0; ri < parts.size(); ++ri) {
        if (ci == ri) continue;
        ValueId x, centred = parts[ci], variance_sum;
        const ReduceMean *mean = nullptr, *variance = nullptr;
        float eps = 0;
        if (!op<Sub>(any(x), op<ReduceMean>(same(x)).bind(mean))(rw, centred)) continue;
        const auto squared = op<Mul>(same(centred), same(centred));
        if (!op<Rsqrt>(op<Add>(op<ReduceMean>(any(variance_sum)).bind(variance), scalar(eps)))(rw, parts[ri]) ||
            !squared(rw, variance_sum))
          continue;
        const std::int64_t last = static_cast<std::int64_t>(rw.shape(x).size()) - 1;
        auto over_last = [&](const ReduceMean* r) {
          return r->keep_dims && r->axes.size() == 1 && normalize_axis(r->axes[0], rw.shape(x).size()) == last;
        };
        if (last < 0 || !over_last(mean) || !over_last(variance) || rw.type(x).dtype != DType::f32) continue;
        const std::int64_t d = rw.shape(x).back();
        std::vector<ValueId> inputs{x};
        if (parts.size() == 3) {
          const ValueId scale_value = parts[3 - ci - ri];
          auto scale = rw.is_constant(scale_value) ? as_vector(rw, scale_value, d) : std::nullopt;
          if (!scale) continue;
          inputs.push_back(*scale);
        }
        if (bias) {
          auto b = as_vector(rw, *bias, d);
          if (!b) continue;
          if (inputs.size() == 1) {  // a bias without a scale: scale by ones
            Tensor ones(TensorType{DType::f32, {d}});
            std::fill(ones.values<float>().begin(), ones.values<float>().end(), 1.0f);
            inputs.push_back(rw.add_constant(std::move(ones)));
          }
          inputs.push_back(*b);
        }
        const ValueId fused = rw.add(LayerNorm{double(eps)}, inputs);
        if (rw.type(fused) != rw.type(root)) continue;
        rw.replace_uses(root, fused);
        return true;
      }
    return false;
  }
};

}  // namespace rml::passes
