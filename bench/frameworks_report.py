"""The machine description and docs/benchmarks.md + its bar chart, for bench/frameworks.py."""
from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

from frameworks_worker import RML_SYSTEMS, SYSTEMS
from png_chart import write_bar_chart

REPO = Path(__file__).resolve().parent.parent
CPU_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
             "amx_tile", "amx_bf16")
VERSIONS = """
import json, sys, platform
import torch                                    # PyTorch before TensorFlow and jaxlib
import tensorflow, jax, jaxlib, onnxruntime, onnx, numpy
from importlib.metadata import version
print(json.dumps({"python": platform.python_version(), "torch": torch.__version__, "jax": jax.__version__,
                  "jaxlib": jaxlib.__version__, "tensorflow": tensorflow.__version__,
                  "onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__, "numpy": numpy.__version__,
                  "litert": version("ai-edge-litert")}))
"""


def cpu() -> tuple[str, list[str]]:
    """The CPU's model name and which of CPU_FLAGS it has, from /proc/cpuinfo."""
    name, flags = platform.processor() or "unknown", set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            name = value.strip()
        elif key.strip() == "flags":
            flags = set(value.split())
    return name, [f for f in CPU_FLAGS if f in flags]


def rml_commit() -> str:
    git = lambda *a: subprocess.run(["git", "-C", str(REPO), *a], capture_output=True, text=True).stdout.strip()  # noqa: E731
    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    return commit + (" (with uncommitted changes)" if git("status", "--porcelain", "--untracked-files=no") else "")


def environment() -> dict:
    """What the report's header says about the machine and the software."""
    name, flags = cpu()
    versions = json.loads(subprocess.run([sys.executable, "-W", "ignore", "-c", VERSIONS], capture_output=True,
                                         text=True, check=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
                          .stdout.strip().splitlines()[-1])
    return {"cpu": name, "cpu_flags": flags, "cores_online": os.cpu_count(),
            "cores_granted": len(os.sched_getaffinity(0)), "versions": versions, "rml_commit": rml_commit()}


# --- numbers -------------------------------------------------------------------------------------

def geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def fastest_framework(row: dict[str, dict]) -> tuple[str, float] | None:
    """(system, median) of the fastest system that is not rml's own executor."""
    timed = [(r["median_s"], s) for s, r in row.items() if s not in RML_SYSTEMS and "median_s" in r]
    return (min(timed)[1], min(timed)[0]) if timed else None


def ratio(row: dict[str, dict], system: str) -> float | None:
    fastest = fastest_framework(row)
    if fastest is None or "median_s" not in row.get(system, {}):
        return None
    return row[system]["median_s"] / fastest[1]


def table_of(results: list[dict]) -> dict[tuple[int, int], dict[str, dict[str, dict]]]:
    """{(batch, threads): {model: {system: result}}}, in run order."""
    tables: dict = {}
    for r in results:
        tables.setdefault((r["batch"], r["threads"]), {}).setdefault(r["model"], {})[r["system"]] = r
    return tables


# --- text ----------------------------------------------------------------------------------------

def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g}" if seconds * 1e3 < 100 else f"{seconds * 1e3:.0f}"


def latency_cell(result: dict | None) -> str:
    if not result or "median_s" not in result:
        return "skipped" if result else ""
    return f"{ms(result['median_s'])} ({ms(min(result['rounds']))}–{ms(max(result['rounds']))})"


def latency_table(rows: dict[str, dict[str, dict]], systems: list[str]) -> list[str]:
    lines = ["| model | " + " | ".join(SYSTEMS[s] for s in systems) + " | fastest framework | rml (C++) / fastest"
             " | rml (Python) / fastest |", "|---" * (len(systems) + 4) + "|"]
    for model, row in rows.items():
        fastest = fastest_framework(row)
        ratios = [ratio(row, s) for s in RML_SYSTEMS]
        lines.append(f"| {model} | " + " | ".join(latency_cell(row.get(s)) for s in systems)
                     + f" | {SYSTEMS[fastest[0]] if fastest else ''} | "
                     + " | ".join(f"{x:.2f}" if x else "" for x in ratios) + " |")
    cells = []
    for s in systems:
        values = [row[s]["median_s"] for row in rows.values() if "median_s" in row.get(s, {})]
        mean = geomean(values)
        cells.append("" if mean is None else ms(mean) + ("" if len(values) == len(rows) else f" ({len(values)} models)"))
    ratios = [geomean([x for x in (ratio(row, s) for row in rows.values()) if x]) for s in RML_SYSTEMS]
    lines.append("| **geometric mean** | " + " | ".join(cells) + " | | "
                 + " | ".join(f"**{x:.2f}**" if x else "" for x in ratios) + " |")
    return lines


def load_table(rows: dict[str, dict[str, dict]], systems: list[str]) -> list[str]:
    lines = ["| model | " + " | ".join(SYSTEMS[s] for s in systems) + " |", "|---" * (len(systems) + 1) + "|"]
    for model, row in rows.items():
        cells = []
        for s in systems:
            r = row.get(s, {})
            cells.append(f"{ms(r['load_s'])} ms, {r['peak_kib'] / 1024:.0f} MB" if r.get("peak_kib") else "")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return lines


def agreement(results: list[dict], systems: list[str]) -> list[str]:
    """Each system's largest max |output - PyTorch eager's output| over the models."""
    worst = {s: max((r["max_diff"] for r in results if r["system"] == s and "max_diff" in r), default=None)
             for s in systems}
    return ["Largest max |difference| of each system's output to PyTorch eager's, over the models: "
            + ", ".join(f"{SYSTEMS[s]} {w:.1e}" for s, w in worst.items() if w is not None) + "."]


def skipped(results: list[dict]) -> list[str]:
    return [f"- {SYSTEMS[r['system']]} on {r['model']} (batch {r['batch']}, {r['threads']} thread(s)): {r['error']}"
            for r in results if "error" in r]


def header(run: dict) -> list[str]:
    env, v = run["environment"], run["environment"]["versions"]
    lines = ["# Benchmarks: rml against the frameworks", "",
             "Generated by `make bench-frameworks` ([bench/frameworks.py](../bench/frameworks.py)); do not edit by hand.", ""]
    if run.get("note"):
        lines += [f"> {run['note']}", ""]
    lines += [f"- CPU: {env['cpu']}; flags: {' '.join(env['cpu_flags'])}",
              f"- cores: {env['cores_online']} online, {env['cores_granted']} granted to the run "
              "(each worker pinned with `taskset` to the first THREADS of them)",
              f"- Python {v['python']}, PyTorch {v['torch']}, JAX {v['jax']} (jaxlib {v['jaxlib']}), "
              f"TensorFlow {v['tensorflow']}, ONNX Runtime {v['onnxruntime']} (onnx {v['onnx']}), "
              f"LiteRT (ai-edge-litert) {v.get('litert', '?')}, NumPy {v['numpy']}",
              f"- rml: commit {env['rml_commit']}",
              f"- command: `{run['command']}`",
              "- the full suite (19 models, batch 1 and 16, 1 and 2 threads, 7 rounds): `make bench-frameworks`", ""]
    return lines


METHOD = """\
## How it is measured

Each model is built at bench size (zoo/configs.py) on the shared seeded weights and fed the
same inputs (zoo/inputs.py); rml's graph is exported once from PyTorch (rml.from_torch), ONNX
Runtime runs torch.onnx.export's model and, separately, `rml convert --to onnx`'s, and the
LiteRT interpreter (TFLite's runtime, with its default XNNPACK delegate, num_threads=THREADS)
runs `rml convert --to tflite`'s (models the TFLite converter refuses are listed as skipped). Every
system checks its first output against PyTorch eager's. Per (model, batch, threads) each system
gets a fresh worker process pinned with `taskset`, with its thread counts set to THREADS
(torch.set_num_threads, TF intra-op threads, ORT intra_op_num_threads, rml --threads /
threads=; inter-op pools at 1; XLA_FLAGS=--xla_cpu_multi_thread_eigen=false on one thread, and
XLA's pool sized by the taskset mask above one). Then rounds: in round r every system times one
round (three warm-up runs, then the median of N runs, N chosen so a round lasts about the
target time), in an order rotated by r. A cell gives the median of the round medians in ms
and, in brackets, their min–max. rml (C++) is `rml run --repeat N` (it times itself inside, one
process per round, so process start is not timed); rml (Python binding) is `rml.load(path).run(feeds,
threads=T)` timed in Python. The ratio columns divide rml's median by the fastest framework's
(every row but rml's two: ONNX Runtime and LiteRT on rml's converted models count as frameworks); below
1 rml is faster.

Load/first result: from building (frameworks: the zoo definition, then jit/trace/compile) or
loading (rml, ONNX Runtime and LiteRT: the file) the model to the first output, without the process
start; for rml (C++), the wall time of one `rml run` less that of `rml convert --list`. Peak
memory: ru_maxrss of the worker (for rml (C++), of its largest `rml run` process); it includes
the framework's own import (and about 5 MB of rml's extension, which each worker loads to read
the shared files).
"""


def write_report(run: dict, out: Path, chart: Path) -> None:
    results = run["results"]
    systems = [s for s in SYSTEMS if any(r["system"] == s for r in results)]
    tables = table_of(results)
    lines = header(run) + METHOD.splitlines() + [""]
    for (batch, threads), rows in tables.items():
        lines += [f"## Latency, batch {batch}, {threads} thread{'s' if threads > 1 else ''} (ms)", ""]
        lines += latency_table(rows, systems) + [""]
    for (batch, threads), rows in tables.items():
        lines += [f"## Load/first result and peak memory, batch {batch}, {threads} thread{'s' if threads > 1 else ''}",
                  ""] + load_table(rows, systems) + [""]
    lines += ["## Agreement", ""] + agreement(results, systems) + [""]
    if skips := skipped(results):
        lines += ["## Skipped", ""] + skips + [""]
    if "rml_cpp" in systems:
        write_chart(tables, chart)
        lines += ["## rml (C++) against the fastest framework", "",
                  f"![rml (C++) time / fastest framework, per model]({os.path.relpath(chart, out.parent)})", ""]
    out.write_text("\n".join(lines))


def write_chart(tables: dict, chart: Path) -> None:
    configs = list(tables)
    models = list(dict.fromkeys(m for rows in tables.values() for m in rows))
    values = [[ratio(tables[c].get(m, {}), "rml_cpp") for c in configs] for m in models]
    means = [geomean([row[i] for row in values if row[i]]) for i in range(len(configs))]
    chart.parent.mkdir(parents=True, exist_ok=True)
    write_bar_chart(chart, models + ["geometric mean"],
                    [f"batch {b}, {t} thread{'s' if t > 1 else ''}" for b, t in configs], values + [means],
                    title="rml (C++) time / fastest framework")
