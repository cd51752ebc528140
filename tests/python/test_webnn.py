"""`rml convert --to webnn`: a JavaScript module that replays the graph through WebNN's
MLGraphBuilder. The real consumer is a browser, and the Chromium here (Debian's) has no
WebNN backend on Linux: `navigator.ml.createContext()` fails with NotSupportedError. So:

- in headless Chromium, every supported fixture's page either reproduces the golden
  outputs within 1e-5 or fails at createContext with exactly that error, and nothing
  else (the day the browser runs WebNN, this test checks the numbers);
- structurally, every module parses (`node --check`) and replays, under Node, against
  tests/webnn/recorder.mjs, a builder that applies WebNN's shape and type rules to
  every call: the outputs it infers are rml's, and each rml op made its WebNN call."""
import http.server
import json
import shutil
import subprocess
import threading
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import rml
from conftest import REPO
from op_cases import CASES, build_case

FIXTURES = sorted((REPO / "testdata").glob("*.json"))
RECORDER = REPO / "tests" / "webnn" / "recorder.mjs"
NOT_SUPPORTED = "NotSupportedError: Failed to execute 'createContext' on 'ML': WebNN is not supported on this platform."

# The WebNN call each rml op makes (its formula's last call where WebNN lacks the op).
# A same-dtype cast and a reduction over no axes are identities; the tanh GELU is its formula.
CALLS = {
    "neg": "neg", "abs": "abs", "exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "reciprocal", "tanh": "tanh",
    "sigmoid": "sigmoid", "erf": "erf", "sin": "sin", "cos": "cos", "reciprocal": "reciprocal", "relu": "relu",
    "add": "add", "sub": "sub", "mul": "mul", "div": "div", "pow": "pow", "maximum": "max", "minimum": "min",
    "eq": "equal", "ne": "notEqual", "lt": "lesser", "le": "lesserOrEqual", "gt": "greater", "ge": "greaterOrEqual",
    "select": "where", "cast": "cast", "reshape": "reshape", "transpose": "transpose", "broadcast_to": "expand",
    "slice": "slice", "concat": "concat", "pad": "pad", "gather": "gather", "reduce_sum": "reduceSum",
    "reduce_mean": "reduceMean", "reduce_max": "reduceMax", "reduce_min": "reduceMin", "matmul": "matmul",
    "conv2d": "conv2d", "max_pool2d": "maxPool2d", "avg_pool2d": "averagePool2d", "softmax": "softmax",
    "layer_norm": "layerNormalization", "gelu": "gelu", "sdpa": "matmul", "cumsum": "cumulativeSum",
}
ALSO = {"cast": "identity", "reduce_sum": "identity", "gelu": "mul"}
DTYPES = {"f32": "float32", "i32": "int32"}


def made_its_call(op: str, calls: list[str]) -> bool:
    return CALLS[op] in calls or ALSO.get(op) in calls


def graph_doc(graph: Path) -> dict:
    return json.loads(graph.read_text())


def convert(run_rml, graph: Path, folder: Path) -> Path | None:
    """The module written beside its sidecar, or None when `--check` refuses the graph."""
    check = run_rml("convert", graph, "--to", "webnn", "--check", check=False)
    if check.returncode == 1:
        assert "webnn has no lowering for op 'top_k'" in check.stdout, check.stdout
        return None
    module = folder / f"{graph.stem}.js"
    run_rml("convert", graph, "--to", "webnn", "-o", module)
    subprocess.run(["node", "--check", str(module)], check=True)
    return module


def replay(module: Path) -> dict:
    sidecar = module.with_name(module.name + ".bin")
    args = ["node", str(RECORDER), str(module)] + ([str(sidecar)] if sidecar.exists() else [])
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def expected_outputs(doc: dict) -> dict:
    values = {v["id"]: v for v in doc["values"]}
    return {o["name"]: {"dataType": DTYPES[values[o["value"]]["dtype"]], "shape": values[o["value"]]["shape"]}
            for o in doc["outputs"]}


@pytest.mark.parametrize("graph", FIXTURES, ids=lambda p: p.stem)
def test_the_fixture_replays_through_webnn_s_rules_with_rml_s_outputs(graph, tmp_path, run_rml):
    module = convert(run_rml, graph, tmp_path)
    doc = graph_doc(graph)
    if module is None:
        assert any(node["op"] == "top_k" for node in doc["nodes"])
        return
    replayed = replay(module)
    assert replayed["outputs"] == expected_outputs(doc)
    assert replayed["calls"].count("input") == len(doc["inputs"])
    for node in doc["nodes"]:
        assert made_its_call(node["op"], replayed["calls"]), node["op"]


@pytest.mark.parametrize("case, op, inputs, attributes, outputs", CASES, ids=[c[0] for c in CASES])
def test_every_op_case_replays_with_the_reference_s_shapes(case, op, inputs, attributes, outputs, tmp_path, run_rml):
    graph, _, expected = build_case(case, op, inputs, attributes, outputs, tmp_path)
    module = convert(run_rml, graph, tmp_path)
    if module is None:
        assert op == "top_k"
        return
    replayed = replay(module)
    for name, want in expected.items():
        assert replayed["outputs"][name] == {"dataType": DTYPES["f32" if want.dtype == np.float32 else "i32"],
                                             "shape": list(want.shape)}, name
    assert made_its_call(op, replayed["calls"])


PAGE = """<!doctype html><meta charset="utf-8"><pre id="result">running</pre><script type="module">
import * as model from "./MODULE";
const result = document.getElementById("result");
try {
  const golden = await (await fetch("./golden.json")).json();
  const weights = model.sidecar ? await (await fetch("./" + model.sidecar)).arrayBuffer() : new ArrayBuffer(0);
  const context = await navigator.ml.createContext({deviceType: "cpu"});
  const graph = await model.build(context, weights);
  const feeds = {};
  for (const [name, d] of Object.entries(model.inputs))
    feeds[name] = new (d.dataType === "float32" ? Float32Array : Int32Array)(golden[name]);
  const got = await model.compute(context, graph, feeds);
  let worst = 0;
  for (const name of Object.keys(model.outputs))
    got[name].forEach((v, i) => { worst = Math.max(worst, Math.abs(v - golden[name][i])); });
  result.textContent = "worst " + worst;
} catch (e) {
  result.textContent = "error " + e.name + ": " + e.message;
}
await fetch("./result", {method: "POST", body: result.textContent});
</script>"""


class _PageServer(http.server.SimpleHTTPRequestHandler):
    """Serves the test's folder; the page POSTs what it found to /result."""

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        self.send_response(204)
        self.end_headers()
        self.server.result = body
        self.server.done.set()

    def log_message(self, *args):
        pass


def browser_result(folder: Path, module: Path, golden: dict) -> str:
    """Serves the folder on loopback, opens the page in headless Chromium with its WebNN
    feature on, and returns what the page reported (it POSTs it back when done)."""
    (folder / "golden.json").write_text(json.dumps({k: np.asarray(v).ravel().tolist() for k, v in golden.items()}))
    (folder / "page.html").write_text(PAGE.replace("MODULE", module.name))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_PageServer, directory=str(folder)))
    server.result, server.done = None, threading.Event()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    browser = subprocess.Popen([shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
                                "--enable-features=WebMachineLearningNeuralNetwork", f"--user-data-dir={folder / 'profile'}",
                                f"http://127.0.0.1:{server.server_address[1]}/page.html"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        finished = server.done.wait(timeout=120)
    finally:
        browser.kill()
        _, errors = browser.communicate()
        server.shutdown()
    assert finished, f"the page reported nothing in 120 s: {errors[-2000:]}"
    return server.result


@pytest.mark.parametrize("graph", FIXTURES, ids=lambda p: p.stem)
def test_headless_chromium_reproduces_the_golden_outputs_or_says_webnn_is_not_supported(graph, tmp_path, run_rml):
    module = convert(run_rml, graph, tmp_path)
    if module is None:  # top_k: refused (checked in convert)
        return
    golden = rml.read_tensors(str(graph.with_suffix("").with_suffix(".golden.safetensors")))
    result = browser_result(tmp_path, module, golden)
    if result.startswith("worst "):
        assert float(result.split()[1]) <= 1e-5, result
    else:
        assert result == "error " + NOT_SUPPORTED, result
