"""What the exact-example generators (make_tiny_net.py, make_tiny_models.py) share.

An exact example is a model whose every intermediate value is exactly
representable in f32 — so the output has one value whatever the summation
order, fusion, thread count or transcendental approximation — run in each
framework, exported by rml's direct exporters and written next to its C++
check. The generators hold every framework and every written graph to a NumPy
reference with bit equality, then write that reference as C++ literals.

The parameter values come from `pattern`, an integer formula the C++ checks
repeat (examples/exact.hpp), so the literal inputs live in one formula rather
than in a data file.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def pattern(shape, salt: int, scale: float = 1 / 8) -> np.ndarray:
    """Non-zero multiples of `scale`: element k (row-major) is
    sign * ((5k + salt) mod 8 + 1) * scale, negative where (k + salt) mod 3 == 0.
    examples/exact.hpp's `pattern` is the same formula."""
    k = np.arange(int(np.prod(shape)), dtype=np.int64)
    magnitude = ((5 * k + salt) % 8 + 1).astype(np.float64)
    sign = np.where((k + salt) % 3 == 0, -1.0, 1.0)
    return (sign * magnitude * scale).reshape(shape)


def f32(array: np.ndarray, what: str) -> np.ndarray:
    """`array` (float64) as f32, refusing any value f32 cannot hold exactly."""
    narrowed = np.asarray(array, dtype=np.float64).astype(np.float32)
    if not np.array_equal(narrowed.astype(np.float64), array):
        raise SystemExit(f"{what}: a value is not exact in f32 (the example's design is broken)")
    return narrowed


def require_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Bit equality (a -0.0 where 0.0 is wanted fails too)."""
    got = np.ascontiguousarray(got, dtype=np.float32)
    if got.shape != want.shape or got.tobytes() != want.tobytes():
        worst = np.max(np.abs(got.astype(np.float64) - want)) if got.shape == want.shape else "shape"
        raise SystemExit(f"{what}: differs from the exact reference (largest difference {worst})")


def check_export(builder, folder: Path, stem: str, feeds: dict, want: np.ndarray) -> int:
    """Writes the export as folder/stem.json (+ .safetensors), reloads it and requires
    the reference kernels and the executor (fused and unfused) to give `want`
    bit for bit. Returns the written graph's node count."""
    import rml

    path = folder / f"{stem}.json"
    builder.write(str(path))
    model = rml.load(str(path))
    require_bits(model.evaluate(feeds)["output"], want, f"{stem}: reference kernels")
    for fuse in (True, False):
        require_bits(model.run(feeds, fuse=fuse)["output"], want, f"{stem}: executor (fuse={fuse})")
    return model.node_count


def literal(value: float) -> str:
    """A C++ float literal of an exactly representable value."""
    text = repr(float(value))
    if "e" not in text and "." not in text:
        text += ".0"
    return text + "f"


def array_literal(name: str, array: np.ndarray) -> str:
    """`inline constexpr float NAME[n] = {...};`: the array flat (row-major), one
    innermost row a line, its shape in a comment."""
    rows = array.reshape(-1, array.shape[-1])
    body = ",\n".join("    " + ", ".join(literal(v) for v in row) for row in rows)
    shape = "x".join(str(d) for d in array.shape)
    return f"// shape {shape}\ninline constexpr float {name}[{array.size}] = {{\n{body}}};\n"


def write_folder(target: Path, make) -> None:
    """Builds the folder's contents in a scratch folder beside it (`make(scratch)`),
    then replaces the target's generated files, so a failed check leaves the
    committed files as they were."""
    target.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target))
    try:
        make(scratch)
        for item in sorted(scratch.iterdir()):
            os.replace(item, target / item.name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def one_thread() -> None:
    """Frameworks on one thread (exactness does not need it; it keeps runs quiet)."""
    import tensorflow as tf
    import torch

    torch.set_num_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
