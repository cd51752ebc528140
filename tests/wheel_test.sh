#!/usr/bin/env bash
# The Python wheel, as a user gets it: `pip wheel ./python` builds it, a fresh
# virtualenv installs it (with numpy and PyTorch, nothing from this checkout),
# and a script run outside the checkout exports a small PyTorch model, runs it
# with rml's executor and compares with PyTorch. ctest: wheel.
# usage: tests/wheel_test.sh WORK [PYTHON]
set -euo pipefail
work=$1
python=${2:-python3}
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$work"
mkdir -p "$work"
echo "== pip wheel ./python"
"$python" -m pip wheel --quiet --no-deps -w "$work/dist" --config-settings=build-dir="$work/build" "$root/python"
wheel=$(ls "$work"/dist/rml-*.whl)
echo "built $(basename "$wheel")"
echo "== a fresh virtualenv"
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet "$wheel" torch==2.13.0
cd "$work"  # nothing of the checkout on the path
"$work/venv/bin/python" - "$root/python/pyproject.toml" <<'PY'
import importlib.metadata
import pathlib
import sys

import numpy as np
import torch

import rml
from rml.from_torch import export

assert "site-packages" in rml.__file__, f"rml imported from {rml.__file__}, not the installed wheel"
meta = importlib.metadata.metadata("rml")
assert meta["Version"] == "0.1.0" and meta["Summary"] and meta["Requires-Python"], dict(meta)

torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(), torch.nn.Linear(16, 3), torch.nn.Softmax(-1)).eval()
x = torch.randn(4, 6)
export(net, (x,), input_names=["x"]).write("net.json")
with torch.no_grad():
    want = net(x).numpy()
got = rml.load("net.json").run({"x": x.numpy()}, threads=2)["output"]
worst = float(np.max(np.abs(got - want)))
assert worst <= 1e-5, worst
print(f"wheel rml {meta['Version']}: exported a PyTorch model and ran it; largest difference {worst:.1e}")
PY
