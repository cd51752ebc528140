"""Exports zoo models from PyTorch at one size into a folder (for the benchmarks).

    python bench/export_zoo.py OUT_DIR [--models tiny_gpt,lstm] [--size bench] [--batch 1]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402,F401  (PyTorch loads first, as everywhere in rml)

from rml.from_torch import export  # noqa: E402
from zoo.configs import MODELS  # noqa: E402
from zoo.torch_zoo import build  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated zoo models (default: all)")
    parser.add_argument("--size", default="bench", choices=("tiny", "bench"))
    parser.add_argument("--batch", type=int, default=1)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for model in args.models.split(","):
        module, make_inputs = build(model, args.size)
        inputs = make_inputs(args.batch)
        export(module.eval(), inputs, input_names=[f"input.{i}" for i in range(len(inputs))]).write(str(args.out / f"{model}.json"))
        print(f"{model}: {(args.out / f'{model}.safetensors').stat().st_size / 1e6:.2f} MB of weights", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
