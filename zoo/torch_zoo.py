"""Zoo models in PyTorch, on the shared seeded weights (zoo/weights.py).

`build(model, size)` returns the nn.Module and a function making example
inputs for a batch size. Parameters are requested from `Weights` in a fixed
order, which the JAX and TensorFlow definitions repeat. This file grows model
by model; `MODELS_DONE` lists the ones defined so far.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from .configs import config
from .weights import Weights


def _p(array: np.ndarray) -> torch.nn.Parameter:
    return torch.nn.Parameter(torch.from_numpy(array.copy()), requires_grad=False)


class Dense(torch.nn.Module):
    def __init__(self, w: Weights, name: str, fan_in: int, fan_out: int):
        super().__init__()
        weight, bias = w.linear(name, fan_in, fan_out)
        self.weight, self.bias = _p(weight), _p(bias)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


class Norm(torch.nn.Module):
    """Layer norm written two-pass (the spec notes torch.nn.LayerNorm's one-pass
    CPU kernel can round the variance differently from JAX and TensorFlow)."""

    def __init__(self, w: Weights, name: str, dim: int, eps: float = 1e-5):
        super().__init__()
        scale, shift = w.norm(name, dim)
        self.weight, self.bias, self.eps = _p(scale), _p(shift), eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        centered = x - mean
        variance = (centered * centered).mean(-1, keepdim=True)
        return centered * torch.rsqrt(variance + self.eps) * self.weight + self.bias


class Mlp(torch.nn.Module):
    def __init__(self, w: Weights, sizes):
        super().__init__()
        self.layers = torch.nn.ModuleList(Dense(w, f"fc{i}", a, b) for i, (a, b) in enumerate(zip(sizes, sizes[1:])))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = torch.relu(x)
        return x


class Cnn(torch.nn.Module):
    def __init__(self, w: Weights, image, channels, classes):
        super().__init__()
        c0, c1, c2 = channels
        self.w1, self.b1 = map(_p, w.conv("conv1", c0, c1, 3))
        self.w2, self.b2 = map(_p, w.conv("conv2", c1, c2, 3))
        self.fc = Dense(w, "fc", c2 * (image // 4) ** 2, classes)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(F.conv2d(x, self.w1, self.b1, padding=1)), 2)
        x = F.max_pool2d(torch.relu(F.conv2d(x, self.w2, self.b2, padding=1)), 2)
        return self.fc(x.flatten(1))


class Attention(torch.nn.Module):
    def __init__(self, w: Weights, name: str, dim: int, heads: int, causal: bool = False):
        super().__init__()
        self.q, self.k, self.v = (Dense(w, f"{name}.{p}", dim, dim) for p in "qkv")
        self.out = Dense(w, f"{name}.out", dim, dim)
        self.heads, self.causal = heads, causal

    def forward(self, x):
        b, s, d = x.shape
        split = lambda t: t.view(b, s, self.heads, d // self.heads).transpose(1, 2)
        a = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)), split(self.v(x)), is_causal=self.causal)
        return self.out(a.transpose(1, 2).reshape(b, s, d))


class TransformerBlock(torch.nn.Module):
    """Pre-norm block: x + attn(norm(x)), then + mlp(norm(.)) with GELU."""

    def __init__(self, w: Weights, name: str, dim: int, heads: int, hidden: int, causal: bool = False):
        super().__init__()
        self.norm1 = Norm(w, f"{name}.norm1", dim)
        self.attn = Attention(w, f"{name}.attn", dim, heads, causal)
        self.norm2 = Norm(w, f"{name}.norm2", dim)
        self.fc1 = Dense(w, f"{name}.fc1", dim, hidden)
        self.fc2 = Dense(w, f"{name}.fc2", hidden, dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class LayerNormGelu(torch.nn.Module):
    def __init__(self, w: Weights, dim: int, hidden: int):
        super().__init__()
        self.norm = Norm(w, "norm", dim)
        self.fc = Dense(w, "fc", dim, hidden)

    def forward(self, x):
        return F.gelu(self.fc(self.norm(x)), approximate="tanh")


class AutoEncoder(torch.nn.Module):
    def __init__(self, w: Weights, data: int, hidden: int, latent: int):
        super().__init__()
        self.enc1, self.enc2 = Dense(w, "enc1", data, hidden), Dense(w, "enc2", hidden, latent)
        self.dec1, self.dec2 = Dense(w, "dec1", latent, hidden), Dense(w, "dec2", hidden, data)

    def forward(self, x):
        z = self.enc2(torch.relu(self.enc1(x)))
        return torch.sigmoid(self.dec2(torch.relu(self.dec1(z))))


class Vae(torch.nn.Module):
    """Encoder to (mu, logvar); z = mu + exp(logvar / 2) * eps with eps an input."""

    def __init__(self, w: Weights, data: int, hidden: int, latent: int):
        super().__init__()
        self.enc = Dense(w, "enc", data, hidden)
        self.mu, self.logvar = Dense(w, "mu", hidden, latent), Dense(w, "logvar", hidden, latent)
        self.dec1, self.dec2 = Dense(w, "dec1", latent, hidden), Dense(w, "dec2", hidden, data)

    def forward(self, x, eps):
        h = torch.relu(self.enc(x))
        z = self.mu(h) + torch.exp(0.5 * self.logvar(h)) * eps
        return torch.sigmoid(self.dec2(torch.relu(self.dec1(z))))


class GanGenerator(torch.nn.Module):
    def __init__(self, w: Weights, data: int, hidden: int, latent: int):
        super().__init__()
        self.fc1, self.fc2 = Dense(w, "fc1", latent, hidden), Dense(w, "fc2", hidden, data)

    def forward(self, z):
        return torch.tanh(self.fc2(F.leaky_relu(self.fc1(z), 0.2)))


class DiffusionMlp(torch.nn.Module):
    """Noise predictor: sinusoidal embedding of the time step, concatenated with x."""

    def __init__(self, w: Weights, data: int, freqs: int, hidden: int):
        super().__init__()
        self.register_buffer("freqs", torch.exp(-math.log(1000.0) * torch.arange(freqs, dtype=torch.float32) / freqs))
        self.fc1 = Dense(w, "fc1", data + 2 * freqs, hidden)
        self.fc2 = Dense(w, "fc2", hidden, hidden)
        self.fc3 = Dense(w, "fc3", hidden, data)

    def forward(self, x, t):
        angles = t[:, None] * self.freqs[None, :]
        h = torch.cat([x, torch.sin(angles), torch.cos(angles)], dim=-1)
        h = F.gelu(self.fc1(h))
        return self.fc3(F.gelu(self.fc2(h)))


def build(model: str, size: str = "tiny"):
    """(module, make_inputs(batch) -> tuple of tensors) for a zoo model."""
    c, w = config(model, size), Weights(model)
    rng = np.random.default_rng(7)
    f32 = lambda *shape: torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    if model == "mlp":
        return Mlp(w, c["sizes"]), lambda b: (f32(b, c["sizes"][0]),)
    if model == "cnn":
        return Cnn(w, c["image"], c["channels"], c["classes"]), lambda b: (f32(b, c["channels"][0], c["image"], c["image"]),)
    if model == "transformer_block":
        return TransformerBlock(w, "block", c["dim"], c["heads"], c["hidden"]), lambda b: (f32(b, c["seq"], c["dim"]),)
    if model == "layernorm_gelu":
        return LayerNormGelu(w, c["dim"], c["hidden"]), lambda b: (f32(b, c["seq"], c["dim"]),)
    if model == "autoencoder":
        return AutoEncoder(w, c["data"], c["hidden"], c["latent"]), lambda b: (f32(b, c["data"]),)
    if model == "vae":
        return Vae(w, c["data"], c["hidden"], c["latent"]), lambda b: (f32(b, c["data"]), f32(b, c["latent"]))
    if model == "gan_generator":
        return GanGenerator(w, c["data"], c["hidden"], c["latent"]), lambda b: (f32(b, c["latent"]),)
    if model == "diffusion_mlp":
        return (DiffusionMlp(w, c["data"], c["freqs"], c["hidden"]),
                lambda b: (f32(b, c["data"]), torch.from_numpy(rng.uniform(0, 1000, b).astype(np.float32))))
    raise KeyError(f"zoo model '{model}' has no PyTorch definition yet (defined: {', '.join(MODELS_DONE)})")


MODELS_DONE = ("mlp", "cnn", "transformer_block", "layernorm_gelu", "autoencoder", "vae", "gan_generator", "diffusion_mlp")
