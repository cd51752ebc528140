// Conformance over the whole op list, and the generated op documentation.
#include <doctest/doctest.h>

#include <fstream>
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

TEST_CASE("wrong arity is an error naming the op and the counts") {
  const Types two{{DType::f32, {2}}, {DType::f32, {2}}};
  CHECK_THROWS_WITH_AS(infer_types(Exp{}, two), "op 'exp' takes 1 inputs, got 2", Error);
  CHECK_THROWS_WITH_AS(infer_types(LayerNorm{}, Types{}), "op 'layer_norm' takes 1 to 3 inputs, got 0", Error);
  CHECK_THROWS_WITH_AS(infer_types(Concat{}, Types{}), "op 'concat' takes at least 1 inputs, got 0", Error);
}

TEST_CASE("docs/ops.md holds exactly the op table the registry generates") {
  std::ifstream in(RML_SOURCE_DIR "/docs/ops.md");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const std::string begin = "<!-- BEGIN GENERATED OP TABLE -->\n", end = "<!-- END GENERATED OP TABLE -->";
  const auto from = doc.find(begin), to = doc.find(end);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  const std::string committed = doc.substr(from + begin.size(), to - from - begin.size());
  INFO("regenerate with `make ops-doc`");
  CHECK(committed == op_table_markdown());
}
