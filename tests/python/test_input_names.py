"""One input-naming rule on all six routes (rml.lowering.names): input.0, input.1, …
by default, given names as given, and the framework's argument names with
input_names="arguments", read the same way by the direct and the StableHLO routes."""
import subprocess
import sys

import numpy as np
import pytest
import torch  # frameworks load in one order in every test process: PyTorch first

import jax.numpy as jnp
import tensorflow as tf

import rml
from rml import from_jax, from_stablehlo, from_tf, from_torch

IMAGE = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
MASK = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)


class TorchModel(torch.nn.Module):
    def forward(self, image, mask):
        return image * mask + 1.0


def jax_model(params, image, mask):
    return image * mask + params["bias"]


@tf.function(autograph=False)
def tf_model(image, mask):
    return image * mask + 1.0


def keras_model():
    import keras
    image, mask = keras.Input((3,), name="image"), keras.Input((3,), name="mask")
    return keras.Model([image, mask], keras.layers.Multiply()([image, mask]))


ROUTES = {
    "torch": lambda names: from_torch.export(TorchModel(), (torch.from_numpy(IMAGE), torch.from_numpy(MASK)), names),
    "stablehlo_torch": lambda names: from_stablehlo.export_torch(
        TorchModel(), (torch.from_numpy(IMAGE), torch.from_numpy(MASK)), names),
    "jax": lambda names: from_jax.export(jax_model, {"bias": jnp.ones(3)}, (IMAGE, MASK), names),
    "stablehlo_jax": lambda names: from_stablehlo.export_jax(jax_model, {"bias": jnp.ones(3)}, (IMAGE, MASK), names),
    "tf": lambda names: from_tf.export(tf_model, (IMAGE, MASK), names),
    "stablehlo_tf": lambda names: from_stablehlo.export_tf(tf_model, (IMAGE, MASK), names),
    "keras": lambda names: from_tf.export(keras_model(), (IMAGE, MASK), names),
    "stablehlo_keras": lambda names: from_stablehlo.export_tf(keras_model(), (IMAGE, MASK), names),
}


def input_names_of(builder: rml.Builder, tmp_path) -> list[str]:
    """The written graph's input names; the graph runs when fed by them."""
    builder.write(str(tmp_path / "m.json"))
    model = rml.load(str(tmp_path / "m.json"))
    out = model.run(dict(zip(model.inputs, (IMAGE, MASK))))["output"]
    np.testing.assert_allclose(out - IMAGE * MASK, np.round(out - IMAGE * MASK), atol=1e-5)  # + 0 or + 1
    return list(model.inputs)


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_every_route_names_inputs_by_one_rule(route, tmp_path):
    assert input_names_of(ROUTES[route](None), tmp_path) == ["input.0", "input.1"]
    assert input_names_of(ROUTES[route](["a", "b"]), tmp_path) == ["a", "b"]
    assert input_names_of(ROUTES[route]("arguments"), tmp_path) == ["image", "mask"]


@pytest.mark.parametrize("names, message", [(["a"], r"1 input names \(a\) for 2 inputs"),
                                            (["a", "a"], "input names repeat: a, a"),
                                            ("params", "input_names must be a list of names, None or 'arguments'")])
def test_bad_input_names_fail_with_what_is_wrong(names, message):
    for route in ("torch", "jax", "tf"):
        with pytest.raises(rml.ExportError, match=message):
            ROUTES[route](names)


def test_a_bare_stablehlo_text_has_no_argument_names_to_keep():
    text, parameters = from_stablehlo.jax_module(jax_model, {"bias": jnp.ones(3)}, (IMAGE, MASK))
    with pytest.raises(rml.ExportError, match="carries no argument names"):
        from_stablehlo.export(text, parameters, (IMAGE, MASK), "arguments")


def test_the_export_command_line_keeps_argument_names_on_request(tmp_path, run_rml):
    (tmp_path / "factories.py").write_text(
        "import torch\n"
        "class Net(torch.nn.Module):\n"
        "    def forward(self, image, mask):\n"
        "        return image * mask\n"
        "def net():\n"
        "    return Net()\n")
    for flags, expected in (([], "input.0"), (["--argument-names"], "image")):
        out = tmp_path / "net.json"
        result = subprocess.run([sys.executable, "-m", "rml.export", "torch", "factories:net", "--example-inputs",
                                 "f32:2x3", "f32:2x3", "-o", str(out), *flags], cwd=tmp_path, capture_output=True,
                                text=True)
        assert result.returncode == 0, result.stderr
        assert expected in run_rml("info", out).stdout
