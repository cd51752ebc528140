"""Exports every tiny zoo model by every route and writes the golden fixtures.

    python tools/make_fixtures.py [--out testdata] [--models mlp,cnn] [--routes torch]

For each route and model it builds the model at its tiny size, draws a batch of
2 inputs, runs the framework, exports and writes `<route>_<model>.json` and
`.safetensors`, evaluates the written file with rml's reference kernels and
requires it to match the framework within atol 1e-5 + rtol 1e-4, and writes
`<route>_<model>.golden.safetensors`: the framework's inputs and outputs under
the graph's input and output names. The three files are written into a scratch
folder and moved into place only once the check passes. Regenerating is
deterministic: the same versions give byte-identical files.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import rml  # noqa: E402
from zoo.configs import MODELS  # noqa: E402

BATCH = 2
ATOL, RTOL = 1e-5, 1e-4


def _names(count: int) -> list[str]:
    return [f"input.{i}" for i in range(count)]


# Each framework on the fixture inputs: (model, its inputs, {input name: array},
# {"output": the framework's output}). One thread, so the framework's own
# numbers do not depend on the machine.
def run_torch(model: str):
    import torch

    from zoo.torch_zoo import build

    torch.set_num_threads(1)
    module, make_inputs = build(model)
    inputs = make_inputs(BATCH)
    with torch.no_grad():
        output = module.eval()(*inputs).numpy()
    return module, inputs, dict(zip(_names(len(inputs)), (t.numpy() for t in inputs))), {"output": output}


def run_jax(model: str):
    import jax

    from zoo.jax_zoo import build

    fn, params, make_inputs = build(model)
    inputs = make_inputs(BATCH)
    output = np.asarray(jax.jit(fn)(params, *inputs))
    return (fn, params), inputs, dict(zip(_names(len(inputs)), inputs)), {"output": output}


def run_tf(model: str):
    import tensorflow as tf

    from zoo.tf_zoo import build

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    module, make_inputs = build(model)
    inputs = make_inputs(BATCH)
    output = tf.function(module)(*(tf.constant(x) for x in inputs)).numpy()
    return module, inputs, dict(zip(_names(len(inputs)), inputs)), {"output": output}


# Each route: (builder, {input name: array}, {output name: array}).
def torch_route(model: str):
    from rml.from_torch import export

    module, inputs, feeds, outputs = run_torch(model)
    return export(module, inputs, input_names=list(feeds)), feeds, outputs


def jax_route(model: str):
    from rml.from_jax import export

    (fn, params), inputs, feeds, outputs = run_jax(model)
    return export(fn, params, inputs, input_names=list(feeds)), feeds, outputs


def tf_route(model: str):
    from rml.from_tf import export

    module, inputs, feeds, outputs = run_tf(model)
    return export(module, inputs, input_names=list(feeds)), feeds, outputs


_TORCH_MLIR: dict[str, tuple[str, dict]] = {}  # model -> torch-mlir's (text, parameters)


def prepare_torch_mlir(models: list[str]) -> None:
    """Converts every model with torch-mlir in one subprocess (it starts slowly)."""
    import torch

    from rml.from_stablehlo import torch_modules
    from zoo.torch_zoo import build

    items = []
    for model in models:
        module, make_inputs = build(model)
        items.append((module.eval(), make_inputs(BATCH)))
    with torch.no_grad():
        _TORCH_MLIR.update(zip(models, torch_modules(items)))


def stablehlo_torch_route(model: str):
    from rml.from_stablehlo import export

    if model not in _TORCH_MLIR:
        prepare_torch_mlir([model])
    _, _, feeds, outputs = run_torch(model)
    text, parameters = _TORCH_MLIR[model]
    return export(text, parameters, list(feeds.values()), input_names=list(feeds)), feeds, outputs


def stablehlo_jax_route(model: str):
    from rml.from_stablehlo import export_jax

    (fn, params), inputs, feeds, outputs = run_jax(model)
    return export_jax(fn, params, inputs, input_names=list(feeds)), feeds, outputs


def stablehlo_tf_route(model: str):
    from rml.from_stablehlo import export_tf

    module, inputs, feeds, outputs = run_tf(model)
    return export_tf(module, inputs, input_names=list(feeds)), feeds, outputs


# Routes in the order they run: PyTorch first (the spec notes torch.export must
# load before TensorFlow's or jaxlib's LLVM; torch-mlir runs in a subprocess).
ROUTES: dict[str, Callable] = {"torch": torch_route, "jax": jax_route, "tf": tf_route,
                               "stablehlo_torch": stablehlo_torch_route, "stablehlo_jax": stablehlo_jax_route,
                               "stablehlo_tf": stablehlo_tf_route}
# Work a route does once for all its models before the first one.
PREPARE: dict[str, Callable] = {"stablehlo_torch": prepare_torch_mlir}


def check_close(got: np.ndarray, want: np.ndarray, what: str) -> float:
    if got.shape != want.shape:
        raise SystemExit(f"{what}: shape {got.shape} differs from the framework's {want.shape}")
    if not np.allclose(got, want, atol=ATOL, rtol=RTOL):
        worst = float(np.max(np.abs(got.astype(np.float64) - want)))
        raise SystemExit(f"{what}: the written graph differs from the framework by up to {worst:.3g} "
                         f"(allowed {ATOL} + {RTOL}·|x|)")
    return float(np.max(np.abs(got.astype(np.float64) - want), initial=0.0))


def make_fixture(route: str, model: str, out: Path) -> str:
    builder, inputs, outputs = ROUTES[route](model)
    stem = f"{route}_{model}"
    scratch = Path(tempfile.mkdtemp(prefix=f".{stem}.", dir=out))
    try:
        builder.write(str(scratch / f"{stem}.json"))
        written = rml.load(str(scratch / f"{stem}.json"))
        if sorted(written.outputs) != sorted(outputs):
            raise SystemExit(f"{stem}: graph outputs {written.outputs} differ from the framework's {list(outputs)}")
        evaluated = written.evaluate(inputs)
        worst = max(check_close(evaluated[n], outputs[n], f"{stem} output '{n}'") for n in outputs)
        rml.write_tensors(str(scratch / f"{stem}.golden.safetensors"), {**inputs, **outputs})
        for suffix in (".safetensors", ".golden.safetensors", ".json"):  # the .json last: tests look for it
            path = scratch / f"{stem}{suffix}"
            if path.exists():
                path.replace(out / path.name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return f"{written.node_count:4d} nodes, max |rml reference - {route}| = {worst:.2e}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "testdata", help="folder to write (default: testdata)")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated zoo models (default: all 19)")
    parser.add_argument("--routes", default=",".join(ROUTES), help=f"comma-separated routes (default: {','.join(ROUTES)})")
    args = parser.parse_args(argv)
    models, routes = args.models.split(","), args.routes.split(",")
    for name, known, kind in ((models, MODELS, "zoo model"), (routes, tuple(ROUTES), "route")):
        unknown = [n for n in name if n not in known]
        if unknown:
            parser.error(f"unknown {kind} {', '.join(unknown)} (known: {', '.join(known)})")
    args.out.mkdir(parents=True, exist_ok=True)
    total = len(models) * len(routes)
    prepared = set()
    for i, (route, model) in enumerate(((r, m) for r in routes for m in models), 1):
        if route in PREPARE and route not in prepared:
            print(f"preparing {route} for {len(models)} models ...", flush=True)
            PREPARE[route](models)
            prepared.add(route)
        start = time.perf_counter()
        summary = make_fixture(route, model, args.out)
        print(f"[{i:3d}/{total}] {route}_{model:<18s} {summary}  ({time.perf_counter() - start:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
