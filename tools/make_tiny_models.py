"""Writes examples/tiny_models: a CNN, an LSTM and a transformer block, each written
in PyTorch, JAX and TensorFlow on one set of parameters, exported by rml's direct
exporters (nine graphs), and each model's exact output as C++ literals.

    python tools/make_tiny_models.py [--out examples/tiny_models]

Every value inside these models is exact in f32, so each output has one right
value whatever the summation order, fusion, thread count or approximation of
exp, tanh, erf and rsqrt:
- cnn: x[2, 1, 6, 6] -> conv 3x3 (2 channels) -> ReLU -> max pool 2 -> dense -> y[2, 3];
  every value a multiple of 1/8, so products and sums are exact;
- lstm: x[2, 12, 3] -> LSTM (hidden 2) -> last h -> dense -> y[2, 3]. Every gate
  pre-activation is exactly 0 or saturated (>= 20 into sigmoid, |.| >= 10 into tanh),
  so the gates are exactly 1/2, 1 or 0, +-1; the cells count 1, 2, ..., 12 up or
  down, and tanh of a cell is exact once the cell passes 10. The hidden states of
  the first nine steps are not exact, but they only feed saturated gates. On the last
  step of row 0 the biases of three gates (input, cell, output of unit 0) are solved
  so that their pre-activations are exactly 0;
- transformer: x[2, 3, 8] -> pre-norm causal 2-head block (layer norm, attention,
  layer norm, erf GELU MLP, residuals) -> y[2, 3, 8]. Each row of x is a mean plus
  1 or 2 times a +-1 pattern, so layer norm sees a variance of exactly 1 or 4 (eps
  1e-12 rounds away); the head dimension of 4 makes the 1/sqrt(4) scale exact; one
  score per attention row is at least 40 above the others, so softmax is one-hot to
  the last bit; every MLP pre-activation is >= 8 (GELU returns it) or <= -24 (GELU
  returns zero).
Each framework's output and each written graph (reference kernels and executor)
must equal the NumPy reference bit for bit. Running it again writes the same bytes.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from exact_examples import REPO, array_literal, check_export, f32, one_thread, pattern, require_bits, write_folder

EPS = 1e-12  # layer norm's epsilon: 1 + 1e-12 and 4 + 1e-12 round to 1 and 4 in f32


# --- the exact NumPy forms of the non-linear functions: each refuses an argument
# --- whose result f32 would have to round -----------------------------------------
def exact_sigmoid(z: np.ndarray, what: str) -> np.ndarray:
    if not np.all((z == 0) | (z >= 20)):
        raise SystemExit(f"{what}: a sigmoid argument is neither 0 nor >= 20: {z[(z != 0) & (z < 20)]}")
    return np.where(z == 0, 0.5, 1.0)


def exact_tanh(z: np.ndarray, what: str) -> np.ndarray:
    if not np.all((z == 0) | (np.abs(z) >= 10)):
        raise SystemExit(f"{what}: a tanh argument is neither 0 nor |.| >= 10: {z[(z != 0) & (np.abs(z) < 10)]}")
    return np.sign(z)


def exact_gelu(z: np.ndarray, what: str) -> np.ndarray:
    if not np.all((z >= 8) | (z <= -24)):
        raise SystemExit(f"{what}: a GELU argument is in (-24, 8): {z[(z > -24) & (z < 8)]}")
    return np.where(z >= 8, z, 0.0)


def rows_and_margin(scores: np.ndarray, what: str) -> np.ndarray:
    """Softmax of rows whose largest score is >= 40 above every other finite one: one-hot."""
    top = scores.max(-1, keepdims=True)
    winners = scores == top
    others = np.where(winners, -np.inf, scores)
    if not np.all(winners.sum(-1) == 1) or not np.all(top[..., 0] - others.max(-1) >= 40):
        raise SystemExit(f"{what}: an attention row has no score 40 above the rest")
    return winners.astype(np.float64)


# --- cnn -------------------------------------------------------------------------------
class Cnn:
    X = pattern((2, 1, 6, 6), 6)
    CONV_W, CONV_B = pattern((2, 1, 3, 3), 7), pattern((2,), 8)
    FC_W, FC_B = pattern((3, 8), 9), pattern((3,), 10)

    @classmethod
    def reference(cls) -> np.ndarray:
        x, w = cls.X, cls.CONV_W
        conv = np.zeros((2, 2, 4, 4))
        for r in range(4):
            for c in range(4):
                conv[:, :, r, c] = np.einsum("nihw,oihw->no", x[:, :, r:r + 3, c:c + 3], w)
        conv += cls.CONV_B[None, :, None, None]
        assert (conv > 0).any() and (conv < 0).any(), "ReLU must both pass and cut"
        pooled = np.maximum(conv, 0).reshape(2, 2, 2, 2, 2, 2).max(axis=(3, 5))
        return f32(pooled.reshape(2, 8) @ cls.FC_W.T + cls.FC_B, "cnn output")

    @classmethod
    def torch(cls):
        import torch
        import torch.nn.functional as F

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv2d(1, 2, 3)
                self.fc = torch.nn.Linear(8, 3)

            def forward(self, x):
                return self.fc(F.max_pool2d(torch.relu(self.conv(x)), 2).flatten(1))

        net = Net()
        _copy(net.conv, cls.CONV_W, cls.CONV_B)
        _copy(net.fc, cls.FC_W, cls.FC_B)
        return net

    @classmethod
    def jax(cls):
        import jax
        from jax import lax

        params = {"conv": {"weight": _f(cls.CONV_W), "bias": _f(cls.CONV_B)},
                  "fc": {"weight": _f(cls.FC_W.T), "bias": _f(cls.FC_B)}}

        def net(p, x):
            y = lax.conv_general_dilated(x, p["conv"]["weight"], (1, 1), "VALID",
                                         dimension_numbers=("NCHW", "OIHW", "NCHW"))
            y = jax.nn.relu(y + p["conv"]["bias"][None, :, None, None])
            y = lax.reduce_window(y, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
            return y.reshape(y.shape[0], -1) @ p["fc"]["weight"] + p["fc"]["bias"]

        return net, params

    @classmethod
    def tf(cls):
        import keras

        net = keras.Sequential([
            keras.Input((1, 6, 6), batch_size=2),
            keras.layers.Permute((2, 3, 1)),  # NCHW -> NHWC
            keras.layers.Conv2D(2, 3, activation="relu", name="conv"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Permute((3, 1, 2)),  # back to NCHW, so the flattening order is PyTorch's
            keras.layers.Flatten(),
            keras.layers.Dense(3, name="fc")])
        net.get_layer("conv").set_weights([_f(cls.CONV_W.transpose(2, 3, 1, 0)), _f(cls.CONV_B)])
        net.get_layer("fc").set_weights([_f(cls.FC_W.T), _f(cls.FC_B)])
        return net


# --- lstm ------------------------------------------------------------------------------
class Lstm:
    STEPS, INPUTS, HIDDEN = 12, 3, 2
    I, F, G, O = range(4)  # PyTorch's gate order

    @staticmethod
    def inputs() -> np.ndarray:
        x = np.zeros((2, 12, 3))
        x[:, :, 0] = 4.0          # the drive that saturates the solved gates ...
        x[0, -1, 0] = 0.0         # ... except on row 0's last step
        x[1, :, 1] = 1.0          # which row: flips the cell gates' sign
        x[:, :, 2] = pattern((2, 12), 11)  # small values that the weights must not unsaturate
        return x

    @classmethod
    def parameters(cls):
        """(w_ih [8, 3], w_hh [8, 2], b_ih [8], b_hh [8]), PyTorch's layout, with the
        biases of unit 0's input, cell and output gates solved."""
        H = cls.HIDDEN
        w_ih = np.zeros((4 * H, 3))
        w_ih[:, 2] = pattern((4 * H,), 12)
        # unit 0: i and o driven by feature 0; g driven up, and down on row 1.
        w_ih[cls.I * H + 0, 0] = w_ih[cls.O * H + 0, 0] = 8.0
        w_ih[cls.F * H + 0, 0] = 1.0
        w_ih[cls.G * H + 0, :2] = (4.0, -32.0)
        # unit 1: its cell gate runs the other way (down on row 0, up on row 1).
        w_ih[cls.G * H + 1, :2] = (-4.0, 56.0)
        w_hh = pattern((4 * H, H), 13)
        b_hh = pattern((4 * H,), 14)
        b_ih = np.full(4 * H, 28.0) - b_hh  # saturated gates: bias 28 in all
        b_ih[cls.G * H + 1] = -24.0 - b_hh[cls.G * H + 1]
        # Solve unit 0's i, g, o biases: pre-activation 0 on row 0's last step, where
        # h_11 = (tanh(11), tanh(-11)) = (1, -1) exactly.
        x_last, h_prev = cls.inputs()[0, -1], np.array([1.0, -1.0])
        for gate in (cls.I, cls.G, cls.O):
            row = gate * H + 0
            b_ih[row] = -(w_ih[row] @ x_last + w_hh[row] @ h_prev + b_hh[row])
        return w_ih, w_hh, b_ih, b_hh

    FC_W, FC_B = pattern((3, 2), 15), pattern((3,), 16)

    @classmethod
    def reference(cls) -> np.ndarray:
        x = cls.inputs()
        w_ih, w_hh, b_ih, b_hh = cls.parameters()
        H = cls.HIDDEN
        h, c = np.zeros((2, H)), np.zeros((2, H))
        for t in range(cls.STEPS):
            z = x[:, t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
            what = f"lstm step {t}"
            i, f = exact_sigmoid(z[:, :H], what), exact_sigmoid(z[:, H:2 * H], what)
            g, o = exact_tanh(z[:, 2 * H:3 * H], what), exact_sigmoid(z[:, 3 * H:], what)
            c = f * c + i * g
            # tanh of a cell below 10 is not exact; it only reaches saturated gates, and
            # the last two steps' cells are past 10 (checked by exact_tanh there).
            h = o * (np.tanh(c) if t < cls.STEPS - 2 else exact_tanh(c, f"lstm cell {t}"))
        return f32(h @ cls.FC_W.T + cls.FC_B, "lstm output")

    @classmethod
    def torch(cls):
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = torch.nn.LSTM(3, 2, batch_first=True)
                self.fc = torch.nn.Linear(2, 3)

            def forward(self, x):
                return self.fc(self.lstm(x)[0][:, -1])

        net = Net()
        with torch.no_grad():
            for name, array in zip(("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"), cls.parameters()):
                getattr(net.lstm, name).copy_(torch.from_numpy(_f(array)))
        _copy(net.fc, cls.FC_W, cls.FC_B)
        return net

    @classmethod
    def jax(cls):
        import jax
        import jax.numpy as jnp
        from jax import lax

        w_ih, w_hh, b_ih, b_hh = cls.parameters()
        params = {"lstm": {"w_ih": _f(w_ih.T), "w_hh": _f(w_hh.T), "b_ih": _f(b_ih), "b_hh": _f(b_hh)},
                  "fc": {"weight": _f(cls.FC_W.T), "bias": _f(cls.FC_B)}}

        def net(p, x):
            def step(carry, x_t):
                h, c = carry
                z = x_t @ p["lstm"]["w_ih"] + p["lstm"]["b_ih"] + h @ p["lstm"]["w_hh"] + p["lstm"]["b_hh"]
                i, f, g, o = jnp.split(z, 4, axis=-1)
                c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
                h = jax.nn.sigmoid(o) * jnp.tanh(c)
                return (h, c), None

            zeros = jnp.zeros((x.shape[0], 2), x.dtype)
            (h, _), _ = lax.scan(step, (zeros, zeros), x.transpose(1, 0, 2))
            return h @ p["fc"]["weight"] + p["fc"]["bias"]

        return net, params

    @classmethod
    def tf(cls):
        import tensorflow as tf

        w_ih, w_hh, b_ih, b_hh = cls.parameters()

        class Net(tf.Module):
            def __init__(self):
                super().__init__()
                self.w_ih, self.w_hh = _v(w_ih.T, "lstm.w_ih"), _v(w_hh.T, "lstm.w_hh")
                self.bias = _v(b_ih + b_hh, "lstm.bias")  # TensorFlow's LSTMs hold one bias
                self.fc_w, self.fc_b = _v(Lstm.FC_W.T, "fc.weight"), _v(Lstm.FC_B, "fc.bias")

            def __call__(self, x):
                h = c = tf.zeros([x.shape[0], 2])
                for t in range(x.shape[1]):
                    z = tf.matmul(x[:, t], self.w_ih) + tf.matmul(h, self.w_hh) + self.bias
                    i, f, g, o = tf.split(z, 4, axis=-1)
                    c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
                    h = tf.sigmoid(o) * tf.tanh(c)
                return tf.matmul(h, self.fc_w) + self.fc_b

        return Net()


# --- transformer -----------------------------------------------------------------------
class Transformer:
    SEQ, DIM, HEADS, HIDDEN = 3, 8, 2, 16
    # Each row's +-1 pattern (four of each sign, so its variance is exactly 1), scale and mean.
    PATTERNS = np.array([[[1, 1, -1, -1, 1, -1, 1, -1], [1, -1, 1, -1, -1, 1, 1, -1], [-1, 1, 1, -1, 1, 1, -1, -1]],
                         [[-1, -1, 1, 1, 1, 1, -1, -1], [1, -1, -1, 1, -1, -1, 1, 1], [1, 1, -1, -1, -1, 1, -1, 1]]],
                        dtype=np.float64)
    SCALES = np.array([[1, 2, 1], [2, 1, 2]], dtype=np.float64)
    MEANS = pattern((2, 3), 17)

    X = MEANS[..., None] + SCALES[..., None] * PATTERNS
    NORM1 = (np.abs(pattern((8,), 18)) + 0.5, pattern((8,), 19) / 4)
    # Queries are the normalized rows times 32 (per-head signs), keys the rows: head 0
    # finds the most similar earlier row (itself), head 1 the least similar.
    Q_W = np.diag([32.0] * 4 + [-32.0] * 4)
    K_W = np.eye(8)
    V_W, V_B = pattern((8, 8), 20) / 2, np.full(8, 1 / 32)
    # Every output feature is the same sum of the attention row, so the residual moves
    # a row's mean and keeps its variance (1 or 4) for the second layer norm.
    OUT_W, OUT_B = np.tile(pattern((1, 8), 21), (8, 1)), np.full(8, pattern((1,), 22)[0])
    NORM2 = (np.abs(pattern((8,), 23)) + 0.5, pattern((8,), 24) / 4)
    FC1_W, FC1_B = pattern((16, 8), 25) / 2, np.where(pattern((16,), 26) > 0, 16.0, -32.0)
    FC2_W, FC2_B = pattern((8, 16), 27), pattern((8,), 28)

    @classmethod
    def norm(cls, x, scale_shift, what):
        mean = x.mean(-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(-1, keepdims=True)
        if not np.all((variance == 1) | (variance == 4)):
            raise SystemExit(f"{what}: a row's variance is not 1 or 4: {variance.ravel()}")
        scale, shift = scale_shift
        return (x - mean) / np.sqrt(variance) * scale + shift

    @classmethod
    def reference(cls) -> np.ndarray:
        x = cls.X
        n = cls.norm(x, cls.NORM1, "layer norm 1")
        q, k, v = n @ cls.Q_W.T, n @ cls.K_W.T, n @ cls.V_W.T + cls.V_B
        if np.any(v == 0):
            raise SystemExit("a value is 0: the 4e-18 weights of the losing scores would show")
        heads = lambda t: t.reshape(2, cls.SEQ, cls.HEADS, 4).transpose(0, 2, 1, 3)
        scores = heads(q) @ heads(k).transpose(0, 1, 3, 2) * 0.5
        scores = np.where(np.tril(np.ones((cls.SEQ, cls.SEQ), bool)), scores, -np.inf)
        a = rows_and_margin(scores, "attention") @ heads(v)
        x = x + a.transpose(0, 2, 1, 3).reshape(2, cls.SEQ, cls.DIM) @ cls.OUT_W.T + cls.OUT_B
        hidden = exact_gelu(cls.norm(x, cls.NORM2, "layer norm 2") @ cls.FC1_W.T + cls.FC1_B, "MLP")
        assert (hidden > 0).any() and (hidden == 0).any(), "GELU must both pass and cut"
        return f32(x + hidden @ cls.FC2_W.T + cls.FC2_B, "transformer output")

    @classmethod
    def named(cls) -> dict[str, np.ndarray]:
        """The parameters in PyTorch's layout (Linear weights [out, in])."""
        return {"norm1.weight": cls.NORM1[0], "norm1.bias": cls.NORM1[1],
                "q.weight": cls.Q_W, "k.weight": cls.K_W, "v.weight": cls.V_W, "v.bias": cls.V_B,
                "out.weight": cls.OUT_W, "out.bias": cls.OUT_B,
                "norm2.weight": cls.NORM2[0], "norm2.bias": cls.NORM2[1],
                "fc1.weight": cls.FC1_W, "fc1.bias": cls.FC1_B, "fc2.weight": cls.FC2_W, "fc2.bias": cls.FC2_B}

    @classmethod
    def torch(cls):
        import torch
        import torch.nn.functional as F

        class Norm(torch.nn.Module):
            """Two-pass layer norm: torch.nn.LayerNorm's one-pass CPU kernel rounds the
            variance differently (the spec found an ulp once a row's mean passes ~1/6)."""

            def __init__(self):
                super().__init__()
                self.weight, self.bias = torch.nn.Parameter(torch.ones(8)), torch.nn.Parameter(torch.zeros(8))

            def forward(self, x):
                centered = x - x.mean(-1, keepdim=True)
                variance = (centered * centered).mean(-1, keepdim=True)
                return centered * torch.rsqrt(variance + EPS) * self.weight + self.bias

        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.norm1, self.norm2 = Norm(), Norm()
                self.q, self.k = torch.nn.Linear(8, 8, bias=False), torch.nn.Linear(8, 8, bias=False)
                self.v, self.out = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)
                self.fc1, self.fc2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 8)

            def forward(self, x):
                b, s, d = x.shape
                split = lambda t: t.view(b, s, 2, 4).transpose(1, 2)
                n = self.norm1(x)
                a = F.scaled_dot_product_attention(split(self.q(n)), split(self.k(n)), split(self.v(n)), is_causal=True)
                x = x + self.out(a.transpose(1, 2).reshape(b, s, d))
                return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))

        net = Block()
        with torch.no_grad():
            for name, array in cls.named().items():
                net.get_parameter(name).copy_(torch.from_numpy(_f(array)))
        return net

    @classmethod
    def jax(cls):
        import jax
        import jax.numpy as jnp
        from jax import lax

        params = {name: _f(array.T if name.endswith(".weight") and array.ndim == 2 else array)
                  for name, array in cls.named().items()}

        def norm(p, name, x):
            centered = x - x.mean(-1, keepdims=True)
            variance = (centered * centered).mean(-1, keepdims=True)
            return centered * lax.rsqrt(variance + EPS) * p[f"{name}.weight"] + p[f"{name}.bias"]

        def net(p, x):
            b, s, d = x.shape
            split = lambda t: t.reshape(b, s, 2, 4).transpose(0, 2, 1, 3)
            n = norm(p, "norm1", x)
            q, k, v = split(n @ p["q.weight"]), split(n @ p["k.weight"]), split(n @ p["v.weight"] + p["v.bias"])
            scores = q @ k.transpose(0, 1, 3, 2) * (1 / math.sqrt(4))
            scores = jnp.where(jnp.tril(jnp.ones((s, s), bool)), scores, -jnp.inf)
            a = (jax.nn.softmax(scores, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
            x = x + a @ p["out.weight"] + p["out.bias"]
            hidden = jax.nn.gelu(norm(p, "norm2", x) @ p["fc1.weight"] + p["fc1.bias"], approximate=False)
            return x + hidden @ p["fc2.weight"] + p["fc2.bias"]

        return net, params

    @classmethod
    def tf(cls):
        import tensorflow as tf

        named = cls.named()

        class Block(tf.Module):
            def __init__(self):
                super().__init__()
                self.p = {name: _v(array.T if name.endswith(".weight") and array.ndim == 2 else array, name)
                          for name, array in named.items()}

            def norm(self, name, x):
                centered = x - tf.reduce_mean(x, -1, keepdims=True)
                variance = tf.reduce_mean(centered * centered, -1, keepdims=True)
                return centered * tf.math.rsqrt(variance + EPS) * self.p[f"{name}.weight"] + self.p[f"{name}.bias"]

            def __call__(self, x):
                b, s, d = x.shape
                p = self.p
                split = lambda t: tf.transpose(tf.reshape(t, [b, s, 2, 4]), [0, 2, 1, 3])
                n = self.norm("norm1", x)
                q, k = split(tf.matmul(n, p["q.weight"])), split(tf.matmul(n, p["k.weight"]))
                v = split(tf.matmul(n, p["v.weight"]) + p["v.bias"])
                scores = tf.matmul(q, k, transpose_b=True) * (1 / math.sqrt(4))
                scores += np.triu(np.full((s, s), -np.inf, np.float32), 1)  # key j hidden from query i > j
                # Softmax written out: tf.nn.softmax's kernel returns 1 - 2^-24 for a one-hot
                # row once the tensor holds 12 or more rows (here 12: 2 x 2 x 3).
                e = tf.exp(scores - tf.reduce_max(scores, -1, keepdims=True))
                weights = e / tf.reduce_sum(e, -1, keepdims=True)
                a = tf.reshape(tf.transpose(tf.matmul(weights, v), [0, 2, 1, 3]), [b, s, d])
                x = x + tf.matmul(a, p["out.weight"]) + p["out.bias"]
                hidden = tf.nn.gelu(tf.matmul(self.norm("norm2", x), p["fc1.weight"]) + p["fc1.bias"], approximate=False)
                return x + tf.matmul(hidden, p["fc2.weight"]) + p["fc2.bias"]

        return Block()


# --- helpers -----------------------------------------------------------------------------
def _f(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(f32(array, "a parameter"))


def _v(array: np.ndarray, name: str):
    import tensorflow as tf

    return tf.Variable(_f(array), trainable=False, name=name)


def _copy(layer, weight: np.ndarray, bias: np.ndarray) -> None:
    import torch

    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(_f(weight)))
        layer.bias.copy_(torch.from_numpy(_f(bias)))


MODELS = {"cnn": (Cnn, lambda: Cnn.X), "lstm": (Lstm, Lstm.inputs), "transformer": (Transformer, lambda: Transformer.X)}


def framework_exports(model, x: np.ndarray, want: np.ndarray) -> dict:
    """{framework: Builder}, after requiring each framework's own output to be `want`."""
    import jax
    import torch

    from rml import from_jax, from_tf, from_torch

    exports = {}
    net = model.torch()
    with torch.no_grad():
        require_bits(net.eval()(torch.from_numpy(x)).numpy(), want, f"{model.__name__} in PyTorch")
    exports["torch"] = from_torch.export(net, (torch.from_numpy(x),), input_names=["x"])
    fn, params = model.jax()
    require_bits(np.asarray(jax.jit(fn)(params, x)), want, f"{model.__name__} in JAX")
    exports["jax"] = from_jax.export(fn, params, (x,), input_names=["x"])
    net = model.tf()
    require_bits(np.asarray(net(x)), want, f"{model.__name__} in TensorFlow")  # no layer here acts on `training`
    exports["tf"] = from_tf.export(net, (x,), input_names=["x"])
    return exports


def header(results: dict) -> str:
    parts = ["// Generated by tools/make_tiny_models.py from its NumPy reference: do not edit.\n"
             "#pragma once\n\n#include <string_view>\n#include <utility>\n\nnamespace tiny_models {\n"]
    for name, (want, nodes) in results.items():
        counts = ", ".join(f'{{"{name}_{framework}", {count}}}' for framework, count in nodes.items())
        parts.append(f"\nnamespace {name} {{\n{array_literal('kExpected', want)}"
                     f"inline constexpr std::pair<std::string_view, int> kExports[] = {{{counts}}};\n"
                     f"}}  // namespace {name}\n")
    parts.append("\n}  // namespace tiny_models\n")
    return "".join(parts)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "examples" / "tiny_models")
    args = parser.parse_args(argv)
    one_thread()

    def make(scratch: Path) -> None:
        results = {}
        for name, (model, inputs) in MODELS.items():
            want, x = model.reference(), _f(inputs())
            nodes = {}
            for framework, builder in framework_exports(model, x, want).items():
                nodes[framework] = check_export(builder, scratch, f"{name}_{framework}", {"x": x}, want)
                print(f"tiny_models {name} {framework}: {nodes[framework]} nodes, framework and rml exact", flush=True)
            results[name] = (want, nodes)
        (scratch / "expected.hpp").write_text(header(results))

    write_folder(args.out, make)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
