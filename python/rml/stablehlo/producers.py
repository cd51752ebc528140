"""The three producers of StableHLO text: JAX, TensorFlow, and PyTorch through torch-mlir."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from .._rml import ExportError
from ..from_jax import parameter_name

TORCH_MLIR_TIMEOUT_S = 3600
# Run by path, not as `-m rml....` (importing the rml package would import jax as well), and
# with -P, so the worker's folder does not shadow other modules.
TORCH_MLIR_WORKER = Path(__file__).with_name("torch_mlir_worker.py")


# --- producers ---------------------------------------------------------------------------------
def jax_module(fn, params, example_inputs, portable: bool = True) -> tuple[str, dict]:
    """(StableHLO text, parameters) for `fn(params, *example_inputs)`: the parameter leaves,
    named by pytree path, are @main's leading arguments, the inputs the rest.

    `portable=True` takes `jax.export`'s serialized module, where CHLO ops other than
    composites (erf, top_k) are already expanded into StableHLO (erfc into a long
    polynomial); `portable=False` takes `jax.jit(...).lower(...)`'s module, which keeps
    them (chlo.erfc, chlo.top_k) for shorter graphs."""
    import jax
    from jax import tree_util

    leaves_with_paths, treedef = tree_util.tree_flatten_with_path(params)
    leaves = [np.asarray(leaf) for _, leaf in leaves_with_paths]
    names = [parameter_name(path) for path, _ in leaves_with_paths]
    inputs = tuple(np.asarray(x) for x in example_inputs)
    count = len(leaves)

    def flat_fn(*args):
        return fn(tree_util.tree_unflatten(treedef, list(args[:count])), *args[count:])

    if not portable:
        text = jax.jit(flat_fn, keep_unused=True).lower(*leaves, *inputs).as_text()
        return text, dict(zip(names, leaves))
    exported = jax.export.export(jax.jit(flat_fn), platforms=("cpu",))(*leaves, *inputs)
    kept = set(exported.module_kept_var_idx)
    dropped = [i - count for i in range(count, count + len(inputs)) if i not in kept]
    if dropped:
        raise ExportError(f"jax.export dropped model input(s) {dropped}, which the function does not use; "
                          "an exported graph must take every input")
    return exported.mlir_module(), {names[i]: leaves[i] for i in range(count) if i in kept}


def tf_module(model, example_inputs) -> tuple[str, dict]:
    """(StableHLO text, {}) for `model(*example_inputs)`: the variables are frozen into
    constants and XLA's "stablehlo" stage of the jit-compiled function is returned."""
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    from ..from_tf import _traceable  # traced as the direct route traces it (Keras: inference mode)

    inputs = [np.asarray(x) for x in example_inputs]
    concrete = _traceable(model).get_concrete_function(*[tf.TensorSpec(x.shape, tf.as_dtype(x.dtype)) for x in inputs])
    # Loops stay functional While ops, which XLA compiles (v1 Enter/Exit it cannot).
    frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=False)
    compiled = tf.function(frozen, jit_compile=True)
    try:
        text = compiled.experimental_get_compiler_ir(*[tf.constant(x) for x in inputs])(stage="stablehlo")
    except Exception as e:
        raise ExportError(f"TensorFlow could not lower the model to StableHLO: {e}") from None
    return text, {}


def _torch_modules(items, lift_parameters: bool = True) -> list:
    """StableHLO text and leading parameters for each (module, example_inputs), converted by
    torch-mlir in one subprocess; a failed item's entry is its ExportError."""
    import torch

    results: list = [None] * len(items)
    with tempfile.TemporaryDirectory(prefix="rml-torch-mlir-") as tmp:
        jobs = []
        for i, (module, inputs) in enumerate(items):
            inputs = tuple(x if isinstance(x, torch.Tensor) else torch.from_numpy(np.asarray(x)) for x in inputs)
            try:
                with torch.no_grad():
                    program = torch.export.export(module.eval(), inputs)
                path = os.path.join(tmp, f"program{i}.pt2")
                torch.export.save(program, path)
            except Exception as e:
                results[i] = ExportError(f"torch.export failed: {e}")
                continue
            jobs.append({"index": i, "program": path, "out": os.path.join(tmp, f"module{i}"),
                         "lift": bool(lift_parameters)})
        if jobs:
            try:
                done = subprocess.run([sys.executable, "-P", str(TORCH_MLIR_WORKER), json.dumps(jobs)],
                                      capture_output=True, text=True, timeout=TORCH_MLIR_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise ExportError(f"the torch-mlir subprocess ran past {TORCH_MLIR_TIMEOUT_S} s") from None
            if done.returncode != 0:
                raise ExportError(f"the torch-mlir subprocess exited {done.returncode}: {done.stderr[-3000:]}")
        for job in jobs:
            index = job["index"]
            if os.path.exists(job["out"] + ".error"):
                with open(job["out"] + ".error") as f:
                    results[index] = ExportError(f"torch-mlir could not lower the program to StableHLO: "
                                                 f"{f.read()[-3000:]}")
                continue
            with open(job["out"] + ".mlir") as f:
                text = f.read()
            with open(job["out"] + ".json") as f:
                names = json.load(f)
            with np.load(job["out"] + ".npz") as arrays:
                params = {name: arrays[f"arr_{k}"] for k, name in enumerate(names)}
            results[index] = (text, params)
    return results


def torch_modules(items, lift_parameters: bool = True) -> list[tuple[str, dict]]:
    """`torch_module` for several (module, example_inputs) pairs in one torch-mlir subprocess."""
    results = _torch_modules(items, lift_parameters)
    for result in results:
        if isinstance(result, ExportError):
            raise result
    return results


def torch_module(module, example_inputs, lift_parameters: bool = True) -> tuple[str, dict]:
    """(StableHLO text, parameters) for `module(*example_inputs)`: torch.export, then
    torch-mlir's fx importer in a subprocess. Parameters, buffers and lifted constants are
    @main's leading arguments (named by their state-dict names); with
    `lift_parameters=False` torch-mlir inlines them as dense_resource constants instead."""
    return torch_modules([(module, example_inputs)], lift_parameters)[0]
