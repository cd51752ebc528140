"""All 19 zoo models through the StableHLO importer from each producer (JAX,
PyTorch via torch-mlir, TensorFlow) at batch 2: the builder's evaluation and the
executor's run agree with the framework within atol 1e-5 + rtol 1e-4. A fourth
route takes JAX's module before serialization (`portable=False`), which keeps
CHLO ops (chlo.erfc, chlo.top_k)."""
import numpy as np
import pytest
import torch  # frameworks load in one order in every test process: PyTorch first

import jax

import tensorflow as tf

import rml
from rml import from_stablehlo
from zoo import jax_zoo, tf_zoo, torch_zoo
from zoo.configs import MODELS

BATCH = 2
ROUTES = ("stablehlo_jax", "stablehlo_torch", "stablehlo_tf", "stablehlo_jax_lowered")


@pytest.fixture(scope="module")
def torch_exports():
    """Every PyTorch zoo model through torch-mlir in one subprocess (it is slow to start):
    model -> (module, inputs, (text, parameters) or the ExportError)."""
    built = {model: torch_zoo.build(model) for model in MODELS}
    inputs = {model: built[model][1](BATCH) for model in MODELS}
    results = from_stablehlo._torch_modules([(built[m][0], inputs[m]) for m in MODELS])
    return {m: (built[m][0], inputs[m], result) for m, result in zip(MODELS, results)}


def _export(model, route, request):
    """(builder, NumPy inputs, the framework's output) for `model` by `route`."""
    if route in ("stablehlo_jax", "stablehlo_jax_lowered"):
        fn, params, make_inputs = jax_zoo.build(model)
        inputs = make_inputs(BATCH)
        builder = from_stablehlo.export_jax(fn, params, inputs, portable=route == "stablehlo_jax")
        return builder, inputs, np.asarray(jax.jit(fn)(params, *inputs))
    if route == "stablehlo_tf":
        module, make_inputs = tf_zoo.build(model)
        inputs = make_inputs(BATCH)
        expected = module(*[tf.constant(x) for x in inputs]).numpy()
        return from_stablehlo.export_tf(module, inputs), inputs, expected
    module, inputs, result = request.getfixturevalue("torch_exports")[model]
    if isinstance(result, Exception):
        raise result
    text, parameters = result
    with torch.no_grad():
        expected = module(*inputs).numpy()
    inputs = tuple(x.numpy() for x in inputs)
    return from_stablehlo.export(text, parameters, inputs), inputs, expected


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("model", MODELS)
def test_zoo_model_through_stablehlo_agrees_with_its_framework(model, route, request, tmp_path):
    builder, inputs, expected = _export(model, route, request)
    feeds = {f"input.{i}": x for i, x in enumerate(inputs)}
    np.testing.assert_allclose(builder.evaluate(feeds)["output"], expected, atol=1e-5, rtol=1e-4)
    path = str(tmp_path / f"{route}_{model}.json")
    builder.write(path)
    got = rml.load(path).run(feeds)["output"]
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-4)


def test_the_zoo_has_19_models():
    assert len(MODELS) == 19
