"""The worker side of bench/frameworks.py: one system, one zoo model, one batch, one thread count.

    python bench/frameworks_worker.py prepare MODEL --batches 1,16 --scratch DIR
    python bench/frameworks_worker.py serve SYSTEM MODEL --batch B --threads T --scratch DIR [--target S]

`prepare` (imports PyTorch only) exports the bench-size model from PyTorch for each
batch into DIR: the rml graph (rml.from_torch), the shared inputs (zoo/inputs.py) as
safetensors, PyTorch eager's output (the reference every system is checked against)
and the model from torch.onnx.export.

`serve` is started by frameworks.py under `taskset`, in a fresh process per system, so
that frameworks never share a process and ru_maxrss is this system's own peak. It
builds or loads the model, runs it once (the load/first-result time), checks the
output against PyTorch's, picks how many runs make one round, and answers one JSON
line on stdout per request read on stdin: `time` (one round: the median of that many
runs after a warm-up) or `quit` (the peak resident memory). Anything the frameworks
print goes to stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SYSTEMS = {  # key: the label in the report
    "rml_cpp": "rml (C++)",
    "rml_py": "rml (Python binding)",
    "torch": "PyTorch eager",
    "torch_compile": "torch.compile",
    "jax": "JAX jit",
    "tf": "TF function",
    "tf_xla": "TF function (XLA)",
    "ort_torch": "ORT (torch.onnx)",
    "ort_rml": "ORT (rml convert)",
    "litert": "LiteRT (rml convert)",
}
RML_SYSTEMS = ("rml_cpp", "rml_py")  # rml's own executor; every other row is a framework

MIN_REPEAT, MAX_REPEAT = 5, 2000


def paths(scratch: Path, model: str, batch: int) -> dict[str, Path]:
    """Where `prepare` writes one (model, batch) and the systems read it."""
    stem = scratch / f"{model}_b{batch}"
    return {"graph": stem.with_suffix(".json"), "inputs": Path(f"{stem}.inputs.safetensors"),
            "expected": Path(f"{stem}.expected.safetensors"), "torch_onnx": Path(f"{stem}.torch.onnx"),
            "rml_onnx": Path(f"{stem}.rml.onnx"), "rml_tflite": Path(f"{stem}.rml.tflite"),
            "output": Path(f"{stem}.rml_cpp.safetensors")}


def input_names(count: int) -> list[str]:
    return [f"input.{i}" for i in range(count)]


# --- prepare -----------------------------------------------------------------------------------

def prepare(model: str, batches: list[int], scratch: Path) -> None:
    import torch  # first, as everywhere in rml

    import rml
    from rml.from_torch import export
    from zoo.inputs import example_inputs
    from zoo.torch_zoo import build

    module, _ = build(model, "bench")
    module.eval()
    for batch in batches:
        where = paths(scratch, model, batch)
        arrays = example_inputs(model, batch, "bench")
        tensors = tuple(torch.from_numpy(x) for x in arrays)
        names = input_names(len(arrays))
        with torch.inference_mode():
            expected = module(*tensors).numpy()
        export(module, tensors, input_names=names).write(str(where["graph"]))
        rml.write_tensors(str(where["inputs"]), dict(zip(names, arrays)))
        rml.write_tensors(str(where["expected"]), {"output": expected})
        torch.onnx.export(module, tensors, str(where["torch_onnx"]), input_names=names, output_names=["output"],
                          dynamo=False)


# --- the systems: each returns (version, run) where run() computes the output and returns it ------

def load_torch(model, inputs, threads, where, compiled=False):
    import torch

    from zoo.torch_zoo import build

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    module, _ = build(model, "bench")
    module.eval()
    if compiled:
        module = torch.compile(module)
    tensors = tuple(torch.from_numpy(x) for x in inputs)

    def run():
        with torch.inference_mode():
            return module(*tensors)
    return f"torch {torch.__version__}", run


def load_torch_compile(model, inputs, threads, where):
    return load_torch(model, inputs, threads, where, compiled=True)


def load_jax(model, inputs, threads, where):
    import jax

    from zoo.jax_zoo import build

    fn, params, _ = build(model, "bench")
    compiled = jax.jit(fn)
    arrays = [jax.device_put(x) for x in inputs]
    return f"jax {jax.__version__}", lambda: compiled(params, *arrays).block_until_ready()


def load_tf(model, inputs, threads, where, xla=False):
    import tensorflow as tf

    from zoo.tf_zoo import build

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    module, _ = build(model, "bench")
    function = tf.function(module, jit_compile=xla)
    tensors = [tf.constant(x) for x in inputs]
    return f"tensorflow {tf.__version__}", lambda: function(*tensors).numpy()


def load_tf_xla(model, inputs, threads, where):
    return load_tf(model, inputs, threads, where, xla=True)


def load_ort(path: Path, inputs, threads):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feeds = {i.name: x for i, x in zip(session.get_inputs(), inputs)}
    return f"onnxruntime {ort.__version__}", lambda: session.run(None, feeds)[0]


def load_ort_torch(model, inputs, threads, where):
    return load_ort(where["torch_onnx"], inputs, threads)


def load_ort_rml(model, inputs, threads, where):
    return load_ort(where["rml_onnx"], inputs, threads)


def load_litert(model, inputs, threads, where):
    """The LiteRT interpreter (TFLite's runtime, XNNPACK on) on `rml convert --to tflite`'s model."""
    from importlib.metadata import version

    from ai_edge_litert.interpreter import Interpreter

    if not where["rml_tflite"].exists():
        raise RuntimeError(f"no {where['rml_tflite'].name}: `rml convert --to tflite` refused the model (see the log)")
    runner = Interpreter(model_path=str(where["rml_tflite"]), num_threads=threads).get_signature_runner()
    feeds = dict(zip(input_names(len(inputs)), inputs))
    return "ai-edge-litert " + version("ai-edge-litert"), lambda: runner(**feeds)["output"]


def load_rml_py(model, inputs, threads, where):
    import rml

    loaded = rml.load(str(where["graph"]))
    feeds = dict(zip(input_names(len(inputs)), inputs))
    return "rml (Python binding)", lambda: loaded.run(feeds, threads=threads)["output"]


class RmlCli:
    """The `rml` binary: one `rml run` process per request; it times itself inside, so its
    own start is not in a round. The load/first-result time is the wall time of one
    `rml run` less that of `rml convert --list` (the process start, no model)."""

    def __init__(self, binary: str, where: dict[str, Path], threads: int):
        self.binary, self.where, self.threads = binary, where, threads

    def command(self, repeat: int) -> list[str]:
        return [self.binary, "run", str(self.where["graph"]), "--inputs", str(self.where["inputs"]),
                "--output", str(self.where["output"]), "--threads", str(self.threads), "--repeat", str(repeat)]

    def load_seconds(self) -> float:
        def wall(command):
            start = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            return time.perf_counter() - start
        start_cost = min(wall([self.binary, "convert", "--list"]) for _ in range(5))
        return max(0.0, wall(self.command(1)) - start_cost)

    def output(self):
        import rml
        return rml.read_tensors(str(self.where["output"]))["output"]

    def round(self, repeat: int) -> float:
        from tools.demo import rml_run
        return rml_run(self.binary, self.where["graph"], self.where["inputs"], self.where["output"], self.threads, repeat)


LOADERS = {"rml_py": load_rml_py, "torch": load_torch, "torch_compile": load_torch_compile, "jax": load_jax,
           "tf": load_tf, "tf_xla": load_tf_xla, "ort_torch": load_ort_torch, "ort_rml": load_ort_rml,
           "litert": load_litert}
FIRST_IMPORT = {"torch": "torch", "torch_compile": "torch", "jax": "jax", "tf": "tensorflow", "tf_xla": "tensorflow",
                "ort_torch": "onnxruntime", "ort_rml": "onnxruntime", "litert": "ai_edge_litert.interpreter"}


# --- serve -------------------------------------------------------------------------------------

def round_median(run, repeat: int) -> float:
    from tools.demo import median_seconds  # three warm-up runs, then the median of `repeat`
    return median_seconds(run, repeat)


class Rounds:
    """One round: `time_round(repeat)` (the median of `repeat` runs); the next round's
    repeat is re-estimated from this round's median, so a slow start (thread pools
    waking, a neighbour on the core) only shortens the first round."""

    def __init__(self, time_round, repeat: int, target: float):
        self.time_round, self.repeat, self.target = time_round, repeat, target

    def __call__(self) -> dict:
        runs = self.repeat
        median = self.time_round(runs)
        self.repeat = repeat_for(median, self.target)
        return {"median_s": median, "runs": runs}


def repeat_for(seconds_per_run: float, target: float) -> int:
    """Runs per round so that a round lasts about `target` seconds."""
    return int(min(MAX_REPEAT, max(MIN_REPEAT, target / max(seconds_per_run, 1e-7))))


def max_difference(output, expected) -> float:
    import numpy as np
    return float(np.max(np.abs(np.asarray(output, np.float64) - np.asarray(expected, np.float64))))


def start_system(system, model, batch, threads, scratch, rml_binary, target):
    """Builds/loads and runs once; returns (ready message, Rounds)."""
    where = paths(scratch, model, batch)
    if system in FIRST_IMPORT:
        __import__(FIRST_IMPORT[system])  # the framework before rml's extension and tools/demo.py
    import rml
    from zoo.inputs import example_inputs

    inputs = example_inputs(model, batch, "bench")
    expected = rml.read_tensors(str(where["expected"]))["output"]
    if system == "rml_cpp":
        cli = RmlCli(rml_binary, where, threads)
        load_s = cli.load_seconds()
        output, version = cli.output(), "rml (C++)"
        repeat = repeat_for(cli.round(MIN_REPEAT), target)
        return ({"version": version, "load_s": load_s, "repeat": repeat,
                 "max_diff": max_difference(output, expected)}, Rounds(cli.round, repeat, target))
    start = time.perf_counter()
    version, run = LOADERS[system](model, inputs, threads, where)
    output = run()
    load_s = time.perf_counter() - start
    once = min(timed(run) for _ in range(8))  # the fastest of a few: the first runs warm thread pools up
    repeat = repeat_for(once, target)
    return ({"version": version, "load_s": load_s, "repeat": repeat,
             "max_diff": max_difference(output, expected)}, Rounds(lambda n: round_median(run, n), repeat, target))


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def peak_kib(system: str) -> int:
    """This worker's peak resident memory; for rml (C++), that of its largest `rml run` child."""
    who = resource.RUSAGE_CHILDREN if system == "rml_cpp" else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss


def serve(args) -> int:
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever the frameworks print goes to stderr, not into the replies
    sys.stdout = sys.stderr
    say = lambda message: replies.write(json.dumps(message) + "\n")  # noqa: E731
    try:
        ready, one_round = start_system(args.system, args.model, args.batch, args.threads, args.scratch, args.rml,
                                        args.target)
    except Exception as error:  # noqa: BLE001  (a system that cannot run this model is skipped, with the reason)
        say({"error": f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"[:300]})
        return 1
    say(ready)
    for line in sys.stdin:
        if line.strip() == "time":
            say(one_round())
        elif line.strip() == "quit":
            say({"peak_kib": peak_kib(args.system)})
            return 0
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("prepare")
    p.add_argument("model")
    p.add_argument("--batches", required=True)
    p.add_argument("--scratch", type=Path, required=True)
    s = commands.add_parser("serve")
    s.add_argument("system", choices=SYSTEMS)
    s.add_argument("model")
    s.add_argument("--batch", type=int, required=True)
    s.add_argument("--threads", type=int, required=True)
    s.add_argument("--scratch", type=Path, required=True)
    s.add_argument("--rml", default=str(REPO / "build" / "rml"))
    s.add_argument("--target", type=float, default=0.2, help="seconds per round (sets the runs per round)")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        prepare(args.model, [int(b) for b in args.batches.split(",")], args.scratch)
        return 0
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
