"""How `rml validate` scales with the number of nodes: graph parsing must stay linear.

    python bench/parse_graphs.py --rml build/rml [--rml OTHER/rml ...] [--nodes 12500,25000,50000,100000]

Writes chains of N relu nodes (one value and one node per line, as rml writes graphs) to a
temporary folder and reports, per binary, the median wall time of three `rml validate` runs
and the peak resident memory (GNU time), binaries alternating run by run.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def write_chain(path: Path, nodes: int) -> None:
    lines = ['{"format": "rml-graph", "version": 1,', '"inputs": [{"name": "x", "value": 0}],',
             f'"outputs": [{{"name": "y", "value": {nodes}}}],', '"values": [']
    lines += [json.dumps({"id": i, "dtype": "f32", "shape": [2]}) + ("," if i < nodes else "") for i in range(nodes + 1)]
    lines += ['],', '"nodes": [']
    lines += [json.dumps({"op": "relu", "inputs": [i], "outputs": [i + 1], "attrs": {}}) + ("," if i + 1 < nodes else "")
              for i in range(nodes)]
    lines += [']}']
    path.write_text("\n".join(lines) + "\n")


def validate(rml: str, graph: Path) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", rml, "validate", str(graph)],
                          capture_output=True, text=True, check=True)
    return time.perf_counter() - start, int(done.stderr.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rml", action="append", required=True, help="an rml binary (repeat to compare)")
    parser.add_argument("--nodes", default="12500,25000,50000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print("| nodes | MB | " + " | ".join(f"{rml}: s, MB peak" for rml in args.rml) + " |")
        print("| ---: | ---: |" + " ---: |" * len(args.rml))
        for nodes in (int(n) for n in args.nodes.split(",")):
            graph = Path(folder) / f"chain{nodes}.json"
            write_chain(graph, nodes)
            runs = {rml: [] for rml in args.rml}
            for _ in range(args.repeat):
                for rml in args.rml:
                    runs[rml].append(validate(rml, graph))
            cells = [f"{statistics.median(t for t, _ in runs[rml]):.2f}, {max(m for _, m in runs[rml]) / 1024:.0f}"
                     for rml in args.rml]
            print(f"| {nodes} | {graph.stat().st_size / 1e6:.1f} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
