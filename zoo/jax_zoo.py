"""Zoo models in JAX, on the shared seeded weights (zoo/weights.py).

`build(model, size)` returns `(fn, params, make_inputs)`: `fn(params, *inputs)`
is a pure function, `params` a flat dict {name: array} drawn from `Weights` in
the same order and under the same names as the PyTorch definitions
(zoo/torch_zoo.py), so both compute the same function from identical arrays.
Layouts are PyTorch's (Linear weights [out, in], convolutions OIHW, NCHW
images); recurrent models run `lax.scan` over time.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .configs import config
from .inputs import example_inputs
from .weights import Weights, timestep_frequencies

CONV_LAYOUT = ("NCHW", "OIHW", "NCHW")


# --- parameters, requested in torch_zoo's order ---------------------------------
def _dense(w: Weights, p: dict, name: str, fan_in: int, fan_out: int):
    p[f"{name}.weight"], p[f"{name}.bias"] = w.linear(name, fan_in, fan_out)


def _norm(w: Weights, p: dict, name: str, dim: int):
    p[f"{name}.weight"], p[f"{name}.bias"] = w.norm(name, dim)


def _conv(w: Weights, p: dict, name: str, cin: int, cout: int, k: int):
    p[f"{name}.weight"], p[f"{name}.bias"] = w.conv(name, cin, cout, k)


def _block_params(w: Weights, p: dict, name: str, dim: int, hidden: int):
    _norm(w, p, f"{name}.norm1", dim)
    for part in ("q", "k", "v", "out"):
        _dense(w, p, f"{name}.attn.{part}", dim, dim)
    _norm(w, p, f"{name}.norm2", dim)
    _dense(w, p, f"{name}.fc1", dim, hidden)
    _dense(w, p, f"{name}.fc2", hidden, dim)


# --- layers ------------------------------------------------------------------------
def dense(p, name, x):
    return x @ p[f"{name}.weight"].T + p[f"{name}.bias"]


def norm(p, name, x, eps=1e-5):
    """Two-pass layer norm, as torch_zoo.Norm writes it."""
    mean = x.mean(-1, keepdims=True)
    centered = x - mean
    variance = (centered * centered).mean(-1, keepdims=True)
    return centered * lax.rsqrt(variance + eps) * p[f"{name}.weight"] + p[f"{name}.bias"]


def conv(p, name, x, stride=1, padding=0):
    y = lax.conv_general_dilated(x, p[f"{name}.weight"], (stride, stride), [(padding, padding)] * 2,
                                 dimension_numbers=CONV_LAYOUT)
    return y + p[f"{name}.bias"][None, :, None, None]


def max_pool(x, size):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, size, size), (1, 1, size, size), "VALID")


def attention(p, name, x, heads, causal=False):
    b, s, d = x.shape
    split = lambda t: t.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)
    q, k, v = (split(dense(p, f"{name}.{part}", x)) for part in "qkv")
    scores = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(d // heads))
    if causal:
        scores = jnp.where(jnp.tril(jnp.ones((s, s), bool)), scores, -jnp.inf)
    a = jax.nn.softmax(scores, axis=-1) @ v
    return dense(p, f"{name}.out", a.transpose(0, 2, 1, 3).reshape(b, s, d))


def block(p, name, x, heads, causal=False):
    x = x + attention(p, f"{name}.attn", norm(p, f"{name}.norm1", x), heads, causal)
    return x + dense(p, f"{name}.fc2", jax.nn.gelu(dense(p, f"{name}.fc1", norm(p, f"{name}.norm2", x)), approximate=False))


def unit(x):
    return x * lax.rsqrt((x * x).sum(-1, keepdims=True))


# --- models --------------------------------------------------------------------------
def _mlp(w, c):
    p, sizes = {}, c["sizes"]
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        _dense(w, p, f"fc{i}", a, b)

    def fn(p, x):
        for i in range(len(sizes) - 1):
            x = dense(p, f"fc{i}", x)
            if i + 2 < len(sizes):
                x = jax.nn.relu(x)
        return x
    return fn, p


def _cnn(w, c):
    p, (c0, c1, c2) = {}, c["channels"]
    _conv(w, p, "conv1", c0, c1, 3)
    _conv(w, p, "conv2", c1, c2, 3)
    _dense(w, p, "fc", c2 * (c["image"] // 4) ** 2, c["classes"])

    def fn(p, x):
        x = max_pool(jax.nn.relu(conv(p, "conv1", x, padding=1)), 2)
        x = max_pool(jax.nn.relu(conv(p, "conv2", x, padding=1)), 2)
        return dense(p, "fc", x.reshape(x.shape[0], -1))
    return fn, p


def _transformer_block(w, c):
    p = {}
    _block_params(w, p, "block", c["dim"], c["hidden"])
    return (lambda p, x: block(p, "block", x, c["heads"])), p


def _layernorm_gelu(w, c):
    p = {}
    _norm(w, p, "norm", c["dim"])
    _dense(w, p, "fc", c["dim"], c["hidden"])
    return (lambda p, x: jax.nn.gelu(dense(p, "fc", norm(p, "norm", x)), approximate=True)), p


def _vit(w, c):
    p, patch, dim = {}, c["patch"], c["dim"]
    _conv(w, p, "patch", c["channels"], dim, patch)
    p["pos"] = w.tensor("pos", ((c["image"] // patch) ** 2, dim), 0.1)
    for i in range(c["layers"]):
        _block_params(w, p, f"block{i}", dim, c["hidden"])
    _norm(w, p, "norm", dim)
    _dense(w, p, "head", dim, c["classes"])

    def fn(p, x):
        x = conv(p, "patch", x, stride=patch)
        x = x.reshape(x.shape[0], dim, -1).transpose(0, 2, 1) + p["pos"]
        for i in range(c["layers"]):
            x = block(p, f"block{i}", x, c["heads"])
        return dense(p, "head", norm(p, "norm", x).mean(1))
    return fn, p


def _token_transformer(w, c, causal):
    p, dim = {}, c["dim"]
    p["tokens.weight"] = w.embedding("tokens", c["vocab"], dim)
    p["pos"] = w.tensor("pos", (c["seq"], dim), 0.1)
    for i in range(c["layers"]):
        _block_params(w, p, f"block{i}", dim, c["hidden"])
    _norm(w, p, "norm", dim)
    if causal:
        _dense(w, p, "head", dim, c["vocab"])

    def fn(p, ids):
        x = p["tokens.weight"][ids] + p["pos"]
        for i in range(c["layers"]):
            x = block(p, f"block{i}", x, c["heads"], causal)
        x = norm(p, "norm", x)
        return dense(p, "head", x) if causal else x
    return fn, p


def _recurrent(w, c, kind):
    gates = {"rnn": 1, "lstm": 4}[kind]
    names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    p = {f"{kind}.{n}": a for n, a in zip(names, w.recurrent(kind, c["input"], c["hidden"], gates))}
    hidden = c["hidden"]

    def rnn_step(p, h, x_t):
        h = jnp.tanh(x_t @ p["rnn.weight_ih"].T + p["rnn.bias_ih"] + h @ p["rnn.weight_hh"].T + p["rnn.bias_hh"])
        return h, h

    def lstm_step(p, carry, x_t):
        h, cell = carry
        z = x_t @ p["lstm.weight_ih"].T + p["lstm.bias_ih"] + h @ p["lstm.weight_hh"].T + p["lstm.bias_hh"]
        i, f, g, o = jnp.split(z, 4, axis=-1)
        cell = jax.nn.sigmoid(f) * cell + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(cell)
        return (h, cell), h

    def fn(p, x):
        zeros = jnp.zeros((x.shape[0], hidden), x.dtype)
        step = rnn_step if kind == "rnn" else lstm_step
        carry = zeros if kind == "rnn" else (zeros, zeros)
        _, ys = lax.scan(lambda carry, x_t: step(p, carry, x_t), carry, x.transpose(1, 0, 2))
        return ys.transpose(1, 0, 2)
    return fn, p


def _ssm(w, c):
    p = {"A": w.decay("A", c["hidden"]),
         "B": w.tensor("B", (c["hidden"], c["input"]), 1.0 / math.sqrt(c["input"])),
         "C": w.tensor("C", (c["input"], c["hidden"]), 1.0 / math.sqrt(c["hidden"])),
         "D": w.tensor("D", (c["input"],))}

    def fn(p, x):
        u = x @ p["B"].T

        def step(h, u_t):
            h = p["A"] * h + u_t
            return h, h
        _, states = lax.scan(step, jnp.zeros((x.shape[0], c["hidden"]), x.dtype), u.transpose(1, 0, 2))
        return states.transpose(1, 0, 2) @ p["C"].T + x * p["D"]
    return fn, p


def _autoencoder(w, c):
    p = {}
    for name, a, b in (("enc1", c["data"], c["hidden"]), ("enc2", c["hidden"], c["latent"]),
                       ("dec1", c["latent"], c["hidden"]), ("dec2", c["hidden"], c["data"])):
        _dense(w, p, name, a, b)

    def fn(p, x):
        z = dense(p, "enc2", jax.nn.relu(dense(p, "enc1", x)))
        return jax.nn.sigmoid(dense(p, "dec2", jax.nn.relu(dense(p, "dec1", z))))
    return fn, p


def _vae(w, c):
    p = {}
    for name, a, b in (("enc", c["data"], c["hidden"]), ("mu", c["hidden"], c["latent"]),
                       ("logvar", c["hidden"], c["latent"]), ("dec1", c["latent"], c["hidden"]),
                       ("dec2", c["hidden"], c["data"])):
        _dense(w, p, name, a, b)

    def fn(p, x, eps):
        h = jax.nn.relu(dense(p, "enc", x))
        z = dense(p, "mu", h) + jnp.exp(0.5 * dense(p, "logvar", h)) * eps
        return jax.nn.sigmoid(dense(p, "dec2", jax.nn.relu(dense(p, "dec1", z))))
    return fn, p


def _gan_generator(w, c):
    p = {}
    _dense(w, p, "fc1", c["latent"], c["hidden"])
    _dense(w, p, "fc2", c["hidden"], c["data"])
    return (lambda p, z: jnp.tanh(dense(p, "fc2", jax.nn.leaky_relu(dense(p, "fc1", z), 0.2)))), p


def _diffusion_mlp(w, c):
    p = {}
    _dense(w, p, "fc1", c["data"] + 2 * c["freqs"], c["hidden"])
    _dense(w, p, "fc2", c["hidden"], c["hidden"])
    _dense(w, p, "fc3", c["hidden"], c["data"])
    freqs = timestep_frequencies(c["freqs"])

    def fn(p, x, t):
        angles = t[:, None] * freqs[None, :]
        h = jnp.concatenate([x, jnp.sin(angles), jnp.cos(angles)], axis=-1)
        h = jax.nn.gelu(dense(p, "fc1", h), approximate=False)
        return dense(p, "fc3", jax.nn.gelu(dense(p, "fc2", h), approximate=False))
    return fn, p


def _unet(w, c):
    p, (c0, c1), cin = {}, c["channels"], c["in_channels"]
    _conv(w, p, "enc1", cin, c0, 3)
    _conv(w, p, "enc2", c0, c1, 3)
    _conv(w, p, "dec", c1 + c0, c0, 3)
    _conv(w, p, "out", c0, cin, 1)

    def fn(p, x):
        skip = jax.nn.relu(conv(p, "enc1", x, padding=1))
        h = jax.nn.relu(conv(p, "enc2", max_pool(skip, 2), padding=1))
        h = jnp.concatenate([jnp.repeat(jnp.repeat(h, 2, axis=2), 2, axis=3), skip], axis=1)
        return conv(p, "out", jax.nn.relu(conv(p, "dec", h, padding=1)))
    return fn, p


def _gcn(w, c):
    p = {"adjacency": w.adjacency("adjacency", c["nodes"])}
    _dense(w, p, "gc1", c["features"], c["hidden"])
    _dense(w, p, "gc2", c["hidden"], c["classes"])

    def fn(p, x):
        h = jax.nn.relu(p["adjacency"] @ (x @ p["gc1.weight"].T) + p["gc1.bias"])
        return p["adjacency"] @ (h @ p["gc2.weight"].T) + p["gc2.bias"]
    return fn, p


def _two_tower(w, c):
    p, e = {}, c["embed"]
    for name, a in (("user1", c["user"]), ("user2", e), ("item1", c["item"]), ("item2", e)):
        _dense(w, p, name, a, e)

    def fn(p, user, item):
        u = dense(p, "user2", jax.nn.relu(dense(p, "user1", user)))
        v = dense(p, "item2", jax.nn.relu(dense(p, "item1", item)))
        return (u * v).sum(-1)
    return fn, p


def _clip(w, c):
    p, e = {}, c["embed"]
    _conv(w, p, "conv", c["channels"], 2 * e, 3)
    _dense(w, p, "image_proj", 2 * e, e)
    p["tokens.weight"] = w.embedding("tokens", c["vocab"], e)
    _dense(w, p, "text_proj", e, e)

    def fn(p, image, ids):
        i = jax.nn.relu(conv(p, "conv", image, padding=1)).mean((2, 3))
        i = unit(dense(p, "image_proj", i))
        t = unit(dense(p, "text_proj", p["tokens.weight"][ids].mean(1)))
        return 10.0 * (i @ t.T)
    return fn, p


def _moe(w, c):
    p, dim, experts = {}, c["dim"], c["experts"]
    _dense(w, p, "router", dim, experts)
    for e in range(experts):
        _dense(w, p, f"expert{e}.up", dim, 2 * dim)
    for e in range(experts):
        _dense(w, p, f"expert{e}.down", 2 * dim, dim)

    def fn(p, x):
        values, indices = lax.top_k(jax.nn.softmax(dense(p, "router", x), axis=-1), c["top"])
        values = values / values.sum(-1, keepdims=True)
        chosen = (indices[..., None] == jnp.arange(experts)).astype(x.dtype)  # [..., top, experts]
        gates = (values[..., None] * chosen).sum(-2)                            # [..., experts]
        outs = jnp.stack([dense(p, f"expert{e}.down", jax.nn.gelu(dense(p, f"expert{e}.up", x), approximate=False))
                          for e in range(experts)], -2)
        return x + (gates[..., None] * outs).sum(-2)
    return fn, p


BUILDERS = {
    "mlp": _mlp, "cnn": _cnn, "transformer_block": _transformer_block, "layernorm_gelu": _layernorm_gelu,
    "vit": _vit, "encoder": lambda w, c: _token_transformer(w, c, causal=False),
    "tiny_gpt": lambda w, c: _token_transformer(w, c, causal=True),
    "rnn": lambda w, c: _recurrent(w, c, "rnn"), "lstm": lambda w, c: _recurrent(w, c, "lstm"), "ssm": _ssm,
    "autoencoder": _autoencoder, "vae": _vae, "gan_generator": _gan_generator, "diffusion_mlp": _diffusion_mlp,
    "unet": _unet, "gcn": _gcn, "two_tower": _two_tower, "clip": _clip, "moe": _moe,
}


def build(model: str, size: str = "tiny"):
    """(fn, params, make_inputs(batch) -> tuple of NumPy arrays) for a zoo model."""
    c = config(model, size)
    fn, params = BUILDERS[model](Weights(model), c)
    params = {name: jnp.asarray(np.asarray(a)) for name, a in params.items()}
    return fn, params, lambda batch: example_inputs(model, batch, size)
