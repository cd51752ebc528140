"""Zoo models in TensorFlow, on the shared seeded weights (zoo/weights.py).

`build(model, size)` returns a tf.Module computing the same function as the
PyTorch definition (zoo/torch_zoo.py) and a function making NumPy example
inputs for a batch size. Parameters are requested from `Weights` in the same
order and under the same names as torch_zoo does, and held as tf.Variables of
those names in TensorFlow's layouts: dense kernels [in, out], convolution
kernels HWIO. The models are written the way TensorFlow users write them:
convolutions and pools in NHWC (the NCHW input is transposed at the start, and
back where PyTorch's layout matters), recurrent models as a Python loop over
the time steps, attention and layer norm written out.
"""
from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from .configs import config
from .inputs import example_inputs
from .weights import Weights, timestep_frequencies

TO_NHWC, TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]


def _v(array: np.ndarray, name: str) -> tf.Variable:
    return tf.Variable(np.ascontiguousarray(array), trainable=False, name=name)


def _gelu(x):
    """torch's F.gelu default: the erf form."""
    return tf.nn.gelu(x, approximate=False)


class Dense(tf.Module):
    def __init__(self, w: Weights, name: str, fan_in: int, fan_out: int):
        super().__init__()
        weight, bias = w.linear(name, fan_in, fan_out)
        self.kernel = _v(weight.T, f"{name}.weight")  # [in, out]
        self.bias = _v(bias, f"{name}.bias")

    def __call__(self, x):
        return tf.matmul(x, self.kernel) + self.bias


class Conv(tf.Module):
    """A 2-D convolution on NHWC data with an HWIO kernel (from the shared OIHW array)."""

    def __init__(self, w: Weights, name: str, in_channels: int, out_channels: int, kernel: int,
                 stride: int = 1, padding: str = "SAME"):
        super().__init__()
        weight, bias = w.conv(name, in_channels, out_channels, kernel)
        self.kernel = _v(weight.transpose(2, 3, 1, 0), f"{name}.weight")
        self.bias = _v(bias, f"{name}.bias")
        self.stride, self.padding = stride, padding

    def __call__(self, x):
        return tf.nn.bias_add(tf.nn.conv2d(x, self.kernel, self.stride, self.padding), self.bias)


class Norm(tf.Module):
    """Layer norm written two-pass, as torch_zoo's Norm."""

    def __init__(self, w: Weights, name: str, dim: int, eps: float = 1e-5):
        super().__init__()
        scale, shift = w.norm(name, dim)
        self.scale, self.shift, self.eps = _v(scale, f"{name}.weight"), _v(shift, f"{name}.bias"), eps

    def __call__(self, x):
        mean = tf.reduce_mean(x, -1, keepdims=True)
        centered = x - mean
        variance = tf.reduce_mean(centered * centered, -1, keepdims=True)
        return centered * tf.math.rsqrt(variance + self.eps) * self.scale + self.shift


class Mlp(tf.Module):
    def __init__(self, w: Weights, sizes):
        super().__init__()
        self.layers = [Dense(w, f"fc{i}", a, b) for i, (a, b) in enumerate(zip(sizes, sizes[1:]))]

    def __call__(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = tf.nn.relu(x)
        return x


class Cnn(tf.Module):
    def __init__(self, w: Weights, image, channels, classes):
        super().__init__()
        c0, c1, c2 = channels
        self.conv1 = Conv(w, "conv1", c0, c1, 3)
        self.conv2 = Conv(w, "conv2", c1, c2, 3)
        self.fc = Dense(w, "fc", c2 * (image // 4) ** 2, classes)

    def __call__(self, x):
        x = tf.transpose(x, TO_NHWC)
        x = tf.nn.max_pool2d(tf.nn.relu(self.conv1(x)), 2, 2, "VALID")
        x = tf.nn.max_pool2d(tf.nn.relu(self.conv2(x)), 2, 2, "VALID")
        x = tf.transpose(x, TO_NCHW)  # flatten in PyTorch's (C, H, W) order
        return self.fc(tf.reshape(x, [x.shape[0], -1]))


class Attention(tf.Module):
    def __init__(self, w: Weights, name: str, dim: int, heads: int, causal: bool = False):
        super().__init__()
        self.q, self.k, self.v = (Dense(w, f"{name}.{p}", dim, dim) for p in "qkv")
        self.out = Dense(w, f"{name}.out", dim, dim)
        self.heads, self.causal = heads, causal

    def __call__(self, x):
        b, s, d = x.shape
        split = lambda t: tf.transpose(tf.reshape(t, [b, s, self.heads, d // self.heads]), [0, 2, 1, 3])
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = tf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(d // self.heads))
        if self.causal:  # key j is hidden from query i when j > i
            scores += np.triu(np.full((s, s), -np.inf, np.float32), 1)
        a = tf.matmul(tf.nn.softmax(scores), v)
        return self.out(tf.reshape(tf.transpose(a, [0, 2, 1, 3]), [b, s, d]))


class TransformerBlock(tf.Module):
    """Pre-norm block: x + attn(norm(x)), then + mlp(norm(.)) with GELU."""

    def __init__(self, w: Weights, name: str, dim: int, heads: int, hidden: int, causal: bool = False):
        super().__init__()
        self.norm1 = Norm(w, f"{name}.norm1", dim)
        self.attn = Attention(w, f"{name}.attn", dim, heads, causal)
        self.norm2 = Norm(w, f"{name}.norm2", dim)
        self.fc1 = Dense(w, f"{name}.fc1", dim, hidden)
        self.fc2 = Dense(w, f"{name}.fc2", hidden, dim)

    def __call__(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(_gelu(self.fc1(self.norm2(x))))


class LayerNormGelu(tf.Module):
    def __init__(self, w: Weights, dim: int, hidden: int):
        super().__init__()
        self.norm = Norm(w, "norm", dim)
        self.fc = Dense(w, "fc", dim, hidden)

    def __call__(self, x):
        return tf.nn.gelu(self.fc(self.norm(x)), approximate=True)


class AutoEncoder(tf.Module):
    def __init__(self, w: Weights, data: int, hidden: int, latent: int):
        super().__init__()
        self.enc1, self.enc2 = Dense(w, "enc1", data, hidden), Dense(w, "enc2", hidden, latent)
        self.dec1, self.dec2 = Dense(w, "dec1", latent, hidden), Dense(w, "dec2", hidden, data)

    def __call__(self, x):
        z = self.enc2(tf.nn.relu(self.enc1(x)))
        return tf.sigmoid(self.dec2(tf.nn.relu(self.dec1(z))))


class Vae(tf.Module):
    """Encoder to (mu, logvar); z = mu + exp(logvar / 2) * eps with eps an input."""

    def __init__(self, w: Weights, data: int, hidden: int, latent: int):
        super().__init__()
        self.enc = Dense(w, "enc", data, hidden)
        self.mu, self.logvar = Dense(w, "mu", hidden, latent), Dense(w, "logvar", hidden, latent)
        self.dec1, self.dec2 = Dense(w, "dec1", latent, hidden), Dense(w, "dec2", hidden, data)

    def __call__(self, x, eps):
        h = tf.nn.relu(self.enc(x))
        z = self.mu(h) + tf.exp(0.5 * self.logvar(h)) * eps
        return tf.sigmoid(self.dec2(tf.nn.relu(self.dec1(z))))


class GanGenerator(tf.Module):
    def __init__(self, w: Weights, data: int, hidden: int, latent: int):
        super().__init__()
        self.fc1, self.fc2 = Dense(w, "fc1", latent, hidden), Dense(w, "fc2", hidden, data)

    def __call__(self, z):
        return tf.tanh(self.fc2(tf.nn.leaky_relu(self.fc1(z), 0.2)))


class DiffusionMlp(tf.Module):
    """Noise predictor: sinusoidal embedding of the time step, concatenated with x."""

    def __init__(self, w: Weights, data: int, freqs: int, hidden: int):
        super().__init__()
        self.freqs = _v(timestep_frequencies(freqs), "freqs")
        self.fc1 = Dense(w, "fc1", data + 2 * freqs, hidden)
        self.fc2 = Dense(w, "fc2", hidden, hidden)
        self.fc3 = Dense(w, "fc3", hidden, data)

    def __call__(self, x, t):
        angles = t[:, None] * self.freqs[None, :]
        h = tf.concat([x, tf.sin(angles), tf.cos(angles)], -1)
        h = _gelu(self.fc1(h))
        return self.fc3(_gelu(self.fc2(h)))


class Vit(tf.Module):
    """Patches by a strided convolution, learned positions, pre-norm blocks,
    final norm, mean over tokens, linear head."""

    def __init__(self, w: Weights, image, channels, patch, dim, layers, heads, hidden, classes):
        super().__init__()
        self.patch = Conv(w, "patch", channels, dim, patch, stride=patch, padding="VALID")
        self.pos = _v(w.tensor("pos", ((image // patch) ** 2, dim), 0.1), "pos")
        self.blocks = [TransformerBlock(w, f"block{i}", dim, heads, hidden) for i in range(layers)]
        self.norm = Norm(w, "norm", dim)
        self.head = Dense(w, "head", dim, classes)

    def __call__(self, x):
        x = self.patch(tf.transpose(x, TO_NHWC))
        b, h, w, d = x.shape
        # NHWC patches flattened row-major are PyTorch's flatten(2).transpose(1, 2) tokens.
        x = tf.reshape(x, [b, h * w, d]) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.head(tf.reduce_mean(self.norm(x), 1))


class TokenTransformer(tf.Module):
    """Token and position embeddings, pre-norm blocks, final norm; with `causal`
    (tiny_gpt) a linear head to vocabulary logits."""

    def __init__(self, w: Weights, vocab, seq, dim, layers, heads, hidden, causal: bool):
        super().__init__()
        self.tokens = _v(w.embedding("tokens", vocab, dim), "tokens.weight")
        self.pos = _v(w.tensor("pos", (seq, dim), 0.1), "pos")
        self.blocks = [TransformerBlock(w, f"block{i}", dim, heads, hidden, causal) for i in range(layers)]
        self.norm = Norm(w, "norm", dim)
        self.head = Dense(w, "head", dim, vocab) if causal else None

    def __call__(self, ids):
        x = tf.gather(self.tokens, ids) + self.pos
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        return self.head(x) if self.head is not None else x


class Recurrent(tf.Module):
    """A tanh RNN or an LSTM (gates i, f, g, o) over the sequence, batch first,
    from h0 = c0 = 0 as a Python loop over the steps; returns every step's output."""

    def __init__(self, w: Weights, kind: str, inputs: int, hidden: int):
        super().__init__()
        gates = {"rnn": 1, "lstm": 4}[kind]
        w_ih, w_hh, b_ih, b_hh = w.recurrent(kind, inputs, hidden, gates)
        self.w_ih, self.w_hh = _v(w_ih.T, f"{kind}.weight_ih"), _v(w_hh.T, f"{kind}.weight_hh")
        self.b_ih, self.b_hh = _v(b_ih, f"{kind}.bias_ih"), _v(b_hh, f"{kind}.bias_hh")
        self.kind, self.hidden = kind, hidden

    def __call__(self, x):
        batch, steps, _ = x.shape
        h = c = tf.zeros((batch, self.hidden))
        outputs = []
        for t in range(steps):
            z = tf.matmul(x[:, t], self.w_ih) + self.b_ih + tf.matmul(h, self.w_hh) + self.b_hh
            if self.kind == "rnn":
                h = tf.tanh(z)
            else:
                i, f, g, o = tf.split(z, 4, axis=-1)
                c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
                h = tf.sigmoid(o) * tf.tanh(c)
            outputs.append(h)
        return tf.stack(outputs, axis=1)


class Ssm(tf.Module):
    """Diagonal linear state-space layer: u = x B^T, h_t = a * h_{t-1} + u_t from
    h_0 = 0 (a Python loop over the steps), y = h C^T + x * D."""

    def __init__(self, w: Weights, inputs: int, hidden: int):
        super().__init__()
        self.decay = _v(w.decay("A", hidden), "A")
        self.b = _v(w.tensor("B", (hidden, inputs), 1.0 / math.sqrt(inputs)).T, "B")  # [inputs, hidden]
        self.c = _v(w.tensor("C", (inputs, hidden), 1.0 / math.sqrt(hidden)).T, "C")  # [hidden, inputs]
        self.d = _v(w.tensor("D", (inputs,)), "D")

    def __call__(self, x):
        u = tf.matmul(x, self.b)
        h = tf.zeros((x.shape[0], 1, u.shape[2]))
        states = []
        for t in range(x.shape[1]):
            h = self.decay * h + u[:, t:t + 1]
            states.append(h)
        return tf.matmul(tf.concat(states, 1), self.c) + x * self.d


class UNet(tf.Module):
    """One level: conv-relu (skip), max pool, conv-relu, nearest upsample x2,
    concat with the skip, conv-relu, 1x1 conv back to the input channels."""

    def __init__(self, w: Weights, in_channels, channels):
        super().__init__()
        c0, c1 = channels
        self.enc1 = Conv(w, "enc1", in_channels, c0, 3)
        self.enc2 = Conv(w, "enc2", c0, c1, 3)
        self.dec = Conv(w, "dec", c1 + c0, c0, 3)
        self.out = Conv(w, "out", c0, in_channels, 1)

    def __call__(self, x):
        skip = tf.nn.relu(self.enc1(tf.transpose(x, TO_NHWC)))
        h = tf.nn.relu(self.enc2(tf.nn.max_pool2d(skip, 2, 2, "VALID")))
        _, height, width, _ = h.shape
        h = tf.concat([tf.image.resize(h, [2 * height, 2 * width], method="nearest"), skip], -1)
        return tf.transpose(self.out(tf.nn.relu(self.dec(h))), TO_NCHW)


class Gcn(tf.Module):
    """Two graph convolutions on a fixed normalised adjacency: relu(A x W1 + b1), A h W2 + b2."""

    def __init__(self, w: Weights, nodes, features, hidden, classes):
        super().__init__()
        self.adjacency = _v(w.adjacency("adjacency", nodes), "adjacency")
        w1, b1 = w.linear("gc1", features, hidden)
        w2, b2 = w.linear("gc2", hidden, classes)
        self.w1, self.b1 = _v(w1.T, "gc1.weight"), _v(b1, "gc1.bias")
        self.w2, self.b2 = _v(w2.T, "gc2.weight"), _v(b2, "gc2.bias")

    def __call__(self, x):
        h = tf.nn.relu(tf.matmul(self.adjacency, tf.matmul(x, self.w1)) + self.b1)
        return tf.matmul(self.adjacency, tf.matmul(h, self.w2)) + self.b2


class TwoTower(tf.Module):
    """User and item towers (dense-relu-dense) to embeddings; score = their dot product."""

    def __init__(self, w: Weights, user, item, embed):
        super().__init__()
        self.user1, self.user2 = Dense(w, "user1", user, embed), Dense(w, "user2", embed, embed)
        self.item1, self.item2 = Dense(w, "item1", item, embed), Dense(w, "item2", embed, embed)

    def __call__(self, user, item):
        u = self.user2(tf.nn.relu(self.user1(user)))
        v = self.item2(tf.nn.relu(self.item1(item)))
        return tf.reduce_sum(u * v, -1)


def _unit(x):
    """Rows scaled to unit length."""
    return x * tf.math.rsqrt(tf.reduce_sum(x * x, -1, keepdims=True))


class Clip(tf.Module):
    """Image tower (conv-relu, global mean, dense) and text tower (embedding, mean over
    tokens, dense) to unit embeddings; logits = 10 * images @ texts^T, [batch, batch]."""

    def __init__(self, w: Weights, image, channels, vocab, seq, embed):
        super().__init__()
        self.conv = Conv(w, "conv", channels, 2 * embed, 3)
        self.image_proj = Dense(w, "image_proj", 2 * embed, embed)
        self.tokens = _v(w.embedding("tokens", vocab, embed), "tokens.weight")
        self.text_proj = Dense(w, "text_proj", embed, embed)

    def __call__(self, image, ids):
        i = tf.reduce_mean(tf.nn.relu(self.conv(tf.transpose(image, TO_NHWC))), [1, 2])
        i = _unit(self.image_proj(i))
        t = _unit(self.text_proj(tf.reduce_mean(tf.gather(self.tokens, ids), 1)))
        return 10.0 * tf.matmul(i, t, transpose_b=True)


class Moe(tf.Module):
    """Mixture of experts with a residual: softmax router, top-k gates renormalised,
    every expert (dense-gelu-dense) computed and weighted by its gate (0 if not chosen)."""

    def __init__(self, w: Weights, dim, experts, top):
        super().__init__()
        self.router = Dense(w, "router", dim, experts)
        self.up = [Dense(w, f"expert{e}.up", dim, 2 * dim) for e in range(experts)]
        self.down = [Dense(w, f"expert{e}.down", 2 * dim, dim) for e in range(experts)]
        self.experts, self.top = experts, top

    def __call__(self, x):
        values, indices = tf.math.top_k(tf.nn.softmax(self.router(x)), self.top)
        values = values / tf.reduce_sum(values, -1, keepdims=True)
        chosen = tf.cast(tf.equal(indices[..., None], tf.range(self.experts)), x.dtype)  # [..., top, experts]
        gates = tf.reduce_sum(values[..., None] * chosen, -2)                            # [..., experts]
        outs = tf.stack([down(_gelu(up(x))) for up, down in zip(self.up, self.down)], -2)
        return x + tf.reduce_sum(gates[..., None] * outs, -2)


def build(model: str, size: str = "tiny"):
    """(module, make_inputs(batch) -> tuple of NumPy arrays) for a zoo model."""
    c, w = config(model, size), Weights(model)
    constructors = {
        "mlp": lambda: Mlp(w, c["sizes"]),
        "cnn": lambda: Cnn(w, c["image"], c["channels"], c["classes"]),
        "transformer_block": lambda: TransformerBlock(w, "block", c["dim"], c["heads"], c["hidden"]),
        "layernorm_gelu": lambda: LayerNormGelu(w, c["dim"], c["hidden"]),
        "vit": lambda: Vit(w, c["image"], c["channels"], c["patch"], c["dim"], c["layers"], c["heads"], c["hidden"],
                           c["classes"]),
        "encoder": lambda: TokenTransformer(w, c["vocab"], c["seq"], c["dim"], c["layers"], c["heads"], c["hidden"],
                                            causal=False),
        "tiny_gpt": lambda: TokenTransformer(w, c["vocab"], c["seq"], c["dim"], c["layers"], c["heads"], c["hidden"],
                                             causal=True),
        "rnn": lambda: Recurrent(w, "rnn", c["input"], c["hidden"]),
        "lstm": lambda: Recurrent(w, "lstm", c["input"], c["hidden"]),
        "ssm": lambda: Ssm(w, c["input"], c["hidden"]),
        "autoencoder": lambda: AutoEncoder(w, c["data"], c["hidden"], c["latent"]),
        "vae": lambda: Vae(w, c["data"], c["hidden"], c["latent"]),
        "gan_generator": lambda: GanGenerator(w, c["data"], c["hidden"], c["latent"]),
        "diffusion_mlp": lambda: DiffusionMlp(w, c["data"], c["freqs"], c["hidden"]),
        "unet": lambda: UNet(w, c["in_channels"], c["channels"]),
        "gcn": lambda: Gcn(w, c["nodes"], c["features"], c["hidden"], c["classes"]),
        "two_tower": lambda: TwoTower(w, c["user"], c["item"], c["embed"]),
        "clip": lambda: Clip(w, c["image"], c["channels"], c["vocab"], c["seq"], c["embed"]),
        "moe": lambda: Moe(w, c["dim"], c["experts"], c["top"]),
    }
    return constructors[model](), lambda batch: example_inputs(model, batch, size)
