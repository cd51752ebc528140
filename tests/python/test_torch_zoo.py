"""All 19 zoo models in PyTorch export and agree with PyTorch at batch 1, 2 and 7, in
rml and, converted to ONNX, in ONNX Runtime."""
import numpy as np
import pytest
import torch

import rml
from rml.from_torch import export
from zoo.configs import MODELS
from zoo.torch_zoo import build


@pytest.mark.parametrize("model", MODELS)
def test_zoo_model_exports_and_agrees_at_batches_1_2_7(model, tmp_path, onnx_run):
    module, make_inputs = build(model)
    for batch in (1, 2, 7):
        inputs = make_inputs(batch)
        with torch.no_grad():
            expected = module(*inputs).numpy()
        names = [f"input.{i}" for i in range(len(inputs))]
        builder = export(module, inputs, input_names=names)
        feeds = {n: t.numpy() for n, t in zip(names, inputs)}
        np.testing.assert_allclose(builder.evaluate(feeds)["output"], expected, atol=1e-5, rtol=1e-4)
        builder.write(str(tmp_path / f"{model}_{batch}.json"))
        got = rml.load(str(tmp_path / f"{model}_{batch}.json")).run(feeds)["output"]
        np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-4)
        # The same graph converted to ONNX, in ONNX Runtime.
        converted = onnx_run(tmp_path / f"{model}_{batch}.json", feeds)["output"]
        np.testing.assert_allclose(converted, expected, atol=1e-5, rtol=1e-4)


def test_an_unknown_zoo_model_is_named():
    with pytest.raises(KeyError, match="unknown zoo model 'resnet'"):
        build("resnet")
