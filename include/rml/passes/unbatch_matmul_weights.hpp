// unbatch_matmul_weights: a constant matmul weight of rank > 2 whose batch
// slices are all equal (PyTorch's LSTM input projection) becomes its 2-D
// slice, so the executor runs the batch as one matrix product.
#pragma once

#include "rml/passes/common.hpp"

namespace rml::passes {

struct UnbatchMatmulWeights {
  static constexpr std::string_view name = "unbatch_matmul_weights";

  static void run(Rewriter& rw) {
    const std::size_t count = rw.graph().nodes.size();
    for (std::size_t n = 0; n < count; ++n) {
      const Node node = rw.graph().nodes[n];
      if (!is_live(rw, node) || !holds<MatMul>(node.op)) continue;
      const ValueId w = node.inputs[1];
      if (!rw.is_constant(w) || rw.shape(w).size() <= 2 || !all_slices_equal(rw.data(w))) continue;
      const Shape& s = rw.shape(w);
      const Shape matrix{s[s.size() - 2], s.back()};
      const Types now = types_with(rw, n, 1, {rw.type(w).dtype, matrix});
      if (now.size() != 1 || now[0] != rw.type(node.outputs[0])) continue;
      Ints axes, starts, ends;
      for (std::size_t d = 0; d + 2 < s.size(); ++d) {
        axes.push_back(static_cast<std::int64_t>(d));
        starts.push_back(0);
        ends.push_back(1);
      }
      const Tensor first = compute(Slice{axes, starts, ends, {}}, {&rw.data(w)});
      rw.replace_input(n, 1, rw.add_constant(compute(Reshape{matrix}, {&first}), rw.graph().values[w].name));
      rw.graph().values[w].name.clear();
    }
  }

 private:
  static bool all_slices_equal(const Tensor& t) {
    const Shape& s = t.shape();
    const std::size_t matrix = static_cast<std::size_t>(s[s.size() - 2] * s.back()) * 4;
    const std::size_t count = static_cast<std::size_t>(t.elements()) * 4 / std::max<std::size_t>(matrix, 1);
    for (std::size_t i = 1; i < count; ++i)
      if (std::memcmp(t.raw(), t.raw() + i * matrix, matrix) != 0) return false;
    return true;
  }
};

}  // namespace rml::passes
