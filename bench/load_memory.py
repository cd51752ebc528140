"""Load (and conversion) time and peak memory of the `rml` program on model files, side by side.

    python bench/load_memory.py MODEL.json [MODEL.json ...] --rml build/rml [--rml OTHER/rml ...]
                                [--commands validate,info,convert]

For each model and each `rml` binary it runs, each in a fresh process,
`rml validate MODEL` (read and check the graph and its weights: the load) and
`rml info MODEL` (the load plus the executor's plan: kernels chosen, constant
weights prepacked, arena laid out) and, when asked, `rml convert MODEL --to onnx`
(the load plus the ONNX conversion and writing it), and reports each one's peak resident
memory above the same command's footprint on the smallest shipped model as a multiple of the weights file, and the median wall time of
--repeat runs. Binaries alternate run by run, so machine noise hits both alike.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASELINE_MODEL = REPO / "examples" / "tiny_classifier.json"

# GNU time reports the command's peak resident set (%M, KiB). Measuring from
# Python instead would count the interpreter: a forked child starts as a copy.
GNU_TIME = "/usr/bin/time"


COMMANDS = {
    "validate": lambda model: ["validate", str(model)],
    "info": lambda model: ["info", str(model)],
    "convert": lambda model: ["convert", str(model), "--to", "onnx", "-o", str(Path("/tmp") / f"{model.stem}.bench.onnx")],
}


def measure(command: list[str]) -> tuple[float, int]:
    """(wall seconds, peak resident bytes) of one run of `command`."""
    start = time.perf_counter()
    out = subprocess.run([GNU_TIME, "-f", "%M", *command], check=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    return seconds, int(out.stderr.strip().splitlines()[-1]) * 1024


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", type=Path)
    parser.add_argument("--rml", action="append", required=True, help="an rml binary (repeat to compare)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (default 5)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--commands", default="validate,info", help="which of validate, info, convert (default: validate,info)")
    args = parser.parse_args(argv)
    commands = args.commands.split(",")
    if unknown := [c for c in commands if c not in COMMANDS]:
        parser.error(f"unknown command {', '.join(unknown)} (known: {', '.join(COMMANDS)})")

    results = []
    baseline = {(rml, command): min(measure([rml, *COMMANDS[command](BASELINE_MODEL)])[1] for _ in range(3))
                for rml in args.rml for command in commands}
    print(f"{'model':<20} {'command':<9} {'binary':<28} {'weights MB':>10} {'peak MB':>8} "
          f"{'peak/weights':>12} {'median ms':>10}")
    for model in args.models:
        weights = model.with_suffix(".safetensors").stat().st_size
        for command in commands:
            runs: dict[str, list[tuple[float, int]]] = {rml: [] for rml in args.rml}
            for _ in range(args.repeat):
                for rml in args.rml:
                    runs[rml].append(measure([rml, *COMMANDS[command](model)]))
            for rml in args.rml:
                peak = max(p for _, p in runs[rml]) - baseline[rml, command]
                seconds = statistics.median(s for s, _ in runs[rml])
                results.append({"model": model.stem, "command": command, "rml": rml, "weights_bytes": weights,
                                "peak_bytes_above_baseline": peak, "median_seconds": seconds})
                print(f"{model.stem:<20} {command:<9} {rml[-28:]:<28} {weights / 1e6:>10.2f} {peak / 1e6:>8.2f} "
                      f"{peak / weights:>12.2f} {seconds * 1e3:>10.1f}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
