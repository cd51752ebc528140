"""Shared, seeded parameters for the zoo.

`Weights(model)` draws every parameter from one NumPy generator seeded with
1234 plus the model's index, in the order the definition asks for them, so the
PyTorch, JAX and TensorFlow definitions of a model, asking in the same order,
get identical arrays. Arrays are float32 and laid out as PyTorch stores them
(Linear weights [out, in], convolutions OIHW); the other frameworks transpose.
"""
import numpy as np

from .configs import seed


class Weights:
    def __init__(self, model: str):
        self.model = model
        self._rng = np.random.default_rng(seed(model))
        self._drawn: dict[str, np.ndarray] = {}

    def _draw(self, name: str, shape, scale: float) -> np.ndarray:
        if name in self._drawn:
            raise KeyError(f"{self.model}: parameter '{name}' drawn twice")
        array = (self._rng.standard_normal(shape) * scale).astype(np.float32)
        self._drawn[name] = array
        return array

    def linear(self, name: str, fan_in: int, fan_out: int) -> tuple[np.ndarray, np.ndarray]:
        """A dense layer's weight [out, in] and bias [out], scaled by 1/sqrt(fan_in)."""
        scale = 1.0 / np.sqrt(fan_in)
        return self._draw(f"{name}.weight", (fan_out, fan_in), scale), self._draw(f"{name}.bias", (fan_out,), scale)

    def conv(self, name: str, in_channels: int, out_channels: int, kernel: int) -> tuple[np.ndarray, np.ndarray]:
        """A convolution's weight [out, in, k, k] (OIHW) and bias [out]."""
        scale = 1.0 / np.sqrt(in_channels * kernel * kernel)
        return (self._draw(f"{name}.weight", (out_channels, in_channels, kernel, kernel), scale),
                self._draw(f"{name}.bias", (out_channels,), scale))

    def norm(self, name: str, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """A layer norm's scale and shift near 1 and 0 (non-trivial, so tests see them)."""
        scale = self._draw(f"{name}.weight", (dim,), 0.1)
        scale += 1.0  # in place, so `drawn` holds what the model uses
        return scale, self._draw(f"{name}.bias", (dim,), 0.1)

    def embedding(self, name: str, count: int, dim: int) -> np.ndarray:
        return self._draw(f"{name}.weight", (count, dim), 1.0)

    def recurrent(self, name: str, inputs: int, hidden: int, gates: int) -> tuple[np.ndarray, ...]:
        """A recurrent layer as PyTorch stores it: weight_ih [gates*hidden, inputs],
        weight_hh [gates*hidden, hidden], bias_ih and bias_hh [gates*hidden]
        (gate order i, f, g, o for an LSTM), all scaled by 1/sqrt(hidden)."""
        scale, rows = 1.0 / np.sqrt(hidden), gates * hidden
        return (self._draw(f"{name}.weight_ih", (rows, inputs), scale),
                self._draw(f"{name}.weight_hh", (rows, hidden), scale),
                self._draw(f"{name}.bias_ih", (rows,), scale),
                self._draw(f"{name}.bias_hh", (rows,), scale))

    def decay(self, name: str, count: int) -> np.ndarray:
        """Per-channel decay factors in (0, 1): the sigmoid of a standard normal draw,
        computed here in float64 so every framework gets the same float32 values."""
        if name in self._drawn:
            raise KeyError(f"{self.model}: parameter '{name}' drawn twice")
        array = (1.0 / (1.0 + np.exp(-self._rng.standard_normal(count)))).astype(np.float32)
        self._drawn[name] = array
        return array

    def adjacency(self, name: str, nodes: int) -> np.ndarray:
        """A random undirected graph with self-loops, normalised as a GCN uses it:
        D^-1/2 (A + I) D^-1/2. Drawn from the same generator, so it is fixed per model."""
        if name in self._drawn:
            raise KeyError(f"{self.model}: parameter '{name}' drawn twice")
        upper = np.triu(self._rng.random((nodes, nodes)) < 0.4, 1)
        a = (upper | upper.T | np.eye(nodes, dtype=bool)).astype(np.float64)
        d = 1.0 / np.sqrt(a.sum(axis=1))
        array = (a * d[:, None] * d[None, :]).astype(np.float32)
        self._drawn[name] = array
        return array

    def tensor(self, name: str, shape, scale: float = 1.0) -> np.ndarray:
        return self._draw(name, tuple(shape), scale)

    @property
    def drawn(self) -> dict[str, np.ndarray]:
        """Every parameter drawn so far, by name."""
        return dict(self._drawn)


def timestep_frequencies(count: int) -> np.ndarray:
    """The diffusion model's sinusoidal frequencies exp(-ln(1000) i / count), computed
    once in float64 so every framework multiplies by the same float32 values (an
    ulp of difference here is 1e-4 in an angle of 1,000 radians)."""
    return np.exp(-np.log(1000.0) * np.arange(count) / count).astype(np.float32)
