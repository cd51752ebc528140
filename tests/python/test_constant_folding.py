"""Ops whose inputs are all known at export time fold into constants on every route:
a running sum, a window sum, iota/arange and a comparison over values that do not depend
on the model's input leave no node behind. The direct exporters fold them in the
framework; the StableHLO importer folds with NumPy where it has an evaluator (iota,
compare, reduce_window of any rank) and otherwise lowers the op onto constants, which the
Builder folds through rml's reference kernels."""
import numpy as np
import pytest
import torch  # frameworks load in one order in every test process: PyTorch first

import jax.numpy as jnp
from jax import lax
import tensorflow as tf

import rml
from rml import from_jax, from_stablehlo, from_tf, from_torch

X = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
STEPS = np.arange(12, dtype=np.float32).reshape(3, 4)


def window_sums(a: np.ndarray) -> np.ndarray:
    """Sums over 1x2 windows, stride 1, the last column padded with a zero after it."""
    return a + np.concatenate([a[:, 1:], np.zeros((a.shape[0], 1), a.dtype)], axis=1)


EXPECTED = X * (np.cumsum(STEPS, axis=1) > 5) + window_sums(STEPS)


class TorchModel(torch.nn.Module):
    def forward(self, x):
        steps = torch.arange(12, dtype=torch.float32).reshape(3, 4)
        mask = torch.cumsum(steps, 1) > 5
        windows = torch.nn.functional.avg_pool2d(steps.reshape(1, 1, 3, 4), (1, 2), 1, count_include_pad=True,
                                                 padding=0) * 2
        windows = torch.cat([windows.reshape(3, 3), steps[:, 3:]], 1)
        return x * mask + windows


def jax_model(params, x):
    steps = lax.iota(jnp.float32, 12).reshape(3, 4)
    mask = jnp.cumsum(steps, axis=1) > 5
    windows = lax.reduce_window(steps, 0.0, lax.add, (1, 2), (1, 1), ((0, 0), (0, 1)))
    return x * mask + windows


@tf.function(autograph=False)
def tf_model(x):
    steps = tf.reshape(tf.range(12, dtype=tf.float32), (3, 4))
    mask = tf.cast(tf.math.cumsum(steps, axis=1) > 5, tf.float32)
    windows = tf.nn.avg_pool2d(tf.reshape(steps, (1, 3, 4, 1)), (1, 2), 1, "VALID") * 2
    windows = tf.concat([tf.reshape(windows, (3, 3)), steps[:, 3:]], 1)
    return x * mask + windows


ROUTES = {
    "torch": lambda: from_torch.export(TorchModel(), (torch.from_numpy(X),)),
    "stablehlo_torch": lambda: from_stablehlo.export_torch(TorchModel(), (torch.from_numpy(X),)),
    "jax": lambda: from_jax.export(jax_model, {}, (X,)),
    "stablehlo_jax": lambda: from_stablehlo.export_jax(jax_model, {}, (X,)),
    "tf": lambda: from_tf.export(tf_model, (X,)),
    "stablehlo_tf": lambda: from_stablehlo.export_tf(tf_model, (X,)),
}
# What the input's own computation needs: x * mask + windows (a cast of the bool mask where
# the route keeps the multiply in f32).
ALLOWED = {"mul", "add", "cast", "select"}


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_ops_on_known_values_fold_on_every_route(route, tmp_path):
    ROUTES[route]().write(str(tmp_path / "m.json"))
    model = rml.load(str(tmp_path / "m.json"))
    assert set(model.op_counts) <= ALLOWED, f"{route}: ops left on known values: {model.op_counts}"
    np.testing.assert_allclose(model.run({"input.0": X})["output"], EXPECTED, atol=1e-6)
