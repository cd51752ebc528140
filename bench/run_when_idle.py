#!/usr/bin/env python3
"""Runs rml_bench one benchmark at a time, each when the machine is idle.

On a shared machine (others compiling on the second core), a whole-suite run
mixes clean and loaded rows. This runs each benchmark separately with the
flags of docs/performance.md, after the machine has been idle for 2 s, and
re-runs it (up to 8 times, keeping the least loaded attempt) while its
other_cores counter says another process used more than 0.1 core during it.
Output: one merged Google Benchmark JSON file, for bench/summarize.py.

    python3 bench/run_when_idle.py build/bench/rml_bench o2.json [FILTER]
"""
import json
import re
import subprocess
import sys
import time

FLAGS = ["--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true", "--benchmark_min_time=0.2"]


def busy_ticks():
    values = list(map(int, open("/proc/stat").readline().split()[1:9]))
    return sum(values) - values[3] - values[4]  # all but idle and iowait


def wait_idle(limit_s=900):
    deadline = time.time() + limit_s
    while time.time() < deadline:
        before = busy_ticks()
        time.sleep(2)
        if (busy_ticks() - before) / 200 < 0.05:  # 100 ticks per second per core
            return


def main():
    binary, out = sys.argv[1], sys.argv[2]
    pattern = sys.argv[3] if len(sys.argv) > 3 else "."
    names = subprocess.run([binary, "--benchmark_list_tests=true", f"--benchmark_filter={pattern}"],
                           capture_output=True, text=True, check=True).stdout.split()
    merged = None
    for name in names:
        best = None
        for attempt in range(8):
            wait_idle()
            part = out + ".part"
            subprocess.run([binary, f"--benchmark_filter=^{re.escape(name)}$", *FLAGS, f"--benchmark_out={part}",
                            "--benchmark_out_format=json"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            data = json.load(open(part))
            load = max((b.get("other_cores", 0) for b in data["benchmarks"] if b.get("aggregate_name") == "mean"),
                       default=0)
            if best is None or load < best[0]:
                best = (load, data)
            if load < 0.1:
                break
        print(f"{name}: {attempt + 1} attempt(s), other_cores {best[0]:.2f}", flush=True)
        if merged is None:
            merged = best[1]
        else:
            merged["benchmarks"] += best[1]["benchmarks"]
        with open(out, "w") as f:
            json.dump(merged, f, indent=1)


if __name__ == "__main__":
    main()
