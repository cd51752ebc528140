// Layout and indexing ops: reshape, transpose, broadcast_to, slice, concat,
// pad, gather, top_k. Every expected value is a hand-written literal.
#include "op_test_util.hpp"

using namespace op_test;
using doctest::Contains;

// ---------------------------------------------------------------- reshape

TEST_CASE("reshape keeps the row-major element order under the new shape") {
  check_f32(run(rml::Reshape{.shape = {3, 2}}, {f32({2, 3}, {1, 2, 3, 4, 5, 6})}), {3, 2},
            {1, 2, 3, 4, 5, 6});
  check_i32(run(rml::Reshape{.shape = {2, 1, 2}}, {i32({4}, {4, 3, 2, 1})}), {2, 1, 2},
            {4, 3, 2, 1});
}

TEST_CASE("reshape infers a single -1 from the element count") {
  check_f32(run(rml::Reshape{.shape = {2, -1}}, {f32({6}, {1, 2, 3, 4, 5, 6})}), {2, 3},
            {1, 2, 3, 4, 5, 6});
  check_f32(run(rml::Reshape{.shape = {-1}}, {f32({2, 3}, {1, 2, 3, 4, 5, 6})}), {6},
            {1, 2, 3, 4, 5, 6});
  check_f32(run(rml::Reshape{.shape = {-1, 1, 3}}, {f32({2, 3}, {1, 2, 3, 4, 5, 6})}), {2, 1, 3},
            {1, 2, 3, 4, 5, 6});
}

TEST_CASE("reshape to and from rank 0") {
  check_f32(run(rml::Reshape{.shape = {}}, {f32({1, 1}, {7})}), {}, {7});
  check_f32(run(rml::Reshape{.shape = {1, 1}}, {Tensor::scalar(7.0f)}), {1, 1}, {7});
  check_f32(run(rml::Reshape{.shape = {-1}}, {Tensor::scalar(7.0f)}), {1}, {7});
}

TEST_CASE("reshape of size-0 tensors: 0 is a literal dimension and -1 resolves to 0") {
  check_f32(run(rml::Reshape{.shape = {-1}}, {f32({0, 3}, {})}), {0}, {});
  check_f32(run(rml::Reshape{.shape = {0, 5}}, {f32({3, 0}, {})}), {0, 5}, {});
  check_i32(run(rml::Reshape{.shape = {3, -1}}, {i32({0, 3}, {})}), {3, 0}, {});
}

TEST_CASE("reshape shape-rule errors") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH_AS(run(rml::Reshape{.shape = {-1, -1}}, {x}),
                       Contains("op 'reshape': attribute 'shape' [-1, -1] has more than one -1"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Reshape{.shape = {-2, 3}}, {x}),
                       Contains("attribute 'shape' [-2, 3] has a negative dimension"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Reshape{.shape = {4}}, {x}),
                       Contains("cannot reshape [2, 3] (6 elements) to [4] (4 elements)"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Reshape{.shape = {4, -1}}, {x}),
                       Contains("cannot reshape [2, 3] to [4, -1]"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Reshape{.shape = {0, -1}}, {f32({0, 3}, {})}),
                       Contains("cannot reshape [0, 3] to [0, -1]"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Reshape{.shape = {i64_max, 2}}, {x}),
                       Contains("attribute 'shape': size overflows 64 bits"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Reshape{.shape = {6}}, {x, x}),
                       Contains("op 'reshape' takes 1 inputs, got 2"), rml::Error);
}

// ---------------------------------------------------------------- transpose

TEST_CASE("transpose of a matrix swaps rows and columns") {
  check_f32(run(rml::Transpose{.perm = {1, 0}}, {f32({2, 3}, {1, 2, 3, 4, 5, 6})}), {3, 2},
            {1, 4, 2, 5, 3, 6});
}

TEST_CASE("transpose: output axis i is input axis perm[i]") {
  // x[j][k][i] = 12j + 4k + i, x of shape [2, 3, 4]; out[i][j][k] = x[j][k][i].
  std::vector<std::int32_t> x(24);
  for (std::int32_t v = 0; v < 24; ++v) x[v] = v;
  check_i32(run(rml::Transpose{.perm = {2, 0, 1}}, {i32({2, 3, 4}, x)}), {4, 2, 3},
            {0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21,  //
             2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23});
}

TEST_CASE("transpose of rank 0 (perm []) and of size-0 tensors") {
  check_f32(run(rml::Transpose{.perm = {}}, {Tensor::scalar(3.0f)}), {}, {3});
  check_f32(run(rml::Transpose{.perm = {1, 0}}, {f32({0, 2}, {})}), {2, 0}, {});
}

TEST_CASE("transpose shape-rule errors: perm length, repeats, out of range, negative, arity") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH_AS(run(rml::Transpose{.perm = {0}}, {x}),
                       Contains("op 'transpose': attribute 'perm' [0] does not match rank 2"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Transpose{.perm = {0, 0}}, {x}),
                       Contains("attribute 'perm' [0, 0] is not a permutation of 0..1"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Transpose{.perm = {0, 2}}, {x}),
                       Contains("is not a permutation of 0..1"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Transpose{.perm = {-1, 0}}, {x}),
                       Contains("is not a permutation of 0..1"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Transpose{.perm = {1, 0}}, {}),
                       Contains("op 'transpose' takes 1 inputs, got 0"), rml::Error);
}

// ---------------------------------------------------------------- broadcast_to

TEST_CASE("broadcast_to repeats a row and adds missing leading axes") {
  check_f32(run(rml::BroadcastTo{.shape = {2, 3}}, {f32({3}, {1, 2, 3})}), {2, 3},
            {1, 2, 3, 1, 2, 3});
}

TEST_CASE("broadcast_to stretches size-1 axes (right-aligned)") {
  check_f32(run(rml::BroadcastTo{.shape = {2, 2, 3}}, {f32({2, 1}, {1, 2})}), {2, 2, 3},
            {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2});
  check_i32(run(rml::BroadcastTo{.shape = {2, 2}}, {i32({}, {5})}), {2, 2}, {5, 5, 5, 5});
}

TEST_CASE("broadcast_to: same shape is the identity and 1 stretches to 0") {
  check_f32(run(rml::BroadcastTo{.shape = {2}}, {f32({2}, {1, 2})}), {2}, {1, 2});
  check_f32(run(rml::BroadcastTo{.shape = {0, 3}}, {f32({1, 3}, {1, 2, 3})}), {0, 3}, {});
  check_f32(run(rml::BroadcastTo{.shape = {}}, {Tensor::scalar(4.0f)}), {}, {4});
}

TEST_CASE("broadcast_to shape-rule errors: lower rank, mismatched or negative dim, overflow") {
  CHECK_THROWS_WITH_AS(
      run(rml::BroadcastTo{.shape = {3}}, {f32({2, 3}, {1, 2, 3, 4, 5, 6})}),
      Contains("op 'broadcast_to': cannot broadcast [2, 3] to the lower-rank [3]"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::BroadcastTo{.shape = {3}}, {f32({2}, {1, 2})}),
                       Contains("cannot broadcast [2] to [3]"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::BroadcastTo{.shape = {-1, 2}}, {f32({2}, {1, 2})}),
                       Contains("attribute 'shape': negative dimension in [-1, 2]"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::BroadcastTo{.shape = {i64_max, 2}}, {f32({2}, {1, 2})}),
                       Contains("attribute 'shape': size overflows 64 bits"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::BroadcastTo{.shape = {2}}, {f32({2}, {1, 2}), f32({2}, {1, 2})}),
                       Contains("op 'broadcast_to' takes 1 inputs, got 2"), rml::Error);
}

// ---------------------------------------------------------------- slice

namespace {
const Tensor six = f32({6}, {0, 1, 2, 3, 4, 5});

rml::Slice slice1(std::int64_t start, std::int64_t end, std::int64_t step = 1) {
  return rml::Slice{.axes = {0}, .starts = {start}, .ends = {end}, .steps = {step}};
}
}  // namespace

TEST_CASE("slice takes x[start:end] with negative indices counted from the end") {
  // steps left empty: every step is 1
  check_f32(run(rml::Slice{.axes = {0}, .starts = {1}, .ends = {3}, .steps = {}}, {six}), {2},
            {1, 2});
  check_f32(run(slice1(1, -1), {six}), {4}, {1, 2, 3, 4});  // x[1:-1]
  check_f32(run(slice1(-2, i64_max), {six}), {2}, {4, 5});  // x[-2:]
}

TEST_CASE("slice with positive steps: x[::2], x[1:6:2], x[0:5:4]") {
  check_f32(run(slice1(0, i64_max, 2), {six}), {3}, {0, 2, 4});
  check_f32(run(slice1(1, 6, 2), {six}), {3}, {1, 3, 5});
  check_f32(run(slice1(0, 5, 4), {six}), {2}, {0, 4});
  check_f32(run(slice1(1, 6, 100), {six}), {1}, {1});  // a step past the end takes the start
}

TEST_CASE("slice with negative steps: x[::-1], x[5:1:-2], x[-1:-3:-1], x[::-3]") {
  check_f32(run(slice1(-1, i64_min, -1), {six}), {6}, {5, 4, 3, 2, 1, 0});
  check_f32(run(slice1(i64_max, i64_min, -1), {six}), {6}, {5, 4, 3, 2, 1, 0});
  check_f32(run(slice1(5, 1, -2), {six}), {2}, {5, 3});
  check_f32(run(slice1(-1, -3, -1), {six}), {2}, {5, 4});
  check_f32(run(slice1(-1, i64_min, -3), {f32({7}, {0, 1, 2, 3, 4, 5, 6})}), {3}, {6, 3, 0});
  check_f32(run(slice1(5, i64_min, -100), {six}), {1}, {5});
}

TEST_CASE("slice with a step of magnitude INT64_MAX (or INT64_MIN) takes just the start (NumPy)") {
  SUBCASE("x[0:6:INT64_MAX]") { check_f32(run(slice1(0, 6, i64_max), {six}), {1}, {0}); }
  SUBCASE("x[5::-INT64_MAX]") { check_f32(run(slice1(5, i64_min, -i64_max), {six}), {1}, {5}); }
  SUBCASE("x[5::INT64_MIN] clamps the step") { check_f32(run(slice1(5, i64_min, i64_min), {six}), {1}, {5}); }
}

TEST_CASE("slice clamps out-of-range bounds like NumPy (x[-100:100], x[100:-100:-1])") {
  check_f32(run(slice1(-100, 100), {six}), {6}, {0, 1, 2, 3, 4, 5});
  check_f32(run(slice1(100, -100, -1), {six}), {6}, {5, 4, 3, 2, 1, 0});
  check_f32(run(slice1(100, i64_max), {six}), {0}, {});    // x[100:]
  check_f32(run(slice1(-100, -99), {six}), {0}, {});       // x[-100:-99]
  check_f32(run(slice1(-100, i64_min, -1), {six}), {0}, {});  // x[-100::-1]
}

TEST_CASE("slice is empty when start is past end for the step's direction") {
  check_f32(run(slice1(4, 2), {six}), {0}, {});
  check_f32(run(slice1(2, 4, -1), {six}), {0}, {});
  check_f32(run(slice1(3, 3), {six}), {0}, {});
}

TEST_CASE("slice on several axes, a negative axis, leaving unlisted axes whole") {
  const Tensor x = f32({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  // x[2:3, 1:3]
  check_f32(
      run(rml::Slice{.axes = {-1, 0}, .starts = {1, 2}, .ends = {3, 3}, .steps = {}}, {x}),
      {1, 2}, {9, 10});
  // x[:, 2:]
  check_f32(run(rml::Slice{.axes = {1}, .starts = {2}, .ends = {i64_max}, .steps = {}}, {x}),
            {3, 2}, {2, 3, 6, 7, 10, 11});
  // x[::-2, ::-3]
  check_f32(run(rml::Slice{.axes = {0, 1}, .starts = {-1, -1}, .ends = {i64_min, i64_min},
                           .steps = {-2, -3}},
                {x}),
            {2, 2}, {11, 8, 3, 0});
}

TEST_CASE("slice with no axes is the identity, also at rank 0") {
  check_f32(run(rml::Slice{}, {six}), {6}, {0, 1, 2, 3, 4, 5});
  check_f32(run(rml::Slice{}, {Tensor::scalar(2.0f)}), {}, {2});
}

TEST_CASE("slice on i32 and on size-0 axes") {
  check_i32(run(slice1(-1, i64_min, -1), {i32({3}, {1, 2, i32_min})}), {3}, {i32_min, 2, 1});
  check_f32(run(slice1(-1, i64_min, -1), {f32({0}, {})}), {0}, {});
  check_f32(run(slice1(1, i64_max), {f32({2, 0}, {})}), {1, 0}, {});
}

TEST_CASE("slice shape-rule errors: list lengths, zero step, bad or repeated axis") {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  CHECK_THROWS_WITH_AS(
      run(rml::Slice{.axes = {0}, .starts = {0, 1}, .ends = {1}, .steps = {}}, {x}),
      Contains("op 'slice': attribute 'starts' needs 1 values, got 2"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Slice{.axes = {0}, .starts = {0}, .ends = {}, .steps = {}}, {x}),
                       Contains("attribute 'ends' needs 1 values, got 0"), rml::Error);
  CHECK_THROWS_WITH_AS(
      run(rml::Slice{.axes = {0}, .starts = {0}, .ends = {1}, .steps = {1, 1}}, {x}),
      Contains("attribute 'steps' needs 1 values, got 2"), rml::Error);
  CHECK_THROWS_WITH_AS(run(slice1(0, 1, 0), {six}), Contains("attribute 'steps' has a zero step"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(
      run(rml::Slice{.axes = {2}, .starts = {0}, .ends = {1}, .steps = {}}, {x}),
      Contains("attribute 'axes': axis 2 is out of range for rank 2"), rml::Error);
  CHECK_THROWS_WITH_AS(
      run(rml::Slice{.axes = {0, -2}, .starts = {0, 0}, .ends = {1, 1}, .steps = {}}, {x}),
      Contains("attribute 'axes' repeats axis -2"), rml::Error);
  CHECK_THROWS_WITH_AS(run(slice1(0, 1), {six, six}), Contains("op 'slice' takes 1 inputs, got 2"),
                       rml::Error);
}

// ---------------------------------------------------------------- concat

TEST_CASE("concat joins along axis 0") {
  check_f32(run(rml::Concat{.axis = 0}, {f32({1, 2}, {1, 2}), f32({2, 2}, {3, 4, 5, 6})}), {3, 2},
            {1, 2, 3, 4, 5, 6});
}

TEST_CASE("concat joins three inputs along a negative inner axis; size-0 inputs add nothing") {
  check_f32(run(rml::Concat{.axis = -1},
                {f32({2, 1}, {1, 2}), f32({2, 2}, {3, 4, 5, 6}), f32({2, 0}, {})}),
            {2, 3}, {1, 3, 4, 2, 5, 6});
}

TEST_CASE("concat of one input is the identity; i32 works") {
  check_i32(run(rml::Concat{.axis = 0}, {i32({2}, {1, 2})}), {2}, {1, 2});
  check_i32(run(rml::Concat{.axis = 1}, {i32({1, 1}, {i32_min}), i32({1, 2}, {0, i32_max})}),
            {1, 3}, {i32_min, 0, i32_max});
}

TEST_CASE("concat shape-rule errors") {
  const Tensor a = f32({2, 2}, {1, 2, 3, 4});
  CHECK_THROWS_WITH_AS(run(rml::Concat{.axis = 0}, {a, i32({1, 2}, {1, 2})}),
                       Contains("op 'concat': input 1 is i32 but input 0 is f32"), rml::Error);
  CHECK_THROWS_WITH_AS(
      run(rml::Concat{.axis = 0}, {a, f32({2, 3}, {1, 2, 3, 4, 5, 6})}),
      Contains("input 1 has shape [2, 3], incompatible with [2, 2] for concatenation on axis 0"),
      rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Concat{.axis = 0}, {a, f32({2}, {1, 2})}),
                       Contains("input 1 has shape [2], incompatible with [2, 2]"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Concat{.axis = 2}, {a, a}),
                       Contains("attribute 'axis': axis 2 is out of range for rank 2"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Concat{.axis = 0}, {Tensor::scalar(1.0f), Tensor::scalar(2.0f)}),
                       Contains("axis 0 is out of range for rank 0"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Concat{.axis = 0}, {}),
                       Contains("op 'concat' takes at least 1 inputs, got 0"), rml::Error);
}

// ---------------------------------------------------------------- pad

TEST_CASE("pad order is [begins..., ends...] per axis") {
  // begins [1, 0], ends [0, 2]: one row on top, two columns on the right.
  check_f32(run(rml::Pad{.pads = {1, 0, 0, 2}}, {f32({2, 2}, {1, 2, 3, 4})}), {3, 4},
            {0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0});
}

TEST_CASE("pad fills with `value`, which defaults to 0") {
  CHECK(rml::Pad{}.value == 0.0);
  check_f32(run(rml::Pad{.pads = {2, 1}, .value = -1.5}, {f32({2}, {1, 2})}), {5},
            {-1.5f, -1.5f, 1, 2, -1.5f});
  check_i32(run(rml::Pad{.pads = {1, 1}, .value = 7}, {i32({1}, {1})}), {3}, {7, 1, 7});
}

TEST_CASE("pad with zero pads is the identity; rank 0 and size-0 inputs") {
  check_f32(run(rml::Pad{.pads = {0, 0}}, {f32({2}, {1, 2})}), {2}, {1, 2});
  check_f32(run(rml::Pad{.pads = {}}, {Tensor::scalar(3.0f)}), {}, {3});
  check_f32(run(rml::Pad{.pads = {0, 1, 0, 1}, .value = 3}, {f32({2, 0}, {})}), {2, 2},
            {3, 3, 3, 3});
}

TEST_CASE("pad shape-rule errors: wrong length, negative pads, arity") {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  CHECK_THROWS_WITH_AS(run(rml::Pad{.pads = {1, 1}}, {x}),
                       Contains("op 'pad': attribute 'pads' needs 4 values, got 2"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Pad{.pads = {0, 0, -1, 0}}, {x}),
                       Contains("attribute 'pads' [0, 0, -1, 0] is negative (cropping is a slice)"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Pad{.pads = {0, 0, 0, 0}}, {}),
                       Contains("op 'pad' takes 1 inputs, got 0"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Pad{.pads = {i64_max, 1}}, {f32({1}, {1})}),
                       Contains("op 'pad': padded shape: size overflows 64 bits"), rml::Error);
}

TEST_CASE("pad on i32 data needs an integer value within the i32 range") {
  const Tensor x = i32({1}, {7});
  check_i32(run(rml::Pad{.pads = {1, 0}, .value = -2147483648.0}, {x}), {2}, {i32_min, 7});
  for (double bad : {2.5, 2147483648.0, static_cast<double>(qnan)}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(run(rml::Pad{.pads = {1, 0}, .value = bad}, {x}),
                         Contains("is not an i32, as the i32 input needs"), rml::Error);
  }
}

// ---------------------------------------------------------------- gather

TEST_CASE("gather takes rows along axis 0 (NumPy take)") {
  check_f32(run(rml::Gather{.axis = 0}, {f32({3, 2}, {1, 2, 3, 4, 5, 6}), i32({2}, {2, 0})}),
            {2, 2}, {5, 6, 1, 2});
}

TEST_CASE("gather along a negative axis picks columns") {
  check_f32(run(rml::Gather{.axis = -1}, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), i32({2}, {2, 0})}),
            {2, 2}, {3, 1, 6, 4});
}

TEST_CASE("gather: negative indices count from the end, repeats allowed, i32 data") {
  check_i32(run(rml::Gather{.axis = 0}, {i32({3}, {10, 20, 30}), i32({4}, {-1, -3, 0, -1})}), {4},
            {30, 10, 10, 30});
}

TEST_CASE("gather: the indices' shape replaces the axis (rank-0 index drops it)") {
  const Tensor data = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  check_f32(run(rml::Gather{.axis = 1}, {data, i32({2, 2}, {0, 1, 2, 2})}), {2, 2, 2},
            {1, 2, 3, 3, 4, 5, 6, 6});
  check_f32(run(rml::Gather{.axis = 0}, {data, i32({}, {1})}), {3}, {4, 5, 6});
}

TEST_CASE("gather with no indices gives a size-0 axis, also from an empty axis") {
  check_f32(run(rml::Gather{.axis = 0}, {f32({2}, {1, 2}), i32({0}, {})}), {0}, {});
  check_f32(run(rml::Gather{.axis = 0}, {f32({0, 2}, {}), i32({0}, {})}), {0, 2}, {});
}

TEST_CASE("gather: an index outside [-dim, dim) is an error at evaluation") {
  const Tensor data = f32({3}, {1, 2, 3});
  CHECK_THROWS_WITH_AS(
      run(rml::Gather{.axis = 0}, {data, i32({2}, {0, 3})}),
      Contains("op 'gather': gather: index 3 at position 1 is out of range for axis 0 of size 3"),
      rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Gather{.axis = 0}, {data, i32({1}, {-4})}),
                       Contains("index -4 at position 0 is out of range"), rml::Error);
}

TEST_CASE("gather checks every index even when the output is empty") {
  CHECK_THROWS_WITH_AS(run(rml::Gather{.axis = 1}, {f32({0, 3}, {}), i32({1}, {5})}),
                       Contains("index 5 at position 0 is out of range for axis 1 of size 3"),
                       rml::Error);
}

TEST_CASE("gather shape-rule errors") {
  const Tensor data = f32({2, 2}, {1, 2, 3, 4});
  CHECK_THROWS_WITH_AS(run(rml::Gather{.axis = 0}, {data, f32({1}, {0})}),
                       Contains("op 'gather': input 1 must be i32, got f32"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Gather{.axis = 2}, {data, i32({1}, {0})}),
                       Contains("attribute 'axis': axis 2 is out of range for rank 2"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Gather{.axis = 0}, {Tensor::scalar(1.0f), i32({1}, {0})}),
                       Contains("axis 0 is out of range for rank 0"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Gather{.axis = 0}, {f32({0, 2}, {}), i32({1}, {0})}),
                       Contains("cannot gather from the empty axis 0 of [0, 2]"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Gather{.axis = 0}, {data}),
                       Contains("op 'gather' takes 2 inputs, got 1"), rml::Error);
}

// ---------------------------------------------------------------- top_k

TEST_CASE("top_k gives the k largest, descending, with their i32 indices") {
  const auto out = run_all(rml::TopK{.k = 3}, {f32({5}, {3, 1, 4, 1, 5})});
  REQUIRE(out.size() == 2);
  check_f32(out[0], {3}, {5, 4, 3});
  check_i32(out[1], {3}, {4, 2, 0});
}

TEST_CASE("top_k ties go to the lowest index") {
  const auto out = run_all(rml::TopK{.k = 4}, {f32({5}, {2, 7, 7, 1, 7})});
  check_f32(out[0], {4}, {7, 7, 7, 2});
  check_i32(out[1], {4}, {1, 2, 4, 0});
}

TEST_CASE("top_k ranks NaN as the largest value, above inf") {
  const auto out = run_all(rml::TopK{.k = 4}, {f32({5}, {1, qnan, inf, qnan, -inf})});
  check_f32(out[0], {4}, {qnan, qnan, inf, 1});
  check_i32(out[1], {4}, {1, 3, 2, 0});
}

TEST_CASE("top_k works along the last axis of every row") {
  const auto out = run_all(rml::TopK{.k = 2}, {f32({2, 3}, {1, 3, 2, 6, 5, 4})});
  check_f32(out[0], {2, 2}, {3, 2, 6, 5});
  check_i32(out[1], {2, 2}, {1, 2, 0, 1});
}

TEST_CASE("top_k on i32 keeps the value dtype") {
  const auto out = run_all(rml::TopK{.k = 3}, {i32({3}, {i32_min, 5, i32_max})});
  check_i32(out[0], {3}, {i32_max, 5, i32_min});
  check_i32(out[1], {3}, {2, 1, 0});
}

TEST_CASE("top_k with k = 0 and on size-0 inputs gives empty outputs") {
  auto out = run_all(rml::TopK{.k = 0}, {f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  check_f32(out[0], {2, 0}, {});
  check_i32(out[1], {2, 0}, {});
  out = run_all(rml::TopK{.k = 0}, {f32({2, 0}, {})});
  check_f32(out[0], {2, 0}, {});
  out = run_all(rml::TopK{.k = 1}, {f32({0, 3}, {})});
  check_f32(out[0], {0, 1}, {});
}

TEST_CASE("top_k's k defaults to 1 in C++ but is required in a file") {
  CHECK(rml::TopK{}.k == 1);
  CHECK_THROWS_WITH_AS(op("top_k", rml::Json::object()), Contains("missing attribute 'k'"),
                       rml::Error);
}

TEST_CASE("top_k shape-rule errors: k outside [0, dim], rank 0, arity") {
  const Tensor x = f32({3}, {1, 2, 3});
  CHECK_THROWS_WITH_AS(run_all(rml::TopK{.k = 4}, {x}),
                       Contains("op 'top_k': attribute 'k' = 4 is outside [0, 3] for shape [3]"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(run_all(rml::TopK{.k = -1}, {x}),
                       Contains("attribute 'k' = -1 is outside [0, 3]"), rml::Error);
  CHECK_THROWS_WITH_AS(run_all(rml::TopK{.k = 1}, {Tensor::scalar(1.0f)}),
                       Contains("input 0 must have rank at least 1, got shape []"), rml::Error);
  CHECK_THROWS_WITH_AS(run_all(rml::TopK{.k = 1}, {x, x}),
                       Contains("op 'top_k' takes 1 inputs, got 2"), rml::Error);
}
