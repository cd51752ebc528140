// Compute ops: reductions, matmul, conv2d and pools, softmax, layer_norm,
// gelu and sdpa. Exact ops are compared exactly against hand-computed
// literals; transcendental ones within 1e-6 relative of known values.
#include "op_test_util.hpp"

using namespace op_test;
using doctest::Contains;

namespace {

/// A reduction over `axes`, keep_dims as given.
template <class Op>
Op reduce(rml::Ints axes, bool keep_dims = false) {
  Op r;
  r.axes = std::move(axes);
  r.keep_dims = keep_dims;
  return r;
}

const Tensor m23 = f32({2, 3}, {1, 2, 3, 4, 5, 6});

}  // namespace

// ---------------------------------------------------------------- reductions

TEST_CASE("reduce_sum over one axis, including a negative one") {
  check_f32(run(reduce<rml::ReduceSum>({1}), {m23}), {2}, {6, 15});
  check_f32(run(reduce<rml::ReduceSum>({0}), {m23}), {3}, {5, 7, 9});
  check_f32(run(reduce<rml::ReduceSum>({-1}), {m23}), {2}, {6, 15});
}

TEST_CASE("reduce_sum over every axis gives rank 0, whatever the axis order") {
  check_f32(run(reduce<rml::ReduceSum>({0, 1}), {m23}), {}, {21});
  check_f32(run(reduce<rml::ReduceSum>({-1, 0}), {m23}), {}, {21});
}

TEST_CASE("keep_dims leaves reduced axes as size 1, and defaults to false") {
  CHECK_FALSE(rml::ReduceSum{}.keep_dims);
  check_f32(run(reduce<rml::ReduceSum>({1}, true), {m23}), {2, 1}, {6, 15});
  check_f32(run(reduce<rml::ReduceMax>({0}, true), {m23}), {1, 3}, {4, 5, 6});
  check_f32(run(reduce<rml::ReduceMean>({0, 1}, true), {m23}), {1, 1}, {3.5f});
  check_f32(run(op("reduce_min", {{"axes", {1}}, {"keep_dims", true}}), {m23}), {2, 1}, {1, 4});
}

TEST_CASE("an empty axes list reduces nothing (identity), also at rank 0") {
  const Tensor x = f32({2, 2}, {1, -2, qnan, 4});
  check_f32(run(reduce<rml::ReduceSum>({}), {x}), {2, 2}, {1, -2, qnan, 4});
  check_f32(run(reduce<rml::ReduceMean>({}), {x}), {2, 2}, {1, -2, qnan, 4});
  check_f32(run(reduce<rml::ReduceMax>({}), {x}), {2, 2}, {1, -2, qnan, 4});
  check_f32(run(reduce<rml::ReduceMin>({}), {x}), {2, 2}, {1, -2, qnan, 4});
  check_i32(run(reduce<rml::ReduceSum>({}), {i32({}, {7})}), {}, {7});
  check_f32(run(reduce<rml::ReduceMax>({}), {f32({0}, {})}), {0}, {});
}

TEST_CASE("reduce_sum on i32 is exact and wraps modulo 2^32") {
  check_i32(run(reduce<rml::ReduceSum>({1}), {i32({2, 2}, {1, 2, 30, 40})}), {2}, {3, 70});
  // INT32_MAX + 1 + 5 wraps to INT32_MIN + 5
  check_i32(run(reduce<rml::ReduceSum>({0}), {i32({3}, {i32_max, 1, 5})}), {}, {-2147483643});
}

TEST_CASE("reduce_sum over a size-0 axis gives 0; over other axes of an empty tensor, empty") {
  check_f32(run(reduce<rml::ReduceSum>({1}), {f32({2, 0}, {})}), {2}, {0, 0});
  check_i32(run(reduce<rml::ReduceSum>({0}), {i32({0}, {})}), {}, {0});
  check_f32(run(reduce<rml::ReduceSum>({1}), {f32({0, 2}, {})}), {0}, {});
}

TEST_CASE("reduce_mean averages over the listed axes") {
  check_f32(run(reduce<rml::ReduceMean>({1}), {m23}), {2}, {2, 5});
  check_f32(run(reduce<rml::ReduceMean>({-2}), {m23}), {3}, {2.5f, 3.5f, 4.5f});
  check_f32(run(reduce<rml::ReduceMean>({0, 1}), {m23}), {}, {3.5f});
}

TEST_CASE("reduce_mean over a size-0 axis gives NaN") {
  check_f32(run(reduce<rml::ReduceMean>({1}), {f32({2, 0}, {})}), {2}, {qnan, qnan});
  check_f32(run(reduce<rml::ReduceMean>({0}), {f32({0}, {})}), {}, {qnan});
}

TEST_CASE("reduce_mean is f32-only") {
  CHECK_THROWS_WITH_AS(run(reduce<rml::ReduceMean>({0}), {i32({2}, {1, 2})}),
                       Contains("op 'reduce_mean': input 0 must be f32, got i32"), rml::Error);
}

TEST_CASE("reduce_max and reduce_min pick the extremes along the axes") {
  const Tensor x = f32({2, 3}, {1, 5, 3, 4, 2, 6});
  check_f32(run(reduce<rml::ReduceMax>({1}), {x}), {2}, {5, 6});
  check_f32(run(reduce<rml::ReduceMin>({1}), {x}), {2}, {1, 2});
  check_f32(run(reduce<rml::ReduceMax>({0}), {x}), {3}, {4, 5, 6});
  check_f32(run(reduce<rml::ReduceMin>({-2}), {x}), {3}, {1, 2, 3});
  check_f32(run(reduce<rml::ReduceMax>({0}), {f32({2}, {-inf, -inf})}), {}, {-inf});
  check_f32(run(reduce<rml::ReduceMin>({0}), {f32({2}, {inf, inf})}), {}, {inf});
}

TEST_CASE("reduce_max and reduce_min propagate NaN wherever it sits") {
  const Tensor x = f32({4, 3}, {qnan, 1, 2, 1, qnan, 2, 1, 2, qnan, -inf, 0, inf});
  check_f32(run(reduce<rml::ReduceMax>({1}), {x}), {4}, {qnan, qnan, qnan, inf});
  check_f32(run(reduce<rml::ReduceMin>({1}), {x}), {4}, {qnan, qnan, qnan, -inf});
  check_f32(run(reduce<rml::ReduceMax>({0}), {x}), {3}, {qnan, qnan, qnan});
}

TEST_CASE("reduce_max and reduce_min on i32 reach the i32 extremes") {
  const Tensor x = i32({4}, {0, i32_min, i32_max, -1});
  check_i32(run(reduce<rml::ReduceMax>({0}), {x}), {}, {i32_max});
  check_i32(run(reduce<rml::ReduceMin>({0}), {x}), {}, {i32_min});
  check_i32(run(reduce<rml::ReduceMax>({0}), {i32({1}, {i32_min})}), {}, {i32_min});
  check_i32(run(reduce<rml::ReduceMin>({0}), {i32({1}, {i32_max})}), {}, {i32_max});
}

TEST_CASE("reduce_max and reduce_min over a size-0 axis are shape-rule errors") {
  CHECK_THROWS_WITH_AS(
      run(reduce<rml::ReduceMax>({1}), {f32({2, 0}, {})}),
      Contains("op 'reduce_max': cannot reduce the empty axis 1 of [2, 0]: "
               "reduce_max has no identity"),
      rml::Error);
  CHECK_THROWS_WITH_AS(
      run(reduce<rml::ReduceMin>({-1}), {i32({0}, {})}),
      Contains("cannot reduce the empty axis 0 of [0]: reduce_min has no identity"), rml::Error);
  // reducing a non-empty axis of an empty tensor is fine
  check_f32(run(reduce<rml::ReduceMax>({1}), {f32({0, 3}, {})}), {0}, {});
}

TEST_CASE("reduce axes out of range or repeated are errors, for every reduction") {
  for (const char* name : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"}) {
    CAPTURE(name);
    CHECK_THROWS_WITH_AS(run(op(name, {{"axes", {2}}}), {m23}),
                         Contains("attribute 'axes': axis 2 is out of range for rank 2"),
                         rml::Error);
    CHECK_THROWS_WITH_AS(run(op(name, {{"axes", {-3}}}), {m23}),
                         Contains("axis -3 is out of range for rank 2"), rml::Error);
    CHECK_THROWS_WITH_AS(run(op(name, {{"axes", {1, -1}}}), {m23}),
                         Contains("attribute 'axes': axis -1 is repeated"), rml::Error);
    CHECK_THROWS_WITH_AS(run(op(name, {{"axes", {0}}}), {Tensor::scalar(1.0f)}),
                         Contains("axis 0 is out of range for rank 0"), rml::Error);
    CHECK_THROWS_WITH_AS(op(name, rml::Json::object()), Contains("missing attribute 'axes'"),
                         rml::Error);
    CHECK_THROWS_WITH_AS(run(op(name, {{"axes", {0}}}), {m23, m23}),
                         Contains("takes 1 inputs, got 2"), rml::Error);
  }
}

// ---------------------------------------------------------------- matmul

TEST_CASE("matmul multiplies a 2x3 by a 3x2 exactly, in f32 and i32") {
  check_f32(run(rml::MatMul{}, {m23, f32({3, 2}, {7, 8, 9, 10, 11, 12})}), {2, 2},
            {58, 64, 139, 154});
  check_i32(
      run(rml::MatMul{}, {i32({2, 3}, {1, 2, 3, 4, 5, 6}), i32({3, 2}, {7, 8, 9, 10, 11, 12})}),
      {2, 2}, {58, 64, 139, 154});
}

TEST_CASE("matmul: a 1-D left operand is a row vector whose axis is dropped") {
  check_f32(run(rml::MatMul{}, {f32({2}, {1, 2}), f32({2, 3}, {1, 2, 3, 4, 5, 6})}), {3},
            {9, 12, 15});
}

TEST_CASE("matmul: a 1-D right operand is a column vector whose axis is dropped") {
  check_f32(run(rml::MatMul{}, {f32({2, 2}, {1, 2, 3, 4}), f32({2}, {1, 1})}), {2}, {3, 7});
}

TEST_CASE("matmul of two 1-D operands is their dot product, of rank 0") {
  check_f32(run(rml::MatMul{}, {f32({3}, {1, 2, 3}), f32({3}, {4, 5, 6})}), {}, {32});
}

TEST_CASE("matmul broadcasts batch axes, across ranks and size-1 dims") {
  // [2] batch @ unbatched: [2, 1, 2] @ [2, 1] -> [2, 1, 1]
  check_f32(run(rml::MatMul{}, {f32({2, 1, 2}, {1, 2, 3, 4}), f32({2, 1}, {1, 10})}), {2, 1, 1},
            {21, 43});
  // batch [2, 1] with batch [3] -> [2, 3]; each product is a 1x1 @ 1x1
  check_f32(run(rml::MatMul{}, {f32({2, 1, 1, 1}, {1, 2}), f32({3, 1, 1}, {10, 20, 30})}),
            {2, 3, 1, 1}, {10, 20, 30, 20, 40, 60});
  // a 1-D operand against a batched matrix: [2] @ [2, 2, 1] -> [2, 1]
  check_f32(run(rml::MatMul{}, {f32({2}, {1, 1}), f32({2, 2, 1}, {1, 2, 3, 4})}), {2, 1}, {3, 7});
}

TEST_CASE("matmul on i32 wraps modulo 2^32") {
  check_i32(run(rml::MatMul{}, {i32({1}, {65536}), i32({1}, {65536})}), {}, {0});
  check_i32(run(rml::MatMul{}, {i32({1, 2}, {1, 1}), i32({2, 1}, {i32_max, 1})}), {1, 1},
            {i32_min});
}

TEST_CASE("matmul over a size-0 contracted axis gives zeros; size-0 rows give empty") {
  check_f32(run(rml::MatMul{}, {f32({2, 0}, {}), f32({0, 3}, {})}), {2, 3}, {0, 0, 0, 0, 0, 0});
  check_f32(run(rml::MatMul{}, {f32({0, 2}, {}), f32({2, 3}, {1, 2, 3, 4, 5, 6})}), {0, 3}, {});
}

TEST_CASE("matmul shape-rule errors") {
  CHECK_THROWS_WITH_AS(run(rml::MatMul{}, {Tensor::scalar(1.0f), f32({1}, {1})}),
                       Contains("op 'matmul': input 0 must have rank at least 1, got shape []"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::MatMul{}, {f32({1}, {1}), Tensor::scalar(1.0f)}),
                       Contains("input 1 must have rank at least 1"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::MatMul{}, {m23, f32({2, 2}, {1, 2, 3, 4})}),
                       Contains("contracted dimensions differ: [2, 3] @ [2, 2]"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::MatMul{}, {f32({3}, {1, 2, 3}), f32({2}, {1, 2})}),
                       Contains("contracted dimensions differ: [3] @ [2]"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::MatMul{}, {f32({2, 1, 1}, {1, 2}), f32({3, 1, 1}, {1, 2, 3})}),
                       Contains("batch dimensions: shapes [2] and [3] do not broadcast"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::MatMul{}, {f32({1}, {1}), i32({1}, {1})}),
                       Contains("input 1 is i32 but input 0 is f32"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::MatMul{}, {m23}), Contains("op 'matmul' takes 2 inputs, got 1"),
                       rml::Error);
}

// ---------------------------------------------------------------- conv2d

TEST_CASE("conv2d defaults: strides 1, no padding, dilation 1, one group") {
  const rml::Conv2d conv;
  CHECK(conv.strides == rml::Ints{1, 1});
  CHECK(conv.pads == rml::Ints{0, 0, 0, 0});
  CHECK(conv.dilations == rml::Ints{1, 1});
  CHECK(conv.groups == 1);
  CHECK(rml::same_op(op("conv2d", rml::Json::object()), rml::AnyOp(conv)));
}

TEST_CASE("conv2d is a cross-correlation: the kernel is not flipped") {
  // x = 1..9 (3x3), w = [[1, 2], [3, 4]]: out[0,0] = 1*1 + 2*2 + 3*4 + 4*5 = 37.
  check_f32(run(rml::Conv2d{}, {f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
                                f32({1, 1, 2, 2}, {1, 2, 3, 4})}),
            {1, 1, 2, 2}, {37, 47, 67, 77});
}

TEST_CASE("conv2d pads are [top, left, bottom, right]") {
  // One zero row on top, two zero columns on the right.
  check_f32(run(op("conv2d", {{"pads", {1, 0, 0, 2}}}),
                {f32({1, 1, 2, 2}, {1, 2, 3, 4}), f32({1, 1, 1, 1}, {1})}),
            {1, 1, 3, 4}, {0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0});
}

TEST_CASE("conv2d strides are [h, w] and the output size rounds down") {
  std::vector<float> x16(16), x25(25);
  for (int i = 0; i < 16; ++i) x16[i] = float(i + 1);
  for (int i = 0; i < 25; ++i) x25[i] = float(i + 1);
  const Tensor ones = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  check_f32(run(op("conv2d", {{"strides", {1, 2}}}), {f32({1, 1, 4, 4}, x16), ones}),
            {1, 1, 3, 2}, {14, 22, 30, 38, 46, 54});
  // (5 - 2) / 2 + 1 = 2: the last row and column are never reached.
  check_f32(run(op("conv2d", {{"strides", {2, 2}}}), {f32({1, 1, 5, 5}, x25), ones}),
            {1, 1, 2, 2}, {16, 24, 56, 64});
}

TEST_CASE("conv2d dilations spread the kernel taps") {
  const Tensor x = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor ones = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  check_f32(run(op("conv2d", {{"dilations", {2, 2}}}), {x, ones}), {1, 1, 1, 1}, {1 + 3 + 7 + 9});
  check_f32(run(op("conv2d", {{"dilations", {1, 2}}}), {x, ones}), {1, 1, 2, 1},
            {1 + 3 + 4 + 6, 4 + 6 + 7 + 9});
}

TEST_CASE("conv2d groups split the channels; one group sums over all of them") {
  const Tensor x = f32({1, 2, 1, 1}, {3, 5});
  // groups 2: outputs 0, 1 see channel 0 only; outputs 2, 3 see channel 1 only.
  check_f32(run(op("conv2d", {{"groups", 2}}), {x, f32({4, 1, 1, 1}, {1, 2, 3, 4})}),
            {1, 4, 1, 1}, {3, 6, 15, 20});
  check_f32(run(rml::Conv2d{}, {x, f32({2, 2, 1, 1}, {1, 2, 3, 4})}), {1, 2, 1, 1},
            {3 * 1 + 5 * 2, 3 * 3 + 5 * 4});
}

TEST_CASE("conv2d adds a per-output-channel bias, for every batch entry") {
  check_f32(run(rml::Conv2d{},
                {f32({2, 1, 1, 1}, {2, -1}), f32({2, 1, 1, 1}, {3, 4}), f32({2}, {10, 20})}),
            {2, 2, 1, 1}, {16, 28, 7, 16});
}

TEST_CASE("conv2d combines padding, strides and dilation") {
  // x[i][j] = 3i + j + 1 (4x3), one zero column left and right -> 4x5; 2x2 kernel of
  // ones with dilation [1, 2] (extent 2x3) and strides [2, 1] -> 2x3 outputs.
  // Output (0, 1) taps x rows 0-1, columns 0 and 2: 1 + 3 + 4 + 6 = 14; output
  // (0, 0) taps columns -1 (padding) and 1: 2 + 5 = 7.
  check_f32(run(op("conv2d", {{"pads", {0, 1, 0, 1}}, {"strides", {2, 1}}, {"dilations", {1, 2}}}),
                {f32({1, 1, 4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}),
                 f32({1, 1, 2, 2}, {1, 1, 1, 1})}),
            {1, 1, 2, 3}, {7, 14, 7, 8 + 11, 7 + 9 + 10 + 12, 8 + 11});
}

TEST_CASE("conv2d shape-rule errors") {
  const Tensor x = f32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor w = f32({2, 2, 1, 1}, {1, 2, 3, 4});
  auto conv = [](const rml::Json& attributes) { return op("conv2d", attributes); };
  CHECK_THROWS_WITH_AS(run(rml::Conv2d{}, {i32({1, 1, 1, 1}, {1}), f32({1, 1, 1, 1}, {1})}),
                       Contains("op 'conv2d': input 0 must be f32, got i32"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Conv2d{}, {x, w, i32({2}, {1, 2})}),
                       Contains("input 2 must be f32, got i32"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Conv2d{}, {f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), w}),
                       Contains("input 0 must have rank 4, got shape [2, 2, 2]"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Conv2d{}, {x, f32({2, 2}, {1, 2, 3, 4})}),
                       Contains("input 1 must have rank 4, got shape [2, 2]"), rml::Error);
  CHECK_THROWS_WITH_AS(run(conv({{"groups", 0}}), {x, w}),
                       Contains("attribute 'groups' must be positive, got 0"), rml::Error);
  CHECK_THROWS_WITH_AS(
      run(conv({{"groups", 3}}), {x, w}),
      Contains("groups = 3 must divide the input channels 2 and output channels 2"), rml::Error);
  CHECK_THROWS_WITH_AS(
      run(rml::Conv2d{}, {x, f32({2, 1, 1, 1}, {1, 2})}),
      Contains("weight [2, 1, 1, 1] expects 1 input channels, input [1, 2, 2, 2] has 2"),
      rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Conv2d{}, {x, w, f32({3}, {1, 2, 3})}),
                       Contains("bias must have shape [2], got [3]"), rml::Error);
  CHECK_THROWS_WITH_AS(run(conv({{"strides", {1}}}), {x, w}),
                       Contains("attribute 'strides' needs 2 values, got 1"), rml::Error);
  CHECK_THROWS_WITH_AS(run(conv({{"strides", {1, 0}}}), {x, w}),
                       Contains("attribute 'strides' must be positive, got [1, 0]"), rml::Error);
  CHECK_THROWS_WITH_AS(run(conv({{"pads", {0, 0}}}), {x, w}),
                       Contains("attribute 'pads' needs 4 values, got 2"), rml::Error);
  CHECK_THROWS_WITH_AS(run(conv({{"pads", {0, -1, 0, 0}}}), {x, w}),
                       Contains("attribute 'pads' must be non-negative, got [0, -1, 0, 0]"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(run(conv({{"dilations", {1, 1, 1}}}), {x, w}),
                       Contains("attribute 'dilations' needs 2 values, got 3"), rml::Error);
  CHECK_THROWS_WITH_AS(run(conv({{"dilations", {0, 1}}}), {x, w}),
                       Contains("attribute 'dilations' must be positive, got [0, 1]"), rml::Error);
  CHECK_THROWS_WITH_AS(
      run(rml::Conv2d{}, {x, f32({1, 2, 3, 1}, {1, 2, 3, 4, 5, 6})}),
      Contains("window of extent 3 does not fit the padded input of size 2 on spatial axis 0"),
      rml::Error);
  CHECK_THROWS_WITH_AS(
      run(conv({{"dilations", {1, 3}}}), {x, f32({2, 2, 1, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}),
      Contains("window of extent 4 does not fit the padded input of size 2 on spatial axis 1"),
      rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Conv2d{}, {x}), Contains("op 'conv2d' takes 2 to 3 inputs, got 1"),
                       rml::Error);
}

// ---------------------------------------------------------------- pools

TEST_CASE("max_pool2d takes the window maximum") {
  const Tensor x = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  check_f32(run(op("max_pool2d", {{"kernel", {2, 2}}, {"strides", {1, 1}}}), {x}), {1, 1, 2, 2},
            {5, 6, 8, 9});
  std::vector<float> x16(16);
  for (int i = 0; i < 16; ++i) x16[i] = float(i + 1);
  check_f32(
      run(op("max_pool2d", {{"kernel", {2, 2}}, {"strides", {2, 2}}}), {f32({1, 1, 4, 4}, x16)}),
      {1, 1, 2, 2}, {6, 8, 14, 16});
}

TEST_CASE("max_pool2d: padding never wins a max, even over negatives") {
  // pads [top 1, left 1, bottom 0, right 0]; a zero pad would win every window.
  check_f32(run(op("max_pool2d", {{"kernel", {2, 2}}, {"strides", {1, 1}}, {"pads", {1, 1, 0, 0}}}),
                {f32({1, 1, 2, 2}, {-4, -3, -2, -1})}),
            {1, 1, 2, 2}, {-4, -3, -2, -1});
}

TEST_CASE("max_pool2d propagates NaN") {
  check_f32(run(op("max_pool2d", {{"kernel", {1, 2}}, {"strides", {1, 1}}}),
                {f32({1, 1, 2, 2}, {1, qnan, 3, 4})}),
            {1, 1, 2, 1}, {qnan, 4});
}

TEST_CASE("max_pool2d with dilation looks only at the dilated taps") {
  // dilation 2 on a 3x3 input: the one window sees the corners 1, 2, 4, 5.
  check_f32(run(op("max_pool2d", {{"kernel", {2, 2}}, {"strides", {1, 1}}, {"dilations", {2, 2}}}),
                {f32({1, 1, 3, 3}, {1, 9, 2, 8, 3, 7, 4, 6, 5})}),
            {1, 1, 1, 1}, {5});
}

TEST_CASE("pools need kernel and strides in a file; pads, dilations, count_include_pad default") {
  CHECK_THROWS_WITH_AS(op("max_pool2d", {{"kernel", {2, 2}}}),
                       Contains("missing attribute 'strides'"), rml::Error);
  CHECK_THROWS_WITH_AS(op("avg_pool2d", {{"strides", {1, 1}}}),
                       Contains("missing attribute 'kernel'"), rml::Error);
  const rml::AvgPool2d pool =
      rml::get<rml::AvgPool2d>(op("avg_pool2d", {{"kernel", {2, 2}}, {"strides", {1, 1}}}));
  CHECK(pool.pads == rml::Ints{0, 0, 0, 0});
  CHECK(pool.dilations == rml::Ints{1, 1});
  CHECK_FALSE(pool.count_include_pad);
}

TEST_CASE("avg_pool2d takes the window mean, per channel plane") {
  check_f32(run(op("avg_pool2d", {{"kernel", {2, 2}}, {"strides", {1, 1}}}),
                {f32({1, 2, 2, 2}, {1, 2, 3, 4, -1, -2, -3, -4})}),
            {1, 2, 1, 1}, {2.5f, -2.5f});
  check_f32(run(op("avg_pool2d", {{"kernel", {2, 2}}, {"strides", {1, 1}}}),
                {f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})}),
            {1, 1, 2, 2}, {3, 4, 6, 7});
}

TEST_CASE("avg_pool2d counts padding only with count_include_pad") {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const rml::Json attributes = {{"kernel", {2, 2}}, {"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}};
  // Every 2x2 window covers one real element and three padding cells.
  check_f32(run(op("avg_pool2d", attributes), {x}), {1, 1, 2, 2}, {1, 2, 3, 4});
  rml::Json including = attributes;
  including["count_include_pad"] = true;
  check_f32(run(op("avg_pool2d", including), {x}), {1, 1, 2, 2}, {0.25f, 0.5f, 0.75f, 1});
}

TEST_CASE("avg_pool2d on a window half in the right padding") {
  // x = [1, 2, 4], kernel 1x2, stride 2, one pad on the right: windows [1, 2] and [4, pad].
  const rml::Json attributes = {{"kernel", {1, 2}}, {"strides", {1, 2}}, {"pads", {0, 0, 0, 1}}};
  const Tensor x = f32({1, 1, 1, 3}, {1, 2, 4});
  check_f32(run(op("avg_pool2d", attributes), {x}), {1, 1, 1, 2}, {1.5f, 4});
  rml::Json including = attributes;
  including["count_include_pad"] = true;
  check_f32(run(op("avg_pool2d", including), {x}), {1, 1, 1, 2}, {1.5f, 2});
}

TEST_CASE("pools reject padding as large as the window, which would pool nothing") {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  for (const char* name : {"max_pool2d", "avg_pool2d"}) {
    CAPTURE(name);
    CHECK_THROWS_WITH_AS(
        run(op(name, {{"kernel", {2, 2}}, {"strides", {1, 1}}, {"pads", {0, 2, 0, 0}}}), {x}),
        Contains("attribute 'pads' [0, 2, 0, 0] must be smaller than the window extent 2 on spatial axis 1"),
        rml::Error);
  }
}

TEST_CASE("conv2d rejects padding that overflows the padded size") {
  CHECK_THROWS_WITH_AS(run(rml::Conv2d{.pads = {i64_max, 0, 1, 0}}, {f32({1, 1, 1, 1}, {1}), f32({1, 1, 1, 1}, {1})}),
                       Contains("padded input: size overflows 64 bits"), rml::Error);
}

TEST_CASE("pool shape-rule errors") {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  for (const char* name : {"max_pool2d", "avg_pool2d"}) {
    CAPTURE(name);
    auto pool = [&](rml::Ints kernel, rml::Json extra = rml::Json::object()) {
      extra["kernel"] = kernel;
      if (!extra.contains("strides")) extra["strides"] = {1, 1};
      return op(name, extra);
    };
    CHECK_THROWS_WITH_AS(run(pool({2}), {x}), Contains("attribute 'kernel' needs 2 values, got 1"),
                         rml::Error);
    CHECK_THROWS_WITH_AS(run(pool({0, 1}), {x}),
                         Contains("attribute 'kernel' must be positive, got [0, 1]"), rml::Error);
    CHECK_THROWS_WITH_AS(run(pool({1, 1}, {{"strides", {0, 1}}}), {x}),
                         Contains("attribute 'strides' must be positive"), rml::Error);
    CHECK_THROWS_WITH_AS(run(pool({1, 1}, {{"strides", {1}}}), {x}),
                         Contains("attribute 'strides' needs 2 values, got 1"), rml::Error);
    CHECK_THROWS_WITH_AS(run(pool({1, 1}, {{"pads", {-1, 0, 0, 0}}}), {x}),
                         Contains("attribute 'pads' must be non-negative"), rml::Error);
    CHECK_THROWS_WITH_AS(run(pool({1, 1}, {{"pads", {0, 0, 0}}}), {x}),
                         Contains("attribute 'pads' needs 4 values, got 3"), rml::Error);
    CHECK_THROWS_WITH_AS(run(pool({1, 1}, {{"dilations", {1, 0}}}), {x}),
                         Contains("attribute 'dilations' must be positive"), rml::Error);
    CHECK_THROWS_WITH_AS(run(pool({1, 1}), {i32({1, 1, 1, 1}, {1})}),
                         Contains("input 0 must be f32, got i32"), rml::Error);
    CHECK_THROWS_WITH_AS(run(pool({1, 1}), {f32({1, 2, 2}, {1, 2, 3, 4})}),
                         Contains("input 0 must have rank 4, got shape [1, 2, 2]"), rml::Error);
    CHECK_THROWS_WITH_AS(
        run(pool({1, 3}), {x}),
        Contains("window of extent 3 does not fit the padded input of size 2 on spatial axis 1"),
        rml::Error);
    CHECK_THROWS_WITH_AS(run(pool({1, 1}), {x, x}), Contains("takes 1 inputs, got 2"), rml::Error);
  }
}

// ---------------------------------------------------------------- softmax

TEST_CASE("softmax defaults to the last axis and matches known values") {
  CHECK(rml::Softmax{}.axis == -1);
  check_near(run(rml::Softmax{}, {f32({3}, {1, 2, 3})}), {3},
             {0.0900305732f, 0.244728471f, 0.665240956f});
}

TEST_CASE("softmax normalises along the chosen axis only") {
  const Tensor x = f32({2, 2}, {0, 1, 0, 1});
  check_f32(run(rml::Softmax{.axis = 0}, {x}), {2, 2}, {0.5f, 0.5f, 0.5f, 0.5f});
  check_near(run(rml::Softmax{.axis = 1}, {x}), {2, 2},
             {0.268941421f, 0.731058579f, 0.268941421f, 0.731058579f});
  check_near(run(rml::Softmax{.axis = -2}, {f32({2, 1}, {0, 1})}), {2, 1},
             {0.268941421f, 0.731058579f});
}

TEST_CASE("softmax is stable for large inputs and handles -inf") {
  check_f32(run(rml::Softmax{}, {f32({2}, {1000, 1000})}), {2}, {0.5f, 0.5f});
  check_f32(run(rml::Softmax{}, {f32({2}, {1000, 0})}), {2}, {1, 0});
  check_f32(run(rml::Softmax{}, {f32({3}, {-inf, 0, -inf})}), {3}, {0, 1, 0});
}

TEST_CASE("softmax of one element is 1; size-0 stays empty") {
  check_f32(run(rml::Softmax{}, {f32({2, 1}, {-7, 3})}), {2, 1}, {1, 1});
  check_f32(run(rml::Softmax{}, {f32({0, 3}, {})}), {0, 3}, {});
}

TEST_CASE("softmax shape-rule errors: axis out of range (rank 0 too), i32, arity") {
  CHECK_THROWS_WITH_AS(
      run(rml::Softmax{}, {Tensor::scalar(1.0f)}),
      Contains("op 'softmax': attribute 'axis': axis -1 is out of range for rank 0"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Softmax{.axis = 2}, {m23}),
                       Contains("axis 2 is out of range for rank 2"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Softmax{}, {i32({2}, {1, 2})}),
                       Contains("input 0 must be f32, got i32"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Softmax{}, {m23, m23}),
                       Contains("op 'softmax' takes 1 inputs, got 2"), rml::Error);
}

// ---------------------------------------------------------------- layer_norm

TEST_CASE("layer_norm eps defaults to 1e-5 and is added to the variance") {
  CHECK(rml::LayerNorm{}.eps == 1e-5);
  // mean 2, variance 1: (x - 2) / sqrt(1 + 1e-5) = +-0.999995
  check_near(run(rml::LayerNorm{}, {f32({2}, {1, 3})}), {2}, {-0.999995f, 0.999995f});
  check_near(run(op("layer_norm", rml::Json::object()), {f32({2}, {1, 3})}), {2},
             {-0.999995f, 0.999995f});
}

TEST_CASE("layer_norm normalises each row over the last axis with the biased variance") {
  // row 0: mean 2, variance 4; row 1: mean 4, variance 4 (divided by 4, not 3).
  check_f32(run(rml::LayerNorm{.eps = 0}, {f32({2, 4}, {0, 0, 4, 4, 2, 6, 2, 6})}), {2, 4},
            {-1, -1, 1, 1, -1, 1, -1, 1});
}

TEST_CASE("layer_norm applies scale, then bias, per last-axis position") {
  const Tensor x = f32({2, 2}, {1, 3, 2, 6});  // both rows normalise to [-1, 1]
  check_f32(run(rml::LayerNorm{.eps = 0}, {x}), {2, 2}, {-1, 1, -1, 1});
  check_f32(run(rml::LayerNorm{.eps = 0}, {x, f32({2}, {2, 3})}), {2, 2}, {-2, 3, -2, 3});
  check_f32(run(rml::LayerNorm{.eps = 0}, {x, f32({2}, {2, 3}), f32({2}, {10, 20})}), {2, 2},
            {8, 23, 8, 23});
}

TEST_CASE("layer_norm on size-0 tensors gives empty outputs") {
  check_f32(run(rml::LayerNorm{}, {f32({0, 4}, {})}), {0, 4}, {});
  check_f32(run(rml::LayerNorm{}, {f32({3, 0}, {})}), {3, 0}, {});
}

TEST_CASE("layer_norm shape-rule errors") {
  const Tensor x = f32({2, 2}, {1, 3, 2, 6});
  CHECK_THROWS_WITH_AS(run(rml::LayerNorm{}, {i32({2}, {1, 2})}),
                       Contains("op 'layer_norm': input 0 must be f32, got i32"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::LayerNorm{}, {x, i32({2}, {1, 2})}),
                       Contains("input 1 must be f32, got i32"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::LayerNorm{}, {Tensor::scalar(1.0f)}),
                       Contains("input 0 must have rank at least 1, got shape []"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::LayerNorm{.eps = -1}, {x}),
                       Contains("attribute 'eps' must be non-negative, got -1"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::LayerNorm{.eps = double(qnan)}, {x}),
                       Contains("attribute 'eps' must be non-negative"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::LayerNorm{}, {x, f32({3}, {1, 2, 3})}),
                       Contains("input 1 must have shape [2], got [3]"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::LayerNorm{}, {x, f32({2}, {1, 2}), f32({1, 2}, {1, 2})}),
                       Contains("input 2 must have shape [2], got [1, 2]"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::LayerNorm{}, {x, x, x, x}),
                       Contains("op 'layer_norm' takes 1 to 3 inputs, got 4"), rml::Error);
}

// ---------------------------------------------------------------- gelu

TEST_CASE("gelu defaults to the exact erf form") {
  CHECK(rml::Gelu{}.approximate == "none");
  check_near(run(rml::Gelu{}, {f32({5}, {0, 1, -1, 2, 0.5f})}), {5},
             {0, 0.841344746f, -0.158655254f, 1.95449974f, 0.345731231f});
}

TEST_CASE("gelu with approximate = tanh uses the tanh form") {
  check_near(run(rml::Gelu{.approximate = "tanh"}, {f32({5}, {0, 1, -1, 2, 0.5f})}), {5},
             {0, 0.841191991f, -0.158808009f, 1.95459769f, 0.34571401f});
}

TEST_CASE("gelu keeps the shape, also rank 0 and size 0") {
  check_near(run(rml::Gelu{}, {Tensor::scalar(1.0f)}), {}, {0.841344746f});
  check_f32(run(rml::Gelu{}, {f32({0, 2}, {})}), {0, 2}, {});
}

TEST_CASE("gelu shape-rule errors: unknown approximation, i32, arity") {
  CHECK_THROWS_WITH_AS(run(rml::Gelu{.approximate = "fast"}, {f32({1}, {1})}),
                       Contains("op 'gelu': attribute 'approximate' must be \"none\" or \"tanh\", "
                                "got \"fast\""),
                       rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Gelu{}, {i32({1}, {1})}), Contains("input 0 must be f32, got i32"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Gelu{}, {}), Contains("op 'gelu' takes 1 inputs, got 0"),
                       rml::Error);
}

// ---------------------------------------------------------------- sdpa

namespace {
const Tensor v22 = f32({2, 2}, {1, 2, 3, 4});  // two keys' values: [1, 2] and [3, 4]
const Tensor k22 = f32({2, 2}, {1, 0, 0, 1});
}  // namespace

TEST_CASE("sdpa with equal scores averages the values") {
  CHECK_FALSE(rml::Sdpa{}.causal);
  CHECK_FALSE(rml::Sdpa{}.scale.has_value());
  check_f32(run(rml::Sdpa{}, {f32({1, 2}, {0, 0}), k22, v22}), {1, 2}, {2, 3});
}

TEST_CASE("sdpa scale defaults to 1/sqrt(head dim); an explicit scale replaces it") {
  // D = 4: scores are q.k * scale = [2 * scale, 0]; out = e^s / (e^s + 1).
  const Tensor q = f32({1, 4}, {1, 0, 0, 0});
  const Tensor k = f32({2, 4}, {2, 0, 0, 0, 0, 0, 0, 0});
  const Tensor v = f32({2, 1}, {1, 0});
  check_near(run(rml::Sdpa{}, {q, k, v}), {1, 1}, {0.731058579f});  // scale 1/2
  check_near(run(rml::Sdpa{.causal = false, .scale = 1.0}, {q, k, v}), {1, 1}, {0.880797078f});
  check_near(run(op("sdpa", {{"scale", 2.0}}), {q, k, v}), {1, 1}, {0.98201379f});
}

TEST_CASE("sdpa causal hides key j from query i when j > i (top-left aligned)") {
  check_f32(run(rml::Sdpa{.causal = true, .scale = {}}, {f32({2, 2}, {0, 0, 0, 0}), k22, v22}),
            {2, 2}, {1, 2, 2, 3});
  // Lq = 2 < Lk = 3: query 0 sees key 0, query 1 sees keys 0 and 1.
  check_f32(run(rml::Sdpa{.causal = true, .scale = {}},
                {f32({2, 1}, {0, 0}), f32({3, 1}, {1, 1, 1}), f32({3, 1}, {1, 2, 6})}),
            {2, 1}, {1, 1.5f});
}

TEST_CASE("sdpa adds the mask to the scores, broadcasting it over query rows") {
  const Tensor q = f32({2, 2}, {0, 0, 0, 0});
  check_f32(run(rml::Sdpa{}, {q, k22, v22, f32({2}, {0, -inf})}), {2, 2}, {1, 2, 1, 2});
  check_f32(run(rml::Sdpa{}, {q, k22, v22, f32({2, 2}, {0, -inf, -inf, 0})}), {2, 2},
            {1, 2, 3, 4});
  // a finite mask reweights: ln 3 makes key 0 three times as likely as key 1
  check_near(run(rml::Sdpa{}, {q, k22, f32({2, 1}, {1, 5}), f32({2}, {1.09861229f, 0})}), {2, 1},
             {2, 2});
}

TEST_CASE("sdpa broadcasts the batch axes of q, k, v and the mask") {
  // batch from v only: [1, 2] q and [2, 2] k against [2, 2, 2] v -> [2, 1, 2]
  check_f32(run(rml::Sdpa{}, {f32({1, 2}, {0, 0}), k22, f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}),
            {2, 1, 2}, {2, 3, 6, 7});
  // batch [2, 1] (q) with batch [3] (v) -> [2, 3]; each output is the mean of its v
  check_f32(run(rml::Sdpa{}, {f32({2, 1, 1, 2}, {0, 0, 0, 0}), k22,
                              f32({3, 2, 1}, {1, 3, 2, 4, 3, 5})}),
            {2, 3, 1, 1}, {2, 3, 4, 2, 3, 4});
  // a batched mask: batch 0 sees both keys, batch 1 only key 0
  check_f32(run(rml::Sdpa{}, {f32({2, 1, 2}, {0, 0, 0, 0}), k22, v22,
                              f32({2, 1, 2}, {0, 0, 0, -inf})}),
            {2, 1, 2}, {2, 3, 1, 2});
}

TEST_CASE("sdpa with no keys gives zeros") {
  check_f32(run(rml::Sdpa{}, {f32({1, 2}, {1, 2}), f32({0, 2}, {}), f32({0, 3}, {})}), {1, 3}, {0, 0, 0});
}

TEST_CASE("sdpa shape-rule errors") {
  const Tensor q = f32({1, 2}, {0, 0});
  CHECK_THROWS_WITH_AS(run(rml::Sdpa{}, {f32({2}, {0, 0}), k22, v22}),
                       Contains("op 'sdpa': input 0 must have rank at least 2, got shape [2]"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Sdpa{}, {q, f32({2}, {0, 0}), v22}),
                       Contains("input 1 must have rank at least 2"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Sdpa{}, {q, k22, f32({2}, {0, 0})}),
                       Contains("input 2 must have rank at least 2"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Sdpa{}, {q, f32({2, 3}, {1, 2, 3, 4, 5, 6}), v22}),
                       Contains("key head dim 3 differs from query head dim 2"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Sdpa{}, {q, k22, f32({3, 2}, {1, 2, 3, 4, 5, 6})}),
                       Contains("value length 3 differs from key length 2"), rml::Error);
  CHECK_THROWS_WITH_AS(
      run(rml::Sdpa{}, {f32({2, 1, 2}, {0, 0, 0, 0}), f32({3, 2, 2}, std::vector<float>(12)), v22}),
      Contains("query and key batch: shapes [2] and [3] do not broadcast"), rml::Error);
  CHECK_THROWS_WITH_AS(
      run(rml::Sdpa{}, {f32({2, 1, 2}, {0, 0, 0, 0}), k22, f32({3, 2, 2}, std::vector<float>(12))}),
      Contains("value batch: shapes [2] and [3] do not broadcast"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Sdpa{}, {q, k22, v22, f32({3}, {0, 0, 0})}),
                       Contains("mask: shapes [1, 2] and [3] do not broadcast"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Sdpa{}, {q, k22, v22, f32({2, 1, 2}, {0, 0, 0, 0})}),
                       Contains("mask [2, 1, 2] does not broadcast to the scores [1, 2]"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Sdpa{}, {q, k22, v22, i32({2}, {0, 0})}),
                       Contains("input 3 must be f32, got i32"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Sdpa{}, {i32({1, 2}, {0, 0}), k22, v22}),
                       Contains("input 0 must be f32, got i32"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Sdpa{}, {q, k22}), Contains("op 'sdpa' takes 3 to 4 inputs, got 2"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Sdpa{}, {q, k22, v22, v22, v22}),
                       Contains("op 'sdpa' takes 3 to 4 inputs, got 5"), rml::Error);
}
