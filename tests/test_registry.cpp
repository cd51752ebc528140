// Conformance over the whole op list, and the generated op documentation.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "rml/op_docs.hpp"
#include "rml/ref/evaluate.hpp"

using namespace rml;

TEST_CASE("every op is found by its name and made with its default attributes") {
  Registry::for_each([](auto tag) {
    using Op = typename decltype(tag)::type;
    CAPTURE(Op::name);
    const auto index = Registry::find(Op::name);
    REQUIRE(index.has_value());
    CHECK(Registry::make(Op::name).index() == *index);
    CHECK(holds<Op>(Registry::make(Op::name)));
    CHECK(!Op::summary.empty());
    CHECK(!Op::inputs.empty());
    CHECK(!Op::shape_rule.empty());
    CHECK(Op::arity.min <= Op::arity.max);
  });
}

TEST_CASE("an AnyOp copies, moves and assigns the op it holds, and names the op asked of it when it holds another") {
  const AnyOp conv = as_any_op(Conv2d{.strides = {2, 1}, .pads = {1, 2, 3, 4}, .dilations = {1, 2}, .groups = 2});
  AnyOp copy = conv;
  CHECK(same_op(copy, conv));
  CHECK(get<Conv2d>(copy).pads == Ints{1, 2, 3, 4});
  AnyOp moved = std::move(copy);
  CHECK(same_op(moved, conv));
  AnyOp other = as_any_op(Slice{.axes = {0}, .starts = {1}, .ends = {3}, .steps = {1}});
  other = moved;  // a Slice's vectors freed, the Conv2d's copied
  CHECK(holds<Conv2d>(other));
  CHECK(get<Conv2d>(other).groups == 2);
  other = as_any_op(Relu{});
  CHECK(holds<Relu>(other));
  CHECK(get_if<Conv2d>(&other) == nullptr);
  CHECK(get_if<Relu>(&other) != nullptr);
  CHECK(AnyOp().index() == 0);  // the first op, as std::variant
  CHECK_THROWS_WITH_AS(get<Conv2d>(other), doctest::Contains("op 'conv2d' asked of a node holding op number"), Error);
}

TEST_CASE("every op's attributes round-trip through JSON with equal value and hash") {
  Registry::for_each([](auto tag) {
    using Op = typename decltype(tag)::type;
    CAPTURE(Op::name);
    const AnyOp op = Op{};
    const Json attrs = op_attributes_json(op);
    const AnyOp back = op_from_json(Op::name, attrs);
    CHECK(same_op(op, back));
    CHECK(hash_op(op) == hash_op(back));
    CHECK(op_attributes_json(back) == attrs);
  });
}

TEST_CASE("a file missing a required attribute, or naming an unknown one, is rejected by name") {
  Registry::for_each([](auto tag) {
    using Op = typename decltype(tag)::type;
    CAPTURE(Op::name);
    const Json attrs = op_attributes_json(Op{});
    for_each_field<Op>([&](const auto& field) {
      if (!field.required) return;
      Json missing = attrs;
      missing.erase(std::string(field.name));
      const std::string expected = "missing attribute '" + std::string(field.name) + "'";
      CHECK_THROWS_WITH_AS(op_from_json(Op::name, missing), doctest::Contains(expected.c_str()), Error);
    });
    Json extra = attrs;
    extra["no_such_attribute"] = 1;
    CHECK_THROWS_WITH_AS(op_from_json(Op::name, extra),
                         doctest::Contains("unknown attribute 'no_such_attribute'"), Error);
  });
}

TEST_CASE("an unknown op name is an ExportError naming it") {
  CHECK_THROWS_WITH_AS(Registry::make("frobnicate"), "unknown op 'frobnicate'", ExportError);
  CHECK_THROWS_WITH_AS(op_from_json("conv3d", Json::object()), doctest::Contains("unknown op 'conv3d'"),
                       ExportError);
}

TEST_CASE("ill-typed attribute values are rejected naming the attribute") {
  CHECK_THROWS_WITH_AS(op_from_json("softmax", Json{{"axis", "last"}}),
                       doctest::Contains("attribute 'axis' must be an integer"), Error);
  CHECK_THROWS_WITH_AS(op_from_json("transpose", Json{{"perm", {0, 1.5}}}),
                       doctest::Contains("attribute 'perm' must be an integer"), Error);
  CHECK_THROWS_WITH_AS(op_from_json("cast", Json{{"to", "f64"}}), doctest::Contains("unknown dtype 'f64'"),
                       Error);
  CHECK_THROWS_WITH_AS(op_from_json("sdpa", Json{{"causal", 1}}),
                       doctest::Contains("attribute 'causal' must be true or false"), Error);
  CHECK_THROWS_WITH_AS(op_from_json("add", Json::array()), doctest::Contains("must be a JSON object"), Error);
}

TEST_CASE("op equality and hashing see every attribute") {
  CHECK(same_op(Softmax{.axis = 1}, Softmax{.axis = 1}));
  CHECK_FALSE(same_op(Softmax{.axis = 1}, Softmax{.axis = 0}));
  CHECK_FALSE(same_op(Add{}, Mul{}));
  CHECK(hash_op(Transpose{{1, 0}}) == hash_op(Transpose{{1, 0}}));
  CHECK(hash_op(Transpose{{1, 0}}) != hash_op(Transpose{{0, 1}}));
  CHECK_FALSE(same_op(Sdpa{.scale = 0.5}, Sdpa{}));
}

TEST_CASE("op properties: elementwise and commutative tags") {
  CHECK(is_elementwise<Add>);
  CHECK(is_elementwise<Exp>);
  CHECK(is_elementwise<Gelu>);
  CHECK_FALSE(is_elementwise<MatMul>);
  CHECK(is_commutative<Mul>);
  CHECK_FALSE(is_commutative<Sub>);
  CHECK_FALSE(is_commutative<Reshape>);
}

TEST_CASE("the registry's per-op tables hold each op's own constants") {
  Registry::for_each([](auto type) {
    using Op = typename decltype(type)::type;
    const AnyOp op = Op{};
    CAPTURE(Op::name);
    CHECK(op_name(op) == Op::name);
    CHECK(op_arity(op).min == Op::arity.min);
    CHECK(op_arity(op).max == Op::arity.max);
    CHECK(is_elementwise_op(op) == is_elementwise<Op>);
    CHECK(is_commutative_op(op) == is_commutative<Op>);
    CHECK(nothing_to_compute(op, Types{}) == !checks_input_values<Op>);
  });
  CHECK_FALSE(nothing_to_compute(Gather{}, Types{}));
}

TEST_CASE("error messages print every part as a stream would") {
  std::ostringstream stream;
  const std::string text = "text";
  const std::string_view view = "view";
  const std::filesystem::path path = "dir/file.json";
  stream << "a" << text << view << 'c' << true << -7 << 7u << std::int64_t{-1} << std::uint64_t{18446744073709551615u}
         << std::size_t{3} << 0.1 << 1e-30 << 2.5f << 123456789.0 << -0.0 << path;
  CHECK(detail::concat("a", text, view, 'c', true, -7, 7u, std::int64_t{-1}, std::uint64_t{18446744073709551615u},
                       std::size_t{3}, 0.1, 1e-30, 2.5f, 123456789.0, -0.0, path) == stream.str());
  try {
    fail(ErrorCode::invalid_shape, "shape ", 2, "x", 3u, " of '", view, "'");
    FAIL("fail() returned");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_shape);
    CHECK(std::string(e.what()) == "shape 2x3 of 'view'");
  }
}

TEST_CASE("wrong arity is an error naming the op and the counts") {
  const Types two{{DType::f32, {2}}, {DType::f32, {2}}};
  CHECK_THROWS_WITH_AS(infer_types(Exp{}, two), "op 'exp' takes 1 inputs, got 2", Error);
  CHECK_THROWS_WITH_AS(infer_types(LayerNorm{}, Types{}), "op 'layer_norm' takes 1 to 3 inputs, got 0", Error);
  CHECK_THROWS_WITH_AS(infer_types(Concat{}, Types{}), "op 'concat' takes at least 1 inputs, got 0", Error);
}

namespace {
/// The part of a committed doc between two markers, which a generator owns.
std::string generated_part(const char* doc_path, const std::string& begin, const std::string& end) {
  std::ifstream in(doc_path);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const auto from = doc.find(begin), to = doc.find(end);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  return doc.substr(from + begin.size(), to - from - begin.size());
}
}  // namespace

TEST_CASE("docs/ops.md holds exactly the op table the registry generates") {
  INFO("regenerate with `make ops-doc`");
  CHECK(generated_part(RML_SOURCE_DIR "/docs/ops.md", "<!-- BEGIN GENERATED OP TABLE -->\n",
                       "<!-- END GENERATED OP TABLE -->") == op_table_markdown());
}

TEST_CASE("docs/errors.md holds exactly the error catalogue rml::ErrorCode generates") {
  INFO("regenerate with `make ops-doc`");
  CHECK(generated_part(RML_SOURCE_DIR "/docs/errors.md", "<!-- BEGIN GENERATED ERROR TABLE -->\n",
                       "<!-- END GENERATED ERROR TABLE -->") == error_table_markdown());
}

TEST_CASE("error codes: numbers and names are unique, and names map back to codes") {
  std::set<int> numbers;
  std::set<std::string_view> names;
  for (const ErrorCodeInfo& info : error_codes) {
    CAPTURE(info.name);
    CHECK(numbers.insert(static_cast<int>(info.code)).second);
    CHECK(names.insert(info.name).second);
    CHECK(error_code_named(info.name) == info.code);
    CHECK(error_code_name(info.code) == info.name);
    CHECK_FALSE(info.meaning.empty());
  }
  CHECK_FALSE(error_code_named("no_such_code").has_value());
  // An error keeps its code through added context.
  try {
    try {
      fail(ErrorCode::graph_cycle, "a cycle");
    } catch (const Error&) {
      rethrow_with_context("node 3");
    }
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::graph_cycle);
    CHECK(std::string(e.what()) == "node 3: a cycle");
  }
}
