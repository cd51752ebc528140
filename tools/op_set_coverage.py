"""JAX's primitives and the StableHLO op set against their exporters' tables, the way
aten_coverage.py measures the core ATen ops: per op, lowered, computed at export time,
out of scope for inference graphs, or not lowered and why. The sets are read from the
installed packages (`jax.extend.core.primitives`, the StableHLO dialect's Python op
classes), and an op in none of the classes is an error, so a new release forces a
decision on each op it adds."""
from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass, field
from typing import Callable

COLLECTIVE = "a collective across devices: rml runs one graph on one machine"
RANDOM = "random numbers: folded when the key is a constant (Flax's dropout keys), refused otherwise"
EFFECTS = "side effects (tokens, mutable references, host transfers): not in functional inference graphs"
COMPLEX = "complex numbers (rml has f32, i32 and bool)"
GRADIENT = "a gradient or training-only op"
DYNAMIC = "dynamic shapes (rml's shapes are static)"
LINALG = "a matrix decomposition or solve: no rml op"
SPECIAL = "a special function with no rml op and no exact expression in rml's ops"
BITS = "integer bit manipulation (rml's i32 has no bit operations)"
CUMULATIVE = "a cumulative product or log-sum-exp: rml's only running op is cumsum, and neither has an exact recipe"
QUANTIZED = "quantized types (rml's types are f32, i32 and bool)"


@dataclass
class OpSet:
    title: str
    exporter: str                                  # the exporter section of docs/exporter-ops.md
    kind: str
    ops: Callable[[], list[str]]
    out_of_scope: dict[str, list[str]]             # reason -> ops
    not_lowered: dict[str, list[str]]              # reason -> ops
    at_export_time: dict[str, str] = field(default_factory=dict)  # op -> how it is computed
    about: str = ""                                # where the set comes from

    def status(self, op: str, rows: dict[str, str]) -> tuple[str, str]:
        for reason, ops in self.out_of_scope.items():
            if op in ops:
                return "out of scope", reason
        if op in rows and not rows[op].startswith("none: computed only on constants"):
            return "lowered", ""
        if op in self.at_export_time:
            return "lowered", self.at_export_time[op]
        for reason, ops in self.not_lowered.items():
            if op in ops:
                return "not lowered", reason
        raise ValueError(f"{self.kind} {op} is neither lowered by the {self.exporter} nor explained in {__file__}")

    def render(self, rows: dict[str, str]) -> str:
        ops = self.ops()
        package = {"JAX": "jax", "StableHLO": "jaxlib", "TensorFlow": "keras"}[self.title.split()[0]]
        explained = [op for table in (self.out_of_scope, self.not_lowered) for group in table.values() for op in group]
        stale = [op for op in explained if op not in ops] + [op for group in self.not_lowered.values()
                                                              for op in group if op in rows and op in ops
                                                              and not rows[op].startswith("none: computed only")]
        if stale:
            raise ValueError(f"{__file__} explains ops that are lowered or not in the set: {sorted(set(stale))}")
        table = [(op, *self.status(op, rows)) for op in ops]
        in_scope = [r for r in table if r[1] != "out of scope"]
        done = [r for r in in_scope if r[1] == "lowered"]
        about = self.about.format(version=importlib.metadata.version(package))
        head = (f"\n## {self.title}\n\n{about} {len(table)} {self.kind}s against the {self.exporter} above; "
                f"{len(table) - len(in_scope)} are out of scope for inference graphs; of the other {len(in_scope)}, "
                f"**{len(done)} are lowered ({100 * len(done) / len(in_scope):.1f} %)**.\n\n"
                f"| {self.kind} | status | note |\n| --- | --- | --- |\n")
        return head + "".join(f"| `{op}` | {kind} | {note} |\n" for op, kind, note in table)


def jax_primitives() -> list[str]:
    from jax.extend.core import Primitive, primitives
    return sorted({p.name for p in vars(primitives).values() if isinstance(p, Primitive)})


def stablehlo_ops() -> list[str]:
    from jaxlib.mlir.dialects import stablehlo
    return sorted({c.OPERATION_NAME for c in vars(stablehlo).values() if hasattr(c, "OPERATION_NAME")})


JAX = OpSet(
    "JAX primitives", "JAX direct exporter", "primitive", jax_primitives,
    out_of_scope={
        COLLECTIVE: ["all_gather", "all_to_all", "axis_index", "pmax", "pmin", "ppermute", "psum",
                     "ragged_all_to_all"],
        RANDOM: ["random_bits", "random_fold_in", "random_gamma", "random_seed", "random_split", "rng_bit_generator",
                 "rng_uniform", "threefry2x32"],
        EFFECTS: ["after_all", "create_token", "get", "swap", "empty2"],
        COMPLEX: ["complex", "conj", "imag", "real", "fft"],
        GRADIENT: ["select_and_gather_add", "select_and_scatter", "select_and_scatter_add", "igamma_grad_a",
                   "custom_linear_solve"],
    },
    not_lowered={
        LINALG: ["cholesky", "eig", "eigh", "hessenberg", "householder_product", "lu", "qr", "schur", "svd",
                 "triangular_solve", "tridiagonal", "tridiagonal_solve"],
        SPECIAL: ["bessel_i0e", "bessel_i1e", "digamma", "igamma", "igammac", "lgamma", "polygamma",
                  "regularized_incomplete_beta", "zeta", "erf_inv"],
        BITS: ["bitcast_convert_type", "clz", "population_count", "shift_left", "shift_right_arithmetic",
               "shift_right_logical", "nextafter"],
        CUMULATIVE: ["cumprod", "cumlogsumexp"],
        "no exact expression: pow(x, 1/3) is not cbrt to the last bit, and NaN for x < 0": ["cbrt"],
        "no exact expression: exp(x ln 2) and pow(2, x) round differently from exp2": ["exp2"],
        "f32 remainder: a - trunc(a / b) b is not exact, and rml has no mod op": ["rem"],
        "rounds to a narrower float format: no rml op": ["reduce_precision"],
        "total-order comparison: it orders NaNs by their sign bit, which no rml op reads (no bitcast)":
            ["eq_to", "le_to", "lt_to"],
        "a reduction or window with a body of its own: the named ones (sum, max, min, prod, argmax) are lowered":
            ["reduce", "reduce_window"],
        "parity of bools along an axis: no rml op": ["reduce_xor"],
    },
    at_export_time={"iota": "computed at export time: takes no input, so JAX computes it and the result is a "
                            "constant"},
    about="Every primitive `jax.extend.core.primitives` names (jax {version}).",
)

STABLEHLO = OpSet(
    "StableHLO op set", "StableHLO importer", "op", stablehlo_ops,
    out_of_scope={
        COLLECTIVE: ["stablehlo.all_gather", "stablehlo.all_reduce", "stablehlo.all_to_all",
                     "stablehlo.collective_broadcast", "stablehlo.collective_permute", "stablehlo.cross-replica-sum",
                     "stablehlo.partition_id", "stablehlo.reduce_scatter", "stablehlo.replica_id"],
        RANDOM: ["stablehlo.rng", "stablehlo.rng_bit_generator"],
        EFFECTS: ["stablehlo.after_all", "stablehlo.create_token", "stablehlo.infeed", "stablehlo.outfeed",
                  "stablehlo.recv", "stablehlo.send", "stablehlo.async_start", "stablehlo.async_done"],
        COMPLEX: ["stablehlo.complex", "stablehlo.imag", "stablehlo.real", "stablehlo.fft"],
        GRADIENT: ["stablehlo.batch_norm_grad", "stablehlo.batch_norm_training", "stablehlo.select_and_scatter"],
        DYNAMIC: ["stablehlo.dynamic_broadcast_in_dim", "stablehlo.dynamic_conv", "stablehlo.dynamic_gather",
                  "stablehlo.dynamic_pad", "stablehlo.dynamic_reshape", "stablehlo.real_dynamic_slice",
                  "stablehlo.get_dimension_size", "stablehlo.set_dimension_size"],
        QUANTIZED: ["stablehlo.uniform_dequantize", "stablehlo.uniform_quantize"],
        "a block terminator, handled with the op that owns the block": ["stablehlo.return"],
    },
    not_lowered={
        LINALG: ["stablehlo.cholesky", "stablehlo.triangular_solve"],
        BITS: ["stablehlo.bitcast_convert", "stablehlo.count_leading_zeros", "stablehlo.popcnt",
               "stablehlo.shift_left", "stablehlo.shift_right_arithmetic", "stablehlo.shift_right_logical"],
        "no exact expression: pow(x, 1/3) is not cbrt to the last bit, and NaN for x < 0": ["stablehlo.cbrt"],
        "f32 remainder: a - trunc(a / b) b is not exact, and rml has no mod op": ["stablehlo.remainder"],
        "rounds to a narrower float format: no rml op": ["stablehlo.reduce_precision"],
        "not emitted by the producers rml imports (XLA writes batch norm out as arithmetic); would be a "
        "multiply and an add": ["stablehlo.batch_norm_inference"],
        "deprecated ops the producers no longer emit (broadcast_in_dim, dot_general, gather, the einsum "
        "decompositions)": ["stablehlo.broadcast", "stablehlo.einsum", "stablehlo.unary_einsum",
                            "stablehlo.torch_index_select"],
        "tuples: the producers flatten them, so none reach the importer": ["stablehlo.tuple",
                                                                           "stablehlo.get_tuple_element"],
        "applies a body elementwise: no producer rml imports emits it": ["stablehlo.map"],
        "a call into the producer's runtime (LAPACK, cuDNN, sharding helpers): no portable meaning":
            ["stablehlo.custom_call"],
    },
    at_export_time={"stablehlo.iota": "computed at export time: takes no input (a constant)",
                    "stablehlo.dynamic_iota": "computed at export time from its constant shape"},
    about="Every op of the StableHLO dialect's Python bindings (jaxlib {version}).",
)

def keras_ops() -> list[str]:
    import keras_ops as traced
    return list(traced.layer_ops())


KERAS = OpSet(
    "TensorFlow ops Keras layers emit", "TensorFlow direct exporter", "op type", keras_ops,
    out_of_scope={},
    not_lowered={},
    at_export_time={"Range": "computed at export time: its bounds are constants (the RNN layers' time steps)"},
    about=("The op types in the frozen inference graphs of Keras's built-in layers and activations, each traced "
           "alone by `tools/keras_ops.py` (keras {version}, loop bodies included)."),
)

OP_SETS = (JAX, STABLEHLO, KERAS)


def render(rows_by_exporter: dict[str, dict[str, str]]) -> str:
    """The sections for every op set; `rows_by_exporter` maps an exporter's section title
    ("JAX direct", "StableHLO importer", "TensorFlow direct") to its table rows."""
    titles = {"JAX direct exporter": "JAX direct", "StableHLO importer": "StableHLO importer",
              "TensorFlow direct exporter": "TensorFlow direct"}
    return "".join(s.render(rows_by_exporter[titles[s.exporter]]) for s in OP_SETS)
