"""The core ATen op set (the ops torch tags `core`, which torch.export's default
decompositions produce) against the PyTorch direct exporter's table: per op, lowered
(with its limits), computed at export time, out of scope for inference, or not lowered
and why. A core op in none of these is an error, so a new torch release forces a
decision on each op it adds."""
from __future__ import annotations

import torch

OUT_OF_SCOPE = [  # (test on the op's name, why inference graphs do not hold it)
    (lambda n: "_backward" in n, "a gradient: training only"),
    (lambda n: n.split(".")[1] in ("rand", "randn", "randperm"),
     "random numbers: refused by name (folding one draw into a constant would change the model)"),
    (lambda n: n.split(".")[1].startswith("sym_"), "a symbolic shape query: dynamic shapes only (rml's are static)"),
    (lambda n: n.endswith(".out"), "an out= variant: functional graphs have none"),
    (lambda n: n == "aten.resize_.default", "resizes a tensor's storage in place: functional graphs have none"),
    (lambda n: "_fft_" in n, "complex numbers (rml has f32 and i32)"),
    (lambda n: n == "aten._local_scalar_dense.default", "a tensor read back into Python (`.item()`): a graph break"),
]

AT_EXPORT_TIME = "computed at export time: takes no tensor input, so torch runs it and the result is a constant"
NO_TENSOR_INPUT = {"aten.arange.start_step", "aten.empty.memory_format", "aten.empty_strided.default",
                   "aten.full.default", "aten.scalar_tensor.default"}

NOT_LOWERED = {
    "aten._embedding_bag.default": "bags of run-time lengths (offsets): needs a segment sum",
    "aten.col2im.default": "overlapping sums of patches: needs a scatter-add (or a transposed convolution)",
    "aten.fmod.Scalar": "f32 remainder: a - trunc(a / b) b is not exact, and rml has no mod op",
    "aten.fmod.Tensor": "f32 remainder: a - trunc(a / b) b is not exact, and rml has no mod op",
    "aten.remainder.Scalar": "f32 remainder: a - floor(a / b) b is not exact, and rml has no mod op",
    "aten.remainder.Tensor": "f32 remainder: a - floor(a / b) b is not exact, and rml has no mod op",
    "aten.grid_sampler_2d.default": "reads at coordinates computed at run time: needs a 2-D gather with weights",
    "aten.masked_scatter.default": "the source position of each element depends on the mask's values",
    "aten.nonzero.default": "the output's shape depends on the values (rml's shapes are static)",
    "aten.scatter_add.default": "several updates may add into one element: needs a scatter-add",
    "aten.scatter_reduce.two": "several updates may reduce into one element: needs a scatter-reduce",
}

LIMITS = {  # lowered ops that refuse some arguments, or are not exact to the last bit
    "aten.as_strided.default": "reads the input as if contiguous",
    "aten.index_put.default": "indices known at export time; accumulate=False",
    "aten.scatter.src": "indices known at export time", "aten.scatter.value": "indices known at export time",
    "aten.index.Tensor": "index tensors on adjacent axes; no bool masks",
    "aten.bitwise_and.Tensor": "bools only", "aten.bitwise_and.Scalar": "bools only",
    "aten.bitwise_or.Tensor": "bools only", "aten.bitwise_or.Scalar": "bools only",
    "aten.bitwise_xor.Tensor": "bools only", "aten.bitwise_xor.Scalar": "bools only",
    "aten.bitwise_not.default": "bools only",
    "aten.div.Tensor_mode": "f32; floor mode rounds the quotient first",
    "aten.div.Scalar_mode": "f32; floor mode rounds the quotient first",
    "aten.convolution.default": "1-D to 3-D, plain or transposed",
    "aten.max_pool2d_with_indices.default": "the indices output is not lowered",
    "aten.max_pool3d_with_indices.default": "the indices output is not lowered",
    "aten.avg_pool2d.default": ("no divisor_override; ceil_mode only where torch counts no padding cells "
                                "(no padding, or count_include_pad=False)"),
    "aten.avg_pool3d.default": ("no divisor_override; ceil_mode only where torch counts no padding cells "
                                "(no padding, or count_include_pad=False)"),
    "aten.native_layer_norm.default": "over the last axis",
    "aten.topk.default": "largest, along the last axis",
    "aten.native_dropout.default": "eval mode (train=False)",
    "aten.sort.default": "NaN after +inf only when it comes later in the row",
    "aten.asinh.default": "|x| below 1.8e19 (x^2 overflows beyond)",
    "aten.acosh.default": "x below 1.8e19 (x^2 overflows beyond)",
    "aten.expm1.default": "exp(x) - 1: an ulp of 1 absolutely near 0",
    "aten.log1p.default": "log(1 + x): an ulp of 1 absolutely near 0",
    "aten.sinh.default": "from exp: an ulp of 1 absolutely near 0",
    "aten.tan.default": "sin / cos",
    "aten.atan.default": "Cephes' f32 polynomial (within two ulp)", "aten.asin.default": "through atan",
    "aten.acos.default": "pi/2 - asin(x)", "aten.atan2.default": "through atan",
    "aten.log2.default": "log(x) / ln 2", "aten.log10.default": "log(x) / ln 10",
    "aten.prod.default": "a multiply tree (not torch's order)", "aten.prod.dim_int": "a multiply tree (not torch's order)",
}


def core_ops() -> list[str]:
    """From the dispatcher's list of every registered op (`dir(torch.ops.aten)` holds only
    the packets touched so far)."""
    names = set()
    for qualified in torch._C._dispatch_get_all_op_names():
        namespace, _, name = qualified.partition("::")
        if namespace != "aten":
            continue
        packet_name, _, overload = name.partition(".")
        packet = getattr(torch.ops.aten, packet_name)
        op = getattr(packet, overload or "default")
        if torch.Tag.core in op.tags:
            names.add(str(op))
    return sorted(names)


def status(op: str, lowered: set[str]) -> tuple[str, str]:
    """(kind, note): kind is "lowered", "out of scope" or "not lowered"."""
    for rule, reason in OUT_OF_SCOPE:
        if rule(op):
            return "out of scope", reason
    if op in lowered:
        return "lowered", LIMITS.get(op, "")
    if op in NO_TENSOR_INPUT:
        return "lowered", AT_EXPORT_TIME
    if op in NOT_LOWERED:
        return "not lowered", NOT_LOWERED[op]
    raise ValueError(f"core ATen op {op} is neither lowered by python/rml/from_torch.py nor explained in {__file__}")


def render(lowered: set[str]) -> str:
    rows = [(op, *status(op, lowered)) for op in core_ops()]
    for table in (NOT_LOWERED, LIMITS):
        stale = [op for op in table if op not in {r[0] for r in rows if r[1] != "out of scope"}]
        stale += [op for op in NOT_LOWERED if op in lowered]
        if stale:
            raise ValueError(f"{__file__} explains ops that are lowered or not core: {sorted(set(stale))}")
    in_scope = [r for r in rows if r[1] != "out of scope"]
    done = [r for r in in_scope if r[1] == "lowered"]
    share = 100 * len(done) / len(in_scope)
    head = (f"\n## PyTorch core ATen op set (torch {torch.__version__.split('+')[0]})\n\n"
            f"Every op torch tags `core` (what `torch.export`'s default decompositions leave), against the "
            f"PyTorch direct exporter above. {len(rows)} ops; {len(rows) - len(in_scope)} are out of scope for "
            f"inference graphs (gradients, random numbers, symbolic shapes, complex numbers); of the other "
            f"{len(in_scope)}, **{len(done)} are lowered ({share:.1f} %)**. \"Lowered\" notes its limits: "
            f"arguments it refuses with an error naming them, or where it is not exact to the last bit.\n\n"
            f"| core ATen op | status | note |\n| --- | --- | --- |\n")
    return head + "".join(f"| `{op}` | {kind} | {note} |\n" for op, kind, note in rows)
