"""All 19 zoo models in JAX export and agree with JAX at batch 1, 2 and 7 (in rml
and, as ONNX, in ONNX Runtime), and the JAX definitions compute what the PyTorch
ones compute."""
import numpy as np
import pytest
import torch

import jax

import rml
from rml.from_jax import export
from zoo import jax_zoo, torch_zoo
from zoo.configs import MODELS


@pytest.mark.parametrize("model", MODELS)
def test_zoo_model_exports_and_agrees_at_batches_1_2_7(model, tmp_path, onnx_run):
    fn, params, make_inputs = jax_zoo.build(model)
    for batch in (1, 2, 7):
        inputs = make_inputs(batch)
        expected = np.asarray(jax.jit(fn)(params, *inputs))
        builder = export(fn, params, inputs)
        feeds = {f"input.{i}": x for i, x in enumerate(inputs)}
        np.testing.assert_allclose(builder.evaluate(feeds)["output"], expected, atol=1e-5, rtol=1e-4)
        builder.write(str(tmp_path / f"{model}_{batch}.json"))
        got = rml.load(str(tmp_path / f"{model}_{batch}.json")).run(feeds)["output"]
        np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-4)
        # The same graph converted to ONNX, in ONNX Runtime.
        converted = onnx_run(tmp_path / f"{model}_{batch}.json", feeds)["output"]
        np.testing.assert_allclose(converted, expected, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("model", MODELS)
def test_the_jax_definition_computes_the_pytorch_function(model):
    fn, params, make_inputs = jax_zoo.build(model)
    module, _ = torch_zoo.build(model)
    inputs = make_inputs(2)
    with torch.no_grad():
        expected = module(*(torch.from_numpy(x) for x in inputs)).numpy()
    np.testing.assert_allclose(np.asarray(jax.jit(fn)(params, *inputs)), expected, atol=1e-5, rtol=0)
