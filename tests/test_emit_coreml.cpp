// The CoreML converter, structurally: the package's files, the weight blob's
// layout and the MIL program's ops, decoded with the wire-format reader, for
// hand-built graphs; and writing a package as one folder. coremltools loads
// every fixture's package and rebuilds its program in the Python tier
// (tests/python/test_coreml.py).
#include <doctest/doctest.h>

#include <cstring>

#include "rml/emit/converters.hpp"
#include "test_util.hpp"

using namespace rml;
using namespace rml::emit;
using rml::test::TempDir;

namespace {

const FolderFile* file_in(const ConvertedModel& m, std::string_view path) {
  for (const FolderFile& f : m.package)
    if (f.path == path) return &f;
  return nullptr;
}

/// Every field numbered `number` of a message.
std::vector<protobuf::Field> fields(std::string_view message, int number) {
  std::vector<protobuf::Field> out;
  for (const protobuf::Field& f : protobuf::read_message(message))
    if (f.number == number) out.push_back(f);
  return out;
}
std::string_view field(std::string_view message, int number) {
  const auto found = fields(message, number);
  REQUIRE(found.size() == 1);
  return found[0].bytes;
}

/// A map entry's value, by key.
std::string_view map_value(std::string_view message, int number, std::string_view key) {
  for (const protobuf::Field& entry : fields(message, number))
    if (field(entry.bytes, 1) == key) return field(entry.bytes, 2);
  FAIL("no map entry ", key);
  return {};
}

struct MilOp {
  std::string type, output;
  int dtype;
  Shape shape;
  std::map<std::string, std::string> inputs;  // parameter -> first bound name
};

/// The main block's ops: type, first output's name, dtype and shape, inputs.
std::vector<MilOp> mil_ops(const ConvertedModel& m) {
  const std::string_view function = map_value(field(m.data, 502), 2, "main");
  const std::string_view block = map_value(function, 3, "CoreML5");
  std::vector<MilOp> ops;
  for (const protobuf::Field& op : fields(block, 3)) {
    MilOp decoded{std::string(field(op.bytes, 1)), "", 0, {}, {}};
    const std::string_view out = fields(op.bytes, 3).at(0).bytes;
    decoded.output = field(out, 1);
    const std::string_view tensor = field(field(out, 2), 1);
    decoded.dtype = static_cast<int>(fields(tensor, 1).at(0).varint);
    for (const protobuf::Field& dim : fields(tensor, 3))
      decoded.shape.push_back(static_cast<std::int64_t>(fields(field(dim.bytes, 1), 1).at(0).varint));
    for (const protobuf::Field& entry : fields(op.bytes, 2))
      decoded.inputs[std::string(field(entry.bytes, 1))] = field(fields(field(entry.bytes, 2), 1).at(0).bytes, 1);
    ops.push_back(decoded);
  }
  return ops;
}

std::vector<std::string> computing_op_types(const ConvertedModel& m) {
  std::vector<std::string> types;
  for (const MilOp& op : mil_ops(m))
    if (op.type != "const") types.push_back(op.type);
  return types;
}

/// The model description's features (field 1: inputs, 10: outputs): name and shape.
std::vector<std::pair<std::string, Shape>> features(const ConvertedModel& m, int number) {
  std::vector<std::pair<std::string, Shape>> out;
  for (const protobuf::Field& f : fields(field(m.data, 2), number)) {
    Shape shape;
    for (const protobuf::Field& d : fields(field(field(f.bytes, 3), 5), 1)) shape.push_back(static_cast<std::int64_t>(d.varint));
    out.push_back({std::string(field(f.bytes, 1)), shape});
  }
  return out;
}

template <class T>
T read_at(const std::string& bytes, std::size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

Tensor ramp(Shape shape) {
  Tensor t(DType::f32, std::move(shape));
  float next = 0;
  for (float& v : t.values<float>()) v = next++;
  return t;
}

}  // namespace

TEST_CASE("a CoreML package holds its manifest, the model and the weight blob; the same graph gives the same bytes") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {2, 64}});
  b.output("y", b.op(MatMul{}, {x, b.constant(ramp({64, 64}), "w")}));
  const ConvertedModel m = Converters::convert("coreml", b.graph());
  REQUIRE(m.package.size() == 3);
  CHECK(m.package[0].path == "Manifest.json");
  REQUIRE(file_in(m, "Data/com.apple.CoreML/model.mlmodel"));
  CHECK(file_in(m, "Data/com.apple.CoreML/model.mlmodel")->data == m.data);
  REQUIRE(file_in(m, "Data/com.apple.CoreML/weights/weight.bin"));
  const Json manifest = Json::parse(m.package[0].data);
  CHECK(manifest["fileFormatVersion"] == "1.0.0");
  const std::string root = manifest["rootModelIdentifier"];
  CHECK(manifest["itemInfoEntries"][root]["path"] == "com.apple.CoreML/model.mlmodel");
  CHECK(manifest["itemInfoEntries"].size() == 2);
  CHECK(fields(m.data, 1).at(0).varint == 6);  // specificationVersion: iOS 15
  const ConvertedModel again = Converters::convert("coreml", b.graph());
  for (std::size_t i = 0; i < m.package.size(); ++i) CHECK(again.package[i].data == m.package[i].data);
}

TEST_CASE("the weight blob: a version-2 header, then 64-byte aligned metadata and data the const op points at") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {3, 300}});
  const ValueId first = b.op(MatMul{}, {x, b.constant(ramp({300, 5}), "w1")});
  b.output("y", b.op(Add{}, {first, b.constant(ramp({3, 5}), "small")}));
  const ConvertedModel m = Converters::convert("coreml", b.graph());
  const std::string& blob = file_in(m, "Data/com.apple.CoreML/weights/weight.bin")->data;
  CHECK(read_at<std::uint32_t>(blob, 0) == 1);  // one tensor: "small" (60 bytes) stays in the model
  CHECK(read_at<std::uint32_t>(blob, 4) == 2);
  CHECK(read_at<std::uint32_t>(blob, 64) == 0xDEADBEEF);
  CHECK(read_at<std::uint32_t>(blob, 68) == 2);  // Float32
  CHECK(read_at<std::uint64_t>(blob, 72) == 300 * 5 * 4);
  CHECK(read_at<std::uint64_t>(blob, 80) == 128);
  CHECK(read_at<float>(blob, 128 + 4 * 1499) == 1499.0f);
  CHECK(blob.size() % 64 == 0);
  // The const op's value is a blobFileValue naming the file and the metadata's offset.
  const std::string_view block = map_value(map_value(field(m.data, 502), 2, "main"), 3, "CoreML5");
  bool found = false;
  for (const protobuf::Field& op : fields(block, 3)) {
    if (field(op.bytes, 1) != "const" || field(fields(op.bytes, 3).at(0).bytes, 1) != "w1") continue;
    const std::string_view blob_value = field(map_value(op.bytes, 5, "val"), 5);
    CHECK(field(blob_value, 1) == "@model_path/weights/weight.bin");
    CHECK(fields(blob_value, 2).at(0).varint == 64);
    found = true;
  }
  CHECK(found);
}

TEST_CASE("scalars cross the boundary as [1]; rml names become unique MIL identifiers") {
  Builder b;
  const ValueId s = b.input("scale.0", TensorType{DType::f32, {}});
  const ValueId x = b.input("scale_0", TensorType{DType::f32, {3}});
  const ValueId sum = b.op(ReduceSum{.axes = {0}}, {b.op(Mul{}, {x, s})});
  b.output("1st", sum);
  const ConvertedModel m = Converters::convert("coreml", b.graph());
  using Features = std::vector<std::pair<std::string, Shape>>;
  CHECK(features(m, 1) == Features{{"scale_0", {1}}, {"scale_0_1", {3}}});
  CHECK(features(m, 10) == Features{{"_1st", {1}}});
  const std::vector<MilOp> ops = mil_ops(m);
  CHECK(computing_op_types(m) == std::vector<std::string>{"reshape", "mul", "reduce_sum", "reshape"});
  CHECK(ops.back().output == "_1st");
  CHECK(ops.back().shape == Shape{1});
}

TEST_CASE("comparisons give bool and are cast to float32; i32 arithmetic runs in float32") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::i32, {4}});
  const ValueId y = b.input("y", TensorType{DType::i32, {4}});
  b.output("less", b.op(Lt{}, {x, y}));
  b.output("sum", b.op(Add{}, {x, y}));
  const ConvertedModel m = Converters::convert("coreml", b.graph());
  CHECK(computing_op_types(m) == std::vector<std::string>{"less", "cast", "cast", "cast", "add", "cast"});
  for (const MilOp& op : mil_ops(m)) {
    if (op.type == "less") CHECK(op.dtype == 1);  // BOOL
    if (op.type == "add") CHECK(op.dtype == 11);  // FLOAT32
    if (op.output == "sum") CHECK(op.dtype == 23);  // INT32, cast back
  }
}

TEST_CASE("a rank-6 reshape and broadcast are carried with their leading axes merged; a rank-6 transpose is refused") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {2, 4, 4, 4}});
  const ValueId spread = b.op(Reshape{.shape = {2, 4, 4, 1, 4, 1}}, {x});
  const ValueId upsampled = b.op(BroadcastTo{.shape = {2, 4, 4, 2, 4, 2}}, {spread});
  b.output("y", b.op(Reshape{.shape = {2, 4, 8, 8}}, {upsampled}));
  CHECK(Converters::preflight("coreml", b.graph()).empty());
  const ConvertedModel m = Converters::convert("coreml", b.graph());
  const std::vector<MilOp> ops = mil_ops(m);
  std::vector<Shape> shapes;
  for (const MilOp& op : ops)
    if (op.type != "const") shapes.push_back(op.shape);
  CHECK(shapes == std::vector<Shape>{{8, 4, 1, 4, 1}, {8, 4, 2, 4, 2}, {2, 4, 8, 8}});

  Builder t;
  const ValueId wide = t.op(Reshape{.shape = {2, 4, 4, 1, 4, 1}}, {t.input("x", TensorType{DType::f32, {2, 4, 4, 4}})});
  t.output("y", t.op(Transpose{.perm = {1, 0, 2, 3, 4, 5}}, {wide}));
  const auto refused = Converters::preflight("coreml", t.graph());
  REQUIRE(refused.size() == 1);  // the reshape before it is carried
  CHECK(describe(refused[0]) == "node 1 (transpose) -> 'y': coreml: MIL tensors have rank at most 5, this one [2, 4, 4, 1, 4, 1]");
}

TEST_CASE("every registry op lowers to CoreML; dilated pools, dilated run-time-weight convs and empty tensors are refused by name") {
  const auto row = support_row<Coreml>();
  std::size_t op = 0;
  Registry::for_each([&](auto type) { CHECK_MESSAGE(row[op++], decltype(type)::type::name); });
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {1, 2, 6, 6}});
  b.output("p", b.op(MaxPool2d{.kernel = {2, 2}, .strides = {1, 1}, .dilations = {2, 2}}, {x}));
  b.output("c", b.op(Conv2d{.dilations = {2, 1}}, {x, b.input("w", TensorType{DType::f32, {3, 2, 2, 2}})}));
  b.output("e", b.op(Slice{.axes = {0}, .starts = {1}, .ends = {1}, .steps = {1}}, {x}));
  const auto found = Converters::preflight("coreml", b.graph());
  REQUIRE(found.size() == 3);
  CHECK(found[0].reason == "coreml: MIL pools have no dilation");
  CHECK(found[1].reason == "coreml: MIL convolutions with run-time weights have no dilation");
  CHECK(found[2].reason == "coreml: MIL has no empty tensors, [0, 2, 6, 6]");
}

TEST_CASE("a package is written as one folder: it replaces a previous package whole and nothing else") {
  TempDir dir;
  Builder b;
  b.output("y", b.op(Relu{}, {b.input("x", TensorType{DType::f32, {2, 64}})}));
  const auto out = dir / "m.mlpackage";
  write_converted("coreml", b.graph(), out);
  CHECK(std::filesystem::is_regular_file(out / "Manifest.json"));
  CHECK(std::filesystem::is_regular_file(out / "Data" / "com.apple.CoreML" / "model.mlmodel"));
  test::spit(out / "stale.txt", "left by someone");
  write_converted("coreml", b.graph(), out);  // replaced whole: the stale file goes with the old package
  CHECK_FALSE(std::filesystem::exists(out / "stale.txt"));
  write_converted("coreml", b.graph(), dir.path() / "slash.mlpackage" / "");  // "OUT/" names the folder OUT
  CHECK(std::filesystem::is_regular_file(dir / "slash.mlpackage" / "Manifest.json"));
  const test::Snapshot once = test::snapshot(dir.path());
  CHECK(std::count_if(once.begin(), once.end(), [](const auto& f) { return f.first.starts_with("."); }) == 0);

  std::filesystem::create_directory(dir / "photos");
  test::spit(dir / "photos" / "cat.jpg", "meow");
  test::spit(dir / "notes.txt", "keep");
  for (const char* name : {"photos", "notes.txt"}) {
    CAPTURE(name);
    try {
      write_converted("coreml", b.graph(), dir / name);
      FAIL("wrote over something that is not a package");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("is not a package folder (no Manifest.json in it); not replaced") != std::string::npos);
    }
  }
  CHECK(test::slurp(dir / "photos" / "cat.jpg") == "meow");
  CHECK(test::slurp(dir / "notes.txt") == "keep");
}

TEST_CASE("a fault at any step of writing a package leaves the previous package, or none, and no temporary") {
  TempDir dir;
  Builder first;
  first.output("y", first.op(MatMul{}, {first.input("x", TensorType{DType::f32, {2, 64}}), first.constant(ramp({64, 64}), "w")}));
  Builder second;
  second.output("z", second.op(Relu{}, {second.input("x", TensorType{DType::f32, {2, 8}})}));
  const auto out = dir / "m.mlpackage";
  write_converted("coreml", first.graph(), out);
  const test::Snapshot before = test::snapshot(dir.path());
  const auto [faults, after, error] = test::inject_each_fault(dir.path(), before, [&] { write_converted("coreml", second.graph(), out); });
  CHECK(error.empty());
  // mkdir; two files (open write sync close rename); three folder syncs; the exchange; the final sync
  REQUIRE(faults.size() == 1 + 2 * 5 + 3 + 1 + 1);
  for (std::size_t k = 0; k + 1 < faults.size(); ++k) {
    CAPTURE(faults[k].step);
    CHECK(faults[k].left == before);
  }
  CHECK(faults.back().left == after);
  CHECK(after.count("m.mlpackage/Data/com.apple.CoreML/model.mlmodel"));
  CHECK_FALSE(after.count("m.mlpackage/Data/com.apple.CoreML/weights/weight.bin"));
}
