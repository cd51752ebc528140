// Compiled by ctest (expect_compile.cmake) three ways. The registry's kernel
// check over a list holding a test op must fail, naming the op, when the op
// has no executor kernel (RML_NO_KERNEL) or is elementwise without a block
// function (RML_NO_BLOCK_FUNCTION), and must pass once both are declared.
#include "rml/exec/dispatch.hpp"

namespace test_ops {

/// A complete op struct, as the registry requires, for an op no kernel knows.
struct Frobnicate {
  static constexpr std::string_view name = "frobnicate";
  static constexpr std::string_view summary = "a test op";
  static constexpr std::string_view inputs = "x: f32";
  static constexpr std::string_view shape_rule = "out = x";
  static constexpr rml::Arity arity{1, 1};
  static constexpr auto fields() { return std::tuple{}; }
  rml::Types infer(rml::InputTypes in) const { return {in[0]}; }
};

/// The same, elementwise.
struct Twice : Frobnicate {
  static constexpr std::string_view name = "twice";
  static constexpr bool elementwise = true;
};

}  // namespace test_ops

#ifndef RML_NO_KERNEL
template <>
struct rml::exec::KernelFor<test_ops::Frobnicate> {
  static std::unique_ptr<Kernel> make(const PlanContext&, const Node&, const test_ops::Frobnicate&) { return nullptr; }
};
#endif
#ifndef RML_NO_BLOCK_FUNCTION
template <>
struct rml::exec::BlockFor<test_ops::Twice> {
  static BlockFn function(const test_ops::Twice&, const Types&) { return nullptr; }
};
#endif

static_assert(rml::exec::KernelCoverage<rml::OpList<rml::Add, rml::Softmax, test_ops::Frobnicate, test_ops::Twice>>::complete);

int main() {}
