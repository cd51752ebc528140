"""All 19 zoo models in TensorFlow export and agree with TensorFlow at batch 1, 2
and 7 (in rml and, as ONNX, in ONNX Runtime), and compute the same function as the
PyTorch definitions."""
import numpy as np
import pytest
import torch  # first: torch's triton crashes if TensorFlow's LLVM loaded before it
import tensorflow as tf

import rml
from rml.from_tf import export
from zoo import torch_zoo
from zoo.configs import MODELS
from zoo.tf_zoo import build


@pytest.mark.parametrize("model", MODELS)
def test_zoo_model_exports_and_agrees_at_batches_1_2_7(model, tmp_path, onnx_run):
    module, make_inputs = build(model)
    torch_module, _ = torch_zoo.build(model)
    for batch in (1, 2, 7):
        inputs = make_inputs(batch)
        expected = module(*[tf.constant(x) for x in inputs]).numpy()
        with torch.no_grad():
            torch_out = torch_module(*[torch.from_numpy(x) for x in inputs]).numpy()
        # The same function as the PyTorch definition, from the same weights.
        np.testing.assert_allclose(expected, torch_out, atol=1e-5, rtol=0)
        names = [f"input.{i}" for i in range(len(inputs))]
        builder = export(module, inputs, input_names=names)
        feeds = dict(zip(names, inputs))
        np.testing.assert_allclose(builder.evaluate(feeds)["output"], expected, atol=1e-5, rtol=1e-4)
        builder.write(str(tmp_path / f"{model}_{batch}.json"))
        got = rml.load(str(tmp_path / f"{model}_{batch}.json")).run(feeds)["output"]
        np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-4)
        # The same graph converted to ONNX, in ONNX Runtime.
        converted = onnx_run(tmp_path / f"{model}_{batch}.json", feeds)["output"]
        np.testing.assert_allclose(converted, expected, atol=1e-5, rtol=1e-4)


def test_zoo_parameters_are_named_after_the_shared_weights(tmp_path):
    module, make_inputs = build("cnn")
    export(module, make_inputs(2)).write(str(tmp_path / "cnn.json"))
    stored = rml.read_tensors(str(tmp_path / "cnn.safetensors"))
    assert {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc.weight", "fc.bias"} <= set(stored)


def test_an_unknown_zoo_model_is_named():
    with pytest.raises(KeyError, match="unknown zoo model 'resnet'"):
        build("resnet")
