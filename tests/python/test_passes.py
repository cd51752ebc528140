"""The clean-up passes on real exports: the step-projection hoist on the JAX and
TensorFlow rnn and lstm (one input product for all steps, evaluation unchanged
bit for bit), and `rml opt` on a written file."""
import json

import numpy as np
import pytest
import torch  # noqa: F401  (PyTorch loads first in every test process)

import rml
from zoo.configs import config


def export(route, model, size="tiny", batch=2):
    if route == "jax":
        from rml.from_jax import export as export_jax
        from zoo.jax_zoo import build
        fn, params, make_inputs = build(model, size)
        inputs = make_inputs(batch)
        return export_jax(fn, params, inputs), inputs
    from rml.from_tf import export as export_tf
    from zoo.tf_zoo import build
    module, make_inputs = build(model, size)
    inputs = make_inputs(batch)
    return export_tf(module, inputs), inputs


def op_count(path, name):
    return sum(node["op"] == name for node in json.loads(path.read_text())["nodes"])


@pytest.mark.parametrize("route", ["jax", "tf"])
@pytest.mark.parametrize("model", ["rnn", "lstm"])
def test_hoisting_leaves_one_input_product_and_changes_no_bit(route, model, tmp_path):
    builder, inputs = export(route, model)
    raw, clean = tmp_path / "raw.json", tmp_path / "clean.json"
    builder.write(str(raw), clean_up=False)
    builder.write(str(clean))
    steps = config(model)["seq"]
    # Unrolled, each step multiplies its input and its state; the first state is
    # zero, so its product folds away: steps + (steps - 1) products before, and
    # one hoisted input product + (steps - 1) recurrent ones after.
    assert op_count(raw, "matmul") == 2 * steps - 1
    assert op_count(clean, "matmul") == 1 + (steps - 1)
    feeds = {f"input.{i}": x for i, x in enumerate(inputs)}
    before = rml.load(str(raw)).evaluate(feeds)["output"]
    after = rml.load(str(clean)).evaluate(feeds)["output"]
    assert np.array_equal(before, after) and before.tobytes() == after.tobytes()


@pytest.mark.parametrize("route", ["jax", "tf"])
def test_hoisting_takes_the_bench_lstm_from_127_matmuls_to_64(route, tmp_path):
    """The specification counts 128 -> 65 for the 64-step LSTM: one product per step
    for the input and one for the state, then one hoisted input product plus 64
    recurrent ones. rml's Builder already folds the first step's product with the
    zero initial state, so both counts are one lower here."""
    steps = config("lstm", "bench")["seq"]
    assert steps == 64
    builder, _ = export(route, "lstm", "bench", batch=1)
    raw, clean = tmp_path / "raw.json", tmp_path / "clean.json"
    builder.write(str(raw), clean_up=False)
    builder.write(str(clean))
    assert (op_count(raw, "matmul"), op_count(clean, "matmul")) == (2 * steps - 1, steps)


def test_rml_opt_runs_the_passes_on_a_file(run_rml, tmp_path):
    builder, inputs = export("jax", "layernorm_gelu")
    raw, clean = tmp_path / "raw.json", tmp_path / "clean.json"
    builder.write(str(raw), clean_up=False)
    result = run_rml("opt", raw, "-o", clean, "--print-counts")
    assert "fuse_layer_norm" in result.stdout and "fuse_gelu" in result.stdout
    assert op_count(clean, "layer_norm") == 1 and op_count(clean, "gelu") == 1
    assert op_count(clean, "rsqrt") == 0
    feeds = {"input.0": inputs[0]}
    np.testing.assert_allclose(rml.load(str(clean)).run(feeds)["output"],
                               rml.load(str(raw)).evaluate(feeds)["output"], atol=1e-6, rtol=1e-6)
    only = tmp_path / "only.json"
    run_rml("opt", raw, "-o", only, "--passes", "simplify_shape_ops")
    assert op_count(only, "layer_norm") == 0
    bad = run_rml("opt", raw, "-o", tmp_path / "x.json", "--passes", "fuse_everything", check=False)
    assert bad.returncode == 1 and "unknown pass 'fuse_everything'" in bad.stderr
    assert not (tmp_path / "x.json").exists()


def test_the_bench_pytorch_lstm_at_batch_16_computes_its_input_projection_in_chunks(tmp_path):
    """PyTorch's export hoists the LSTM's input projection itself: at batch 16 it is
    [64 steps, 16, 1024], 4 MiB. chunk_step_projections computes it in 8 chunks of 8
    steps (512 KiB), each after the steps before it, and the output keeps its bits."""
    from rml.from_torch import export as export_torch
    from zoo.torch_zoo import build
    module, make_inputs = build("lstm", "bench")
    inputs = make_inputs(16)
    builder = export_torch(module, inputs)
    raw, clean = tmp_path / "raw.json", tmp_path / "clean.json"
    builder.write(str(raw), clean_up=False)
    builder.write(str(clean))
    assert (op_count(raw, "matmul"), op_count(clean, "matmul")) == (1 + 63, 8 + 63)
    graph = json.loads(clean.read_text())
    shapes = {v["id"]: v["shape"] for v in graph["values"]}
    tanh_before_chunk, tanh_seen = [], 0
    for node in graph["nodes"]:
        tanh_seen += node["op"] == "tanh"
        if node["op"] == "matmul" and shapes[node["inputs"][0]] == [8, 16, 64]:
            tanh_before_chunk.append(tanh_seen)
    assert tanh_before_chunk == [16 * c for c in range(8)]  # two tanh a step
    feeds = {f"input.{i}": np.asarray(x) for i, x in enumerate(inputs)}
    before = rml.load(str(raw)).run(feeds)["output"]
    after = rml.load(str(clean)).run(feeds)["output"]
    assert before.tobytes() == after.tobytes()
