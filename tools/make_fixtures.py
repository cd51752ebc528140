"""Exports every tiny zoo model by every route and writes the golden fixtures.

    python tools/make_fixtures.py [--out testdata] [--models mlp,cnn] [--routes torch]

For each route and model it builds the model at its tiny size, draws a batch of
2 inputs, runs the framework, exports and writes `<route>_<model>.json` and
`.safetensors`, evaluates the written file with rml's reference kernels and
requires it to match the framework within atol 1e-5 + rtol 1e-4, and writes
`<route>_<model>.golden.safetensors`: the framework's inputs and outputs under
the graph's input and output names. The three files are written into a scratch
folder and moved into place only once the check passes.

Regenerating with the same versions gives byte-identical graphs, weights and
golden inputs on any machine. The frameworks' outputs move in their last bits
from one CPU to another (each picks its kernels per CPU), so a golden file
whose outputs moved by at most GOLDEN_DRIFT is left as committed: `make
fixtures` on another machine does not churn the repository.
"""
from __future__ import annotations

import argparse
import math
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

# How far a framework's golden output may move between CPUs. Regenerated on an
# Intel Xeon with AVX-512, the outputs committed from an AMD Zen 4 moved by at
# most 9.5e-7 (torch_tiny_gpt, whose outputs reach 2.95: four units in the
# last place); with PyTorch, MKL, oneDNN and XLA held to AVX2 on the Zen 4, 74
# of 114 moved, by at most 7.2e-7 (docs/architecture.md, "What is exact
# where"). Twice the largest seen leaves room for other CPUs, yet stays a fifth
# of the 1e-5 the executor is held to against these outputs.
GOLDEN_DRIFT = 2e-6


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


def golden_drift(made: dict, committed: dict, input_names) -> tuple[float, str]:
    """How far two golden files of one fixture differ: (largest |made - committed|
    over the framework's outputs, ""), or (inf, what differs) where they differ in
    anything that must be exact: the names, dtypes and shapes, an input's bits, an
    integer output, or where the NaNs are."""
    if list(made) != list(committed):
        return math.inf, f"holds {list(made)} where the committed file holds {list(committed)}"
    worst = 0.0
    for name, value in made.items():
        old = committed[name]
        if value.dtype != old.dtype or value.shape != old.shape:
            return math.inf, f"'{name}' is {value.dtype}{list(value.shape)}, committed {old.dtype}{list(old.shape)}"
        if name in input_names or not np.issubdtype(value.dtype, np.floating):
            if value.tobytes() != old.tobytes():
                kind = "input" if name in input_names else "integer output"
                return math.inf, f"{kind} '{name}' differs"
            continue
        if not np.array_equal(np.isnan(value), np.isnan(old)):
            return math.inf, f"output '{name}' has NaNs in other places"
        difference = np.abs(value.astype(np.float64) - old)
        worst = max(worst, float(np.max(np.nan_to_num(difference, nan=0.0), initial=0.0)))
    return worst, ""


def read_golden(path: Path) -> tuple[dict, list[str]]:
    """A fixture's golden tensors and its graph's input names (from the .json beside it)."""
    graph = path.with_name(path.name.replace(".golden.safetensors", ".json"))
    return rml.read_tensors(str(path)), rml.load(str(graph)).inputs


def fixture_differences(made: Path, committed: Path) -> list[str]:
    """Every way the fixtures in `made` differ from those in `committed`: graphs and
    weights by bytes, golden files by golden_drift against GOLDEN_DRIFT. One line per
    golden file over the bound, with its largest difference."""
    problems = []
    for path in sorted(made.iterdir()):
        old = committed / path.name
        if not old.exists():
            problems.append(f"{path.name}: not in {committed}")
        elif path.name.endswith(".golden.safetensors"):
            (tensors, inputs), (old_tensors, _) = read_golden(path), read_golden(old)
            drift, why = golden_drift(tensors, old_tensors, inputs)
            if drift > GOLDEN_DRIFT:
                problems.append(f"{path.name}: {why}" if why else
                                f"{path.name}: outputs moved by up to {drift:.2e} (bound {GOLDEN_DRIFT:.0e})")
        elif path.read_bytes() != old.read_bytes():
            problems.append(f"{path.name}: differs from the committed file")
    return problems


def keep_committed_golden(made: Path, committed: Path, input_names) -> str:
    """Deletes the freshly made golden file when the committed one differs from it
    only by framework drift within GOLDEN_DRIFT, so the committed bytes stay; says
    what it did."""
    if not committed.exists():
        return ""
    drift, _ = golden_drift(rml.read_tensors(str(made)), rml.read_tensors(str(committed)), input_names)
    if drift > GOLDEN_DRIFT:
        return ""
    made.unlink()
    return "" if drift == 0 else f", kept the committed outputs (moved by {drift:.1e})"


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
        golden = scratch / f"{stem}.golden.safetensors"
        rml.write_tensors(str(golden), {**inputs, **outputs})
        kept = keep_committed_golden(golden, out / golden.name, written.inputs)
        for suffix in (".safetensors", ".golden.safetensors", ".json"):  # the .json last: tests look for it
            path = scratch / f"{stem}{suffix}"
            if path.exists():
                path.replace(out / path.name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return f"{written.node_count:4d} nodes, max |rml reference - {route}| = {worst:.2e}{kept}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "testdata", help="folder to write (default: testdata)")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated zoo models (default: all 19)")
    parser.add_argument("--routes", default=",".join(ROUTES), help=f"comma-separated routes (default: {','.join(ROUTES)})")
    parser.add_argument("--check", action="store_true",
                        help="write into a scratch folder instead, then compare with --out: graphs, weights and "
                             "golden inputs byte for byte, outputs within GOLDEN_DRIFT (exit 1 when any differs)")
    args = parser.parse_args(argv)
    models, routes = args.models.split(","), args.routes.split(",")
    for name, known, kind in ((models, MODELS, "zoo model"), (routes, tuple(ROUTES), "route")):
        unknown = [n for n in name if n not in known]
        if unknown:
            parser.error(f"unknown {kind} {', '.join(unknown)} (known: {', '.join(known)})")
    if args.check:
        with tempfile.TemporaryDirectory(prefix="rml-fixtures-") as scratch:
            generate(models, routes, Path(scratch))
            return report_differences(Path(scratch), args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    generate(models, routes, args.out)
    return 0


def report_differences(made: Path, committed: Path) -> int:
    """Prints how far each regenerated golden output moved and every difference."""
    drifts = []
    for path in made.glob("*.golden.safetensors"):
        if (committed / path.name).exists():
            (tensors, inputs), (old, _) = read_golden(path), read_golden(committed / path.name)
            drifts.append((golden_drift(tensors, old, inputs)[0], path.name))
    moved = sorted((d for d in drifts if d[0] > 0), reverse=True)
    print(f"{len(moved)} of {len(drifts)} golden outputs moved (bound {GOLDEN_DRIFT:.0e}); the largest:")
    for drift, name in moved[:5]:
        print(f"  {drift:.2e}  {name}")
    problems = fixture_differences(made, committed)
    print("\n".join(problems) if problems else f"every fixture matches {committed}")
    return 1 if problems else 0


def generate(models: list[str], routes: list[str], out: Path) -> None:
    total = len(models) * len(routes)
    prepared = set()
    for i, (route, model) in enumerate(((r, m) for r in routes for m in models), 1):
        if route in PREPARE and route not in prepared:
            print(f"preparing {route} for {len(models)} models ...", flush=True)
            PREPARE[route](models)
            prepared.add(route)
        start = time.perf_counter()
        summary = make_fixture(route, model, out)
        print(f"[{i:3d}/{total}] {route}_{model:<18s} {summary}  ({time.perf_counter() - start:.1f} s)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
