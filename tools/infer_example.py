"""One small classifier in PyTorch, JAX and TensorFlow, run by the `rml` program.

    python tools/infer_example.py --rml build/rml [--batch 4] [--keep DIR]

The classifier — dense, layer norm, tanh-GELU, dense, softmax — is written the
ordinary way in each framework (torch.nn layers, jax.numpy, Keras layers) on one
set of weights. Each is exported by rml's direct exporter, run by `rml run` on
the same inputs, and the six results (three frameworks, three rml runs) are
compared pairwise: the table of largest absolute differences is printed, and
every entry must be within 1e-5 (exit 1 otherwise).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

FEATURES, HIDDEN, CLASSES, EPS = 16, 32, 10, 1e-5
TOLERANCE = 1e-5


def weights() -> dict[str, np.ndarray]:
    """The shared weights, in PyTorch's layout (Linear weights [out, in])."""
    rng = np.random.default_rng(2026)
    draw = lambda *shape, scale=1.0: (rng.standard_normal(shape) * scale).astype(np.float32)
    return {"fc1.weight": draw(HIDDEN, FEATURES, scale=FEATURES ** -0.5), "fc1.bias": draw(HIDDEN, scale=0.1),
            "norm.weight": 1 + draw(HIDDEN, scale=0.1), "norm.bias": draw(HIDDEN, scale=0.1),
            "fc2.weight": draw(CLASSES, HIDDEN, scale=HIDDEN ** -0.5), "fc2.bias": draw(CLASSES, scale=0.1)}


def torch_classifier(w):
    import torch

    net = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.LayerNorm(HIDDEN, eps=EPS),
                              torch.nn.GELU(approximate="tanh"), torch.nn.Linear(HIDDEN, CLASSES),
                              torch.nn.Softmax(dim=-1))
    with torch.no_grad():
        for layer, name in ((net[0], "fc1"), (net[1], "norm"), (net[3], "fc2")):
            layer.weight.copy_(torch.from_numpy(w[f"{name}.weight"]))
            layer.bias.copy_(torch.from_numpy(w[f"{name}.bias"]))
    return net.eval()


def jax_classifier(w):
    import jax
    import jax.numpy as jnp

    params = {"fc1": {"kernel": w["fc1.weight"].T, "bias": w["fc1.bias"]},
              "norm": {"scale": w["norm.weight"], "bias": w["norm.bias"]},
              "fc2": {"kernel": w["fc2.weight"].T, "bias": w["fc2.bias"]}}

    def classify(p, x):
        h = x @ p["fc1"]["kernel"] + p["fc1"]["bias"]
        mean = h.mean(-1, keepdims=True)
        h = (h - mean) / jnp.sqrt(((h - mean) ** 2).mean(-1, keepdims=True) + EPS)
        h = jax.nn.gelu(h * p["norm"]["scale"] + p["norm"]["bias"], approximate=True)
        return jax.nn.softmax(h @ p["fc2"]["kernel"] + p["fc2"]["bias"], axis=-1)

    return classify, params


def tf_classifier(w, batch: int):
    import keras

    net = keras.Sequential([keras.Input((FEATURES,), batch_size=batch), keras.layers.Dense(HIDDEN, name="fc1"),
                            keras.layers.LayerNormalization(epsilon=EPS, name="norm"),
                            keras.layers.Activation(lambda t: keras.activations.gelu(t, approximate=True)),
                            keras.layers.Dense(CLASSES, name="fc2"), keras.layers.Softmax()])
    net.get_layer("fc1").set_weights([w["fc1.weight"].T, w["fc1.bias"]])
    net.get_layer("norm").set_weights([w["norm.weight"], w["norm.bias"]])
    net.get_layer("fc2").set_weights([w["fc2.weight"].T, w["fc2.bias"]])
    return net


def rml_run(rml: Path, graph: Path, x: np.ndarray, folder: Path) -> np.ndarray:
    import rml as rml_python

    inputs, outputs = folder / "inputs.safetensors", folder / f"{graph.stem}.out.safetensors"
    rml_python.write_tensors(str(inputs), {"x": x})
    subprocess.run([str(rml), "run", str(graph), "--inputs", str(inputs), "--output", str(outputs)],
                   check=True, stdout=subprocess.DEVNULL)
    return rml_python.read_tensors(str(outputs))["output"]


def table(results: dict[str, np.ndarray]) -> tuple[str, float]:
    """The pairwise largest |a - b| as a text table, and the largest entry."""
    names = list(results)
    width = max(len(n) for n in names) + 2
    lines = [" " * width + "".join(f"{n:>{width}}" for n in names)]
    worst = 0.0
    for a in names:
        cells = []
        for b in names:
            d = float(np.max(np.abs(results[a].astype(np.float64) - results[b])))
            worst = max(worst, d)
            cells.append(f"{d:>{width}.1e}")
        lines.append(f"{a:<{width}}" + "".join(cells))
    return "\n".join(lines), worst


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rml", type=Path, default=REPO / "build" / "rml", help="the rml program")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--keep", type=Path, help="write the exported graphs here (default: a temporary folder)")
    args = parser.parse_args(argv)
    if not args.rml.exists():
        parser.error(f"{args.rml} does not exist (build it: make build)")

    import torch  # first: torch.export must load before TensorFlow's or jaxlib's LLVM

    import jax
    import tensorflow as tf

    import rml as rml_python
    from rml import from_jax, from_tf, from_torch

    torch.set_num_threads(1)
    w = weights()
    x = np.random.default_rng(7).standard_normal((args.batch, FEATURES)).astype(np.float32)

    print(f"classifier x[{args.batch}, {FEATURES}] -> dense {HIDDEN} -> layer norm -> tanh-GELU -> dense {CLASSES} "
          "-> softmax, in PyTorch, JAX and TensorFlow", flush=True)
    results, exports = {}, {}
    net = torch_classifier(w)
    with torch.no_grad():
        results["torch"] = net(torch.from_numpy(x)).numpy()
    exports["torch"] = from_torch.export(net, (torch.from_numpy(x),), input_names=["x"])
    fn, params = jax_classifier(w)
    results["jax"] = np.asarray(jax.jit(fn)(params, x))
    exports["jax"] = from_jax.export(fn, params, (x,), input_names=["x"])
    keras_net = tf_classifier(w, args.batch)
    results["tf"] = np.asarray(keras_net(tf.constant(x), training=False))
    exports["tf"] = from_tf.export(keras_net, (x,), input_names=["x"])

    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        for framework, builder in exports.items():
            graph = folder / f"classifier_{framework}.json"
            builder.write(str(graph))
            results[f"rml({framework})"] = rml_run(args.rml, graph, x, Path(scratch))
            nodes = rml_python.load(str(graph)).node_count
            print(f"  {framework}: exported ({nodes} nodes), run by {args.rml.name}", flush=True)

    text, worst = table(results)
    print("\nlargest |a - b| over the outputs, every pair:\n" + text)
    ok = worst <= TOLERANCE
    print(f"\nlargest difference {worst:.2e}: {'within' if ok else 'OUTSIDE'} {TOLERANCE:g}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
