"""Prints the fixture matrix for docs/progress.md: per zoo model and route, the
node count (the specification's in brackets) and the largest absolute
difference between rml's executor and the framework on the golden inputs.

    python tools/fixture_report.py [--testdata testdata]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import rml  # noqa: E402
from zoo.configs import MODELS  # noqa: E402

ROUTES = ("torch", "jax", "tf", "stablehlo_torch", "stablehlo_jax", "stablehlo_tf")
# The specification's tiny node counts, in ROUTES order.
SPEC = {
    "mlp": (8, 8, 8, 11, 8, 9), "cnn": (10, 19, 12, 18, 19, 18), "transformer_block": (32, 42, 29, 50, 42, 37),
    "layernorm_gelu": (6, 6, 4, 7, 6, 7), "vit": (77, 95, 68, 113, 95, 84), "encoder": (71, 96, 61, 106, 96, 78),
    "tiny_gpt": (71, 98, 63, 108, 98, 80), "rnn": (46, 42, 41, 41, 42, 42), "lstm": (106, 102, 101, 101, 147, 102),
    "ssm": (27, 34, 28, 28, 45, 33), "autoencoder": (14, 14, 14, 19, 17, 15), "vae": (20, 20, 20, 26, 23, 21),
    "gan_generator": (9, 9, 9, 12, 9, 10), "diffusion_mlp": (14, 14, 15, 17, 14, 16), "unet": (23, 29, 34, 27, 29, 39),
    "gcn": (14, 11, 7, 13, 11, 12), "two_tower": (12, 12, 12, 16, 12, 13), "clip": (21, 30, 22, 25, 30, 23),
    "moe": (57, 63, 43, 68, 64, 63),
}


def cell(testdata: Path, route: str, model: str, spec: int) -> str:
    graph = testdata / f"{route}_{model}.json"
    if not graph.exists():
        return "—"
    loaded = rml.load(str(graph))
    golden = rml.read_tensors(str(testdata / f"{route}_{model}.golden.safetensors"))
    got = loaded.run({name: golden[name] for name in loaded.inputs})["output"]
    worst = float(np.max(np.abs(got.astype(np.float64) - golden["output"])))
    return f"{loaded.node_count} ({spec}), {worst:.1e}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--testdata", type=Path, default=REPO / "testdata")
    args = parser.parse_args(argv)
    print("| model | " + " | ".join(ROUTES) + " |")
    print("| --- |" + " --- |" * len(ROUTES))
    for model in MODELS:
        cells = [cell(args.testdata, route, model, SPEC[model][i]) for i, route in enumerate(ROUTES)]
        print(f"| {model} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
