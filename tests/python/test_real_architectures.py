"""The real-architecture tier: models written the way their libraries write them
(tests/python/real_architectures.py says which library each comes from), exported
by every route that applies to their framework, at batch 1 and 2. Each rml run
(the executor, one thread) must agree with the framework within 1e-4 of the
output's scale: |rml - framework| <= 1e-4 * max(1, max |framework|).

Routes: PyTorch models by the direct exporter and through torch-mlir's StableHLO,
JAX (Flax) models by the direct exporter and through jax.export's StableHLO,
Keras models by the TensorFlow direct exporter and through tf's StableHLO.
Architectures marked slow (the 50-layer Keras ResNet, EfficientNet) run only
with RML_REAL_ARCH_SLOW=1.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch  # frameworks load in one order in every test process: PyTorch first

import jax
import tensorflow as tf

import rml
from rml import from_jax, from_stablehlo, from_tf, from_torch
from real_architectures import architectures

ROUTES = {"torch": ("torch", "stablehlo_torch"), "jax": ("jax", "stablehlo_jax"), "tf": ("tf", "stablehlo_tf")}
BATCHES = (1, 2)
TOLERANCE = 1e-4
SLOW = os.environ.get("RML_REAL_ARCH_SLOW") == "1"
ARCHITECTURES = {a.name: a for a in architectures()}


def cases():
    for a in ARCHITECTURES.values():
        marks = [] if SLOW or not a.slow else [pytest.mark.skip(reason="slow architecture: RML_REAL_ARCH_SLOW=1")]
        for route in ROUTES[a.framework]:
            for batch in BATCHES:
                yield pytest.param(a.name, route, batch, id=f"{a.name}-{route}-batch{batch}", marks=marks)


def names(inputs) -> list[str]:
    return [f"input.{i}" for i in range(len(inputs))]


class Models:
    """Each architecture built once per module, its framework outputs and torch-mlir texts cached."""

    def __init__(self):
        self.built: dict = {}
        self.torch_mlir: dict = {}

    def build(self, name: str):
        if name not in self.built:
            self.built[name] = ARCHITECTURES[name].build()
        return self.built[name]

    def framework_output(self, name: str, inputs) -> np.ndarray:
        a, model = ARCHITECTURES[name], self.build(name)
        if a.framework == "torch":
            with torch.no_grad():
                return model(*(torch.from_numpy(x) for x in inputs)).numpy()
        if a.framework == "jax":
            fn, params = model
            return np.asarray(jax.jit(fn)(params, *inputs))
        return np.asarray(model(*(tf.constant(x) for x in inputs), training=False))

    def stablehlo_torch(self, name: str, batch: int):
        """torch-mlir's module: the first request at a batch converts every torch architecture
        in one subprocess."""
        if (name, batch) not in self.torch_mlir:
            torch_names = [n for n, a in ARCHITECTURES.items() if a.framework == "torch"
                           and (SLOW or not a.slow)]
            items = [(self.build(n), tuple(torch.from_numpy(x) for x in ARCHITECTURES[n].inputs(batch)))
                     for n in torch_names]
            for n, result in zip(torch_names, from_stablehlo._torch_modules(items)):
                self.torch_mlir[(n, batch)] = result
        result = self.torch_mlir[(name, batch)]
        if isinstance(result, Exception):
            raise result
        return result

    def export(self, name: str, route: str, batch: int) -> rml.Builder:
        model, inputs = self.build(name), ARCHITECTURES[name].inputs(batch)
        if route == "torch":
            return from_torch.export(model, tuple(torch.from_numpy(x) for x in inputs), names(inputs))
        if route == "stablehlo_torch":
            text, parameters = self.stablehlo_torch(name, batch)
            return from_stablehlo.export(text, parameters, inputs, names(inputs))
        if route == "jax":
            return from_jax.export(*model, inputs, names(inputs))
        if route == "stablehlo_jax":
            return from_stablehlo.export_jax(*model, inputs, names(inputs))
        if route == "tf":
            return from_tf.export(model, inputs, names(inputs))
        return from_stablehlo.export_tf(model, inputs, names(inputs))


@pytest.fixture(scope="module")
def models():
    return Models()


@pytest.mark.parametrize("name, route, batch", list(cases()))
def test_architecture_agrees_with_its_framework(name, route, batch, models, tmp_path):
    inputs = ARCHITECTURES[name].inputs(batch)
    expected = models.framework_output(name, inputs)
    path = tmp_path / f"{name}.json"
    models.export(name, route, batch).write(str(path))
    got = rml.load(str(path)).run(dict(zip(names(inputs), inputs)), threads=1)["output"]
    assert got.shape == expected.shape
    assert np.isfinite(got).all()
    scale = max(1.0, float(np.abs(expected).max()))
    error = float(np.abs(got.astype(np.float64) - expected).max())
    assert error <= TOLERANCE * scale, f"{name} by {route} at batch {batch}: max error {error:.3g}, scale {scale:.3g}"


def test_the_tier_covers_twelve_architectures_and_every_framework():
    fast = [a for a in ARCHITECTURES.values() if not a.slow]
    assert len(fast) >= 12
    assert {a.framework for a in fast} == set(ROUTES)
