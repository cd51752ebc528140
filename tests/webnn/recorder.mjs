// A stand-in for the browser's MLGraphBuilder for the structural check of
// `rml convert --to webnn` (tests/python/test_webnn.py): it records every
// builder call and infers each operand's data type and shape by the WebNN
// specification's rules, rejecting calls the rules reject. It computes no
// values: the numbers need a browser whose WebNN runs (docs/backends.md says
// why the Chromium here cannot).
//
// usage: node tests/webnn/recorder.mjs MODULE.js [SIDECAR]
// prints {"calls": [method, ...], "outputs": {name: {dataType, shape}}}

import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

class Operand {
  constructor(dataType, shape) {
    this.dataType = dataType;
    this.shape = shape;
  }
}

const count = (shape) => shape.reduce((a, b) => a * b, 1);
function check(condition, message) {
  if (!condition) throw new TypeError(message);
}
function broadcast(...shapes) {
  const rank = Math.max(...shapes.map((s) => s.length));
  const out = [];
  for (let i = 0; i < rank; ++i) {
    let dim = 1;
    for (const s of shapes) {
      const d = s[s.length - rank + i] ?? 1;
      check(d === dim || d === 1 || dim === 1, `shapes ${JSON.stringify(shapes)} do not broadcast`);
      if (d !== 1) dim = d;
    }
    out.push(dim);
  }
  return out;
}
function operand(x, what) {
  check(x instanceof Operand, `${what} is not an operand`);
  return x;
}
function same(a, b, what) {
  check(a.dataType === b.dataType, `${what}: data types ${a.dataType} and ${b.dataType} differ`);
}
function windowSize(input, kernel, before, after, stride, dilation) {
  const extent = dilation * (kernel - 1) + 1;
  check(input + before + after >= extent, "window larger than the padded input");
  return Math.floor((input + before + after - extent) / stride) + 1;
}

const FLOAT_UNARY = ["exp", "log", "sqrt", "tanh", "sigmoid", "erf", "sin", "cos", "reciprocal", "gelu"];
const ANY_UNARY = ["neg", "abs", "relu", "identity"];
const BINARY = ["add", "sub", "mul", "div", "pow", "max", "min"];
const COMPARISONS = ["equal", "notEqual", "lesser", "lesserOrEqual", "greater", "greaterOrEqual"];
const REDUCTIONS = ["reduceSum", "reduceMean", "reduceMax", "reduceMin"];

export class RecordingBuilder {
  constructor(context) {
    this.context = context;
    this.calls = [];
    for (const m of FLOAT_UNARY)
      this[m] = (x) => {
        check(operand(x, m).dataType === "float32", `${m} takes float32`);
        return this.#made(m, x.dataType, x.shape);
      };
    for (const m of ANY_UNARY) this[m] = (x) => this.#made(m, operand(x, m).dataType, x.shape);
    for (const m of BINARY)
      this[m] = (a, b) => {
        same(operand(a, m), operand(b, m), m);
        return this.#made(m, a.dataType, broadcast(a.shape, b.shape));
      };
    for (const m of COMPARISONS)
      this[m] = (a, b) => {
        same(operand(a, m), operand(b, m), m);
        return this.#made(m, "uint8", broadcast(a.shape, b.shape));
      };
    for (const m of REDUCTIONS)
      this[m] = (x, { axes, keepDimensions = false }) => {
        operand(x, m);
        check(axes.every((a) => a >= 0 && a < x.shape.length) && new Set(axes).size === axes.length, `${m}: bad axes`);
        const shape = [];
        x.shape.forEach((d, i) => (axes.includes(i) ? keepDimensions && shape.push(1) : shape.push(d)));
        return this.#made(m, x.dataType, shape);
      };
  }

  #made(method, dataType, shape) {
    check(shape.every((d) => Number.isInteger(d) && d >= 0), `${method}: bad shape ${JSON.stringify(shape)}`);
    this.calls.push(method);
    return new Operand(dataType, shape);
  }

  input(name, { dataType, shape }) {
    check(typeof name === "string" && name.length > 0, "input needs a name");
    return this.#made("input", dataType, shape);
  }
  constant({ dataType, shape }, data) {
    const kind = { float32: Float32Array, int32: Int32Array }[dataType];
    check(data instanceof kind, `constant: ${dataType} data must be a ${kind.name}`);
    check(data.length === count(shape), `constant: ${data.length} values for shape ${JSON.stringify(shape)}`);
    return this.#made("constant", dataType, shape);
  }
  cast(x, dataType) {
    return this.#made("cast", dataType, operand(x, "cast").shape);
  }
  clamp(x, { minValue, maxValue }) {
    check(minValue <= maxValue, "clamp: min above max");
    return this.#made("clamp", operand(x, "clamp").dataType, x.shape);
  }
  where(condition, a, b) {
    check(operand(condition, "where").dataType === "uint8", "where: the condition must be uint8");
    same(operand(a, "where"), operand(b, "where"), "where");
    return this.#made("where", a.dataType, broadcast(condition.shape, a.shape, b.shape));
  }
  reshape(x, shape) {
    check(count(operand(x, "reshape").shape) === count(shape), `reshape: ${JSON.stringify(x.shape)} to ${JSON.stringify(shape)}`);
    return this.#made("reshape", x.dataType, shape);
  }
  transpose(x, { permutation }) {
    check([...permutation].sort().every((p, i) => p === i) && permutation.length === operand(x, "transpose").shape.length, "transpose: bad permutation");
    return this.#made("transpose", x.dataType, permutation.map((p) => x.shape[p]));
  }
  expand(x, shape) {
    check(broadcast(operand(x, "expand").shape, shape).every((d, i) => d === shape[i]), "expand: not a broadcast");
    return this.#made("expand", x.dataType, shape);
  }
  concat(inputs, axis) {
    const first = operand(inputs[0], "concat");
    const shape = [...first.shape];
    shape[axis] = 0;
    for (const x of inputs) {
      same(first, operand(x, "concat"), "concat");
      check(x.shape.length === first.shape.length && x.shape.every((d, i) => i === axis || d === first.shape[i]), "concat: shapes differ");
      shape[axis] += x.shape[axis];
    }
    return this.#made("concat", first.dataType, shape);
  }
  slice(x, starts, sizes, { strides } = {}) {
    operand(x, "slice");
    const shape = x.shape.map((d, i) => {
      const stride = strides ? strides[i] : 1;
      check(stride >= 1 && starts[i] >= 0 && sizes[i] >= 0 && starts[i] + sizes[i] <= d, `slice: axis ${i} out of range`);
      return Math.ceil(sizes[i] / stride);
    });
    return this.#made("slice", x.dataType, shape);
  }
  reverse(x, { axes }) {
    check(axes.every((a) => a >= 0 && a < operand(x, "reverse").shape.length), "reverse: bad axes");
    return this.#made("reverse", x.dataType, x.shape);
  }
  pad(x, begin, end, { mode = "constant" } = {}) {
    check(mode === "constant" && begin.length === operand(x, "pad").shape.length && end.length === x.shape.length, "pad: bad paddings");
    return this.#made("pad", x.dataType, x.shape.map((d, i) => d + begin[i] + end[i]));
  }
  gather(x, indices, { axis = 0 } = {}) {
    check(operand(indices, "gather").dataType === "int32", "gather: int32 indices");
    const shape = [...operand(x, "gather").shape.slice(0, axis), ...indices.shape, ...x.shape.slice(axis + 1)];
    return this.#made("gather", x.dataType, shape);
  }
  matmul(a, b) {
    same(operand(a, "matmul"), operand(b, "matmul"), "matmul");
    check(a.shape.length >= 2 && b.shape.length >= 2, "matmul: rank 2 or more");
    const [m, k] = a.shape.slice(-2), [k2, n] = b.shape.slice(-2);
    check(k === k2, `matmul: ${k} and ${k2} differ`);
    return this.#made("matmul", a.dataType, [...broadcast(a.shape.slice(0, -2), b.shape.slice(0, -2)), m, n]);
  }
  conv2d(x, w, { padding = [0, 0, 0, 0], strides = [1, 1], dilations = [1, 1], groups = 1, inputLayout, filterLayout, bias } = {}) {
    check(inputLayout === "nchw" && filterLayout === "oihw", "conv2d: rml emits nchw / oihw");
    const [n, c, h, wd] = operand(x, "conv2d").shape, [o, i, kh, kw] = operand(w, "conv2d").shape;
    check(i * groups === c && o % groups === 0, "conv2d: channels and groups disagree");
    if (bias) check(operand(bias, "conv2d bias").shape.length === 1 && bias.shape[0] === o, "conv2d: bias shape");
    return this.#made("conv2d", x.dataType, [n, o, windowSize(h, kh, padding[0], padding[1], strides[0], dilations[0]),
                                             windowSize(wd, kw, padding[2], padding[3], strides[1], dilations[1])]);
  }
  #pool(method, x, { windowDimensions, padding = [0, 0, 0, 0], strides = [1, 1], dilations = [1, 1], layout }) {
    check(layout === "nchw", `${method}: rml emits nchw`);
    const [n, c, h, w] = operand(x, method).shape;
    return this.#made(method, x.dataType, [n, c, windowSize(h, windowDimensions[0], padding[0], padding[1], strides[0], dilations[0]),
                                           windowSize(w, windowDimensions[1], padding[2], padding[3], strides[1], dilations[1])]);
  }
  maxPool2d(x, options) {
    return this.#pool("maxPool2d", x, options);
  }
  averagePool2d(x, options) {
    return this.#pool("averagePool2d", x, options);
  }
  softmax(x, axis) {
    check(axis >= 0 && axis < operand(x, "softmax").shape.length, "softmax: bad axis");
    return this.#made("softmax", x.dataType, x.shape);
  }
  cumulativeSum(x, axis, { exclusive, reversed } = {}) {
    check(Number.isInteger(axis) && axis >= 0 && axis < operand(x, "cumulativeSum").shape.length, "cumulativeSum: bad axis");
    check(typeof exclusive === "boolean" && typeof reversed === "boolean", "cumulativeSum: options");
    check(["float32", "int32"].includes(x.dataType), "cumulativeSum: data type");
    return this.#made("cumulativeSum", x.dataType, x.shape);
  }
  layerNormalization(x, { axes, epsilon, scale, bias }) {
    const last = operand(x, "layerNormalization").shape.length - 1;
    check(axes.length === 1 && axes[0] === last && epsilon >= 0, "layerNormalization: rml normalises the last axis");
    for (const p of [scale, bias]) if (p) check(p.shape.length === 1 && p.shape[0] === x.shape[last], "layerNormalization: parameter shape");
    return this.#made("layerNormalization", x.dataType, x.shape);
  }
  async build(outputs) {
    const described = {};
    for (const [name, x] of Object.entries(outputs)) described[name] = { dataType: operand(x, `output ${name}`).dataType, shape: x.shape };
    check(new Set(Object.values(outputs)).size === Object.keys(outputs).length, "build: an operand is output twice");
    return described;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [modulePath, sidecarPath] = process.argv.slice(2);
  globalThis.MLGraphBuilder = RecordingBuilder;
  let builder;
  globalThis.MLGraphBuilder = class extends RecordingBuilder {
    constructor(context) {
      super(context);
      builder = this;
    }
  };
  const module = await import(pathToFileURL(modulePath).href);
  const bytes = sidecarPath ? readFileSync(sidecarPath) : Buffer.alloc(0);
  const weights = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  const outputs = await module.build({}, weights);
  console.log(JSON.stringify({ calls: builder.calls, outputs }));
}
