#!/usr/bin/env python3
"""Markdown tables from rml_bench JSON output (standard library only).

    rml_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
              --benchmark_min_time=0.2 --benchmark_out=o2.json --benchmark_out_format=json
    python3 bench/summarize.py o2.json [o2_again.json ...] [--o3 o3.json]

Reads the median of each benchmark's repetitions. Given several passes (the
same binary run again, as separate processes), each row shows the pass with
the lowest median time and "spread": how much slower the slowest pass was.
With --o3 (the suite built with -DRML_BENCH_OPT=-O3), the model table gains
a column for it.
"""
import json
import sys


def load(path):
    with open(path) as f:
        data = json.load(f)
    rows = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name", "median") != "median":
            continue
        name = b["run_name"].replace("/real_time", "")
        family, *args = name.split("/")
        rows[name] = dict(family=family, args=dict(a.split(":") for a in args), **b)
    return data["context"], rows


def best_of(passes):
    """Per benchmark: the pass with the lowest median time, with the spread across passes."""
    rows = {}
    for name in passes[0]:
        runs = [p[name] for p in passes if name in p]
        runs = [r for r in runs if r.get("other_cores", 0) < 0.1] or runs  # loaded passes only as a last resort
        best = min(runs, key=us)
        rows[name] = dict(best, spread=max(us(r) for r in runs) / us(best) - 1)
    return rows


def us(row):
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[row["time_unit"]]
    return row["real_time"] * scale


def fmt_time(t):
    return f"{t:,.0f}" if t >= 100 else f"{t:.1f}" if t >= 1 else f"{t:.3f}"


def other(row):
    return f"{row.get('other_cores', float('nan')):.2f}"


def spread(row):
    return f"{100 * row.get('spread', 0):.0f}%"


def gemm_table(rows):
    out = ["| M x K x N | rml raw GFLOP/s (%peak) | rml executor 1 thread | rml executor 2 threads | "
           "2-thread speed-up | Eigen GFLOP/s (%peak) | rml raw / Eigen | max other_cores | max spread |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for shape in ["64/64/64", "256/256/256", "512/512/512", "1024/1024/1024", "64/512/512"]:
        m, k, n = shape.split("/")
        key = f"M:{m}/K:{k}/N:{n}"
        raw, eigen = rows.get(f"BM_gemm_rml_raw/{key}"), rows.get(f"BM_gemm_eigen/{key}")
        e1, e2 = rows.get(f"BM_gemm_executor/{key}/threads:1"), rows.get(f"BM_gemm_executor/{key}/threads:2")
        if not all([raw, eigen, e1, e2]):
            continue
        cell = lambda r: f"{r['GFLOP/s']:.1f} ({r['%peak']:.0f}%)"
        load = max(float(r.get("other_cores", 0)) for r in (raw, eigen, e1, e2))
        worst = max(r.get("spread", 0) for r in (raw, eigen, e1, e2))
        out.append(f"| {m} x {k} x {n} | {cell(raw)} | {cell(e1)} | {cell(e2)} | {us(e1) / us(e2):.2f}x | "
                   f"{cell(eigen)} | {raw['GFLOP/s'] / eigen['GFLOP/s']:.2f}x | {load:.2f} | {100 * worst:.0f}% |")
    return out


def model_table(rows, o3):
    families = ["BM_mlp", "BM_transformer_block", "BM_cnn_features", "BM_conv3x3", "BM_sdpa", "BM_lstm_cell"]
    head = "| benchmark | median us | GFLOP/s (%peak) | kernels | other_cores | spread |"
    rule = "| --- | --- | --- | --- | --- | --- |"
    if o3:
        head += " median us at -O3 |"
        rule += " --- |"
    out = [head, rule]
    for name, row in rows.items():
        if row["family"] not in families:
            continue
        line = (f"| {name.replace('BM_', '')} | {fmt_time(us(row))} | {row['GFLOP/s']:.1f} ({row['%peak']:.0f}%) | "
                f"{row.get('kernels', 0):.0f} | {other(row)} | {spread(row)} |")
        if o3:
            line += f" {fmt_time(us(o3[name]))} |" if name in o3 else " |"
        out.append(line)
    return out


def overhead_table(rows):
    out = ["| benchmark | median us per run | ns per node | kernels | other_cores | spread |",
           "| --- | --- | --- | --- | --- | --- |"]
    for name, row in rows.items():
        if row["family"] == "BM_add_chain":
            out.append(f"| {name.replace('BM_', '')} | {fmt_time(us(row))} | {row['ns/node']:.1f} | "
                       f"{row['kernels']:.0f} | {other(row)} | {spread(row)} |")
    return out


def pool_table(rows):
    out = ["| work per chunk (2 chunks) | 1 thread, us | 2 threads, us | ideal with 2 threads, us |",
           "| --- | --- | --- | --- |"]
    for work in ["0", "20", "100"]:
        one, two = rows.get(f"BM_pool_fork_join/work_us:{work}/threads:1"), rows.get(f"BM_pool_fork_join/work_us:{work}/threads:2")
        if one and two:
            out.append(f"| {work} us | {fmt_time(us(one))} | {fmt_time(us(two))} | {work} |")
    return out


def main():
    args = sys.argv[1:]
    o3 = None
    if "--o3" in args:
        i = args.index("--o3")
        o3 = load(args[i + 1])[1]
        del args[i:i + 2]
    context = load(args[0])[0]
    rows = best_of([load(path)[1] for path in args])
    for key in ["cpu_model", "isa", "clock_measured", "peak_f32"]:
        print(f"- {key}: {context.get(key, '?')}")
    for title, table in [("GEMM", gemm_table(rows)), ("Models and kernels", model_table(rows, o3)),
                         ("Per-node overhead", overhead_table(rows)), ("Thread pool fork-join", pool_table(rows))]:
        print(f"\n### {title}\n")
        print("\n".join(table))


if __name__ == "__main__":
    main()
