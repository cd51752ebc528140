"""Zoo models in PyTorch, on the shared seeded weights (zoo/weights.py).

`build(model, size)` returns the nn.Module and a function making example
inputs for a batch size. Parameters are requested from `Weights` in a fixed
order, which the JAX and TensorFlow definitions repeat. Token models take
int32 ids.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from .configs import config
from .inputs import example_inputs
from .weights import Weights, timestep_frequencies


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
        self.register_buffer("freqs", torch.from_numpy(timestep_frequencies(freqs)))
        self.fc1 = Dense(w, "fc1", data + 2 * freqs, hidden)
        self.fc2 = Dense(w, "fc2", hidden, hidden)
        self.fc3 = Dense(w, "fc3", hidden, data)

    def forward(self, x, t):
        angles = t[:, None] * self.freqs[None, :]
        h = torch.cat([x, torch.sin(angles), torch.cos(angles)], dim=-1)
        h = F.gelu(self.fc1(h))
        return self.fc3(F.gelu(self.fc2(h)))


class Vit(torch.nn.Module):
    """Patches by a strided convolution, learned positions, pre-norm blocks,
    final norm, mean over tokens, linear head."""

    def __init__(self, w: Weights, image, channels, patch, dim, layers, heads, hidden, classes):
        super().__init__()
        self.patch = patch
        self.patch_w, self.patch_b = map(_p, w.conv("patch", channels, dim, patch))
        self.pos = _p(w.tensor("pos", ((image // patch) ** 2, dim), 0.1))
        self.blocks = torch.nn.ModuleList(TransformerBlock(w, f"block{i}", dim, heads, hidden) for i in range(layers))
        self.norm = Norm(w, "norm", dim)
        self.head = Dense(w, "head", dim, classes)

    def forward(self, x):
        x = F.conv2d(x, self.patch_w, self.patch_b, stride=self.patch)
        x = x.flatten(2).transpose(1, 2) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x).mean(1))


class TokenTransformer(torch.nn.Module):
    """Token and position embeddings, pre-norm blocks, final norm; with `vocab_head`
    (tiny_gpt: causal) a linear head to vocabulary logits."""

    def __init__(self, w: Weights, vocab, seq, dim, layers, heads, hidden, causal: bool):
        super().__init__()
        self.tokens = _p(w.embedding("tokens", vocab, dim))
        self.pos = _p(w.tensor("pos", (seq, dim), 0.1))
        self.blocks = torch.nn.ModuleList(TransformerBlock(w, f"block{i}", dim, heads, hidden, causal) for i in range(layers))
        self.norm = Norm(w, "norm", dim)
        self.head = Dense(w, "head", dim, vocab) if causal else None

    def forward(self, ids):
        x = F.embedding(ids, self.tokens) + self.pos
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        return self.head(x) if self.head is not None else x


class Recurrent(torch.nn.Module):
    """nn.RNN (tanh) or nn.LSTM over the sequence, batch first; returns every step's output.
    torch.export unrolls it."""

    def __init__(self, w: Weights, kind: str, inputs: int, hidden: int):
        super().__init__()
        cls, gates = {"rnn": (torch.nn.RNN, 1), "lstm": (torch.nn.LSTM, 4)}[kind]
        self.cell = cls(inputs, hidden, batch_first=True)
        w_ih, w_hh, b_ih, b_hh = w.recurrent(kind, inputs, hidden, gates)
        with torch.no_grad():
            for name, array in (("weight_ih_l0", w_ih), ("weight_hh_l0", w_hh), ("bias_ih_l0", b_ih), ("bias_hh_l0", b_hh)):
                getattr(self.cell, name).copy_(torch.from_numpy(array))
        self.cell.requires_grad_(False)

    def forward(self, x):
        return self.cell(x)[0]


class Ssm(torch.nn.Module):
    """Diagonal linear state-space layer: u = x B^T, h_t = a * h_{t-1} + u_t from
    h_0 = 0 (a Python loop over the steps), y = h C^T + x * D."""

    def __init__(self, w: Weights, inputs: int, hidden: int):
        super().__init__()
        self.decay = _p(w.decay("A", hidden))
        self.b = _p(w.tensor("B", (hidden, inputs), 1.0 / math.sqrt(inputs)))
        self.c = _p(w.tensor("C", (inputs, hidden), 1.0 / math.sqrt(hidden)))
        self.d = _p(w.tensor("D", (inputs,)))

    def forward(self, x):
        u = x @ self.b.T
        h = torch.zeros(x.shape[0], 1, u.shape[2])
        states = []
        for t in range(x.shape[1]):
            h = self.decay * h + u[:, t:t + 1]
            states.append(h)
        return torch.cat(states, 1) @ self.c.T + x * self.d


class UNet(torch.nn.Module):
    """One level: conv-relu (skip), max pool, conv-relu, nearest upsample x2,
    concat with the skip, conv-relu, 1x1 conv back to the input channels."""

    def __init__(self, w: Weights, in_channels, channels):
        super().__init__()
        c0, c1 = channels
        self.enc1 = tuple(map(_p, w.conv("enc1", in_channels, c0, 3)))
        self.enc2 = tuple(map(_p, w.conv("enc2", c0, c1, 3)))
        self.dec = tuple(map(_p, w.conv("dec", c1 + c0, c0, 3)))
        self.out = tuple(map(_p, w.conv("out", c0, in_channels, 1)))
        for i, t in enumerate(self.enc1 + self.enc2 + self.dec + self.out):
            self.register_parameter(f"p{i}", t)

    def forward(self, x):
        skip = torch.relu(F.conv2d(x, *self.enc1, padding=1))
        h = torch.relu(F.conv2d(F.max_pool2d(skip, 2), *self.enc2, padding=1))
        h = torch.cat([F.interpolate(h, scale_factor=2, mode="nearest"), skip], 1)
        return F.conv2d(torch.relu(F.conv2d(h, *self.dec, padding=1)), *self.out)


class Gcn(torch.nn.Module):
    """Two graph convolutions on a fixed normalised adjacency: relu(A x W1 + b1), A h W2 + b2."""

    def __init__(self, w: Weights, nodes, features, hidden, classes):
        super().__init__()
        self.register_buffer("adjacency", torch.from_numpy(w.adjacency("adjacency", nodes)))
        self.w1, self.b1 = map(_p, w.linear("gc1", features, hidden))
        self.w2, self.b2 = map(_p, w.linear("gc2", hidden, classes))

    def forward(self, x):
        h = torch.relu(self.adjacency @ (x @ self.w1.T) + self.b1)
        return self.adjacency @ (h @ self.w2.T) + self.b2


class TwoTower(torch.nn.Module):
    """User and item towers (dense-relu-dense) to embeddings; score = their dot product."""

    def __init__(self, w: Weights, user, item, embed):
        super().__init__()
        self.user1, self.user2 = Dense(w, "user1", user, embed), Dense(w, "user2", embed, embed)
        self.item1, self.item2 = Dense(w, "item1", item, embed), Dense(w, "item2", embed, embed)

    def forward(self, user, item):
        u = self.user2(torch.relu(self.user1(user)))
        v = self.item2(torch.relu(self.item1(item)))
        return (u * v).sum(-1)


def _unit(x):
    """Rows scaled to unit length."""
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True))


class Clip(torch.nn.Module):
    """Image tower (conv-relu, global mean, dense) and text tower (embedding, mean over
    tokens, dense) to unit embeddings; logits = 10 * images @ texts^T, [batch, batch]."""

    def __init__(self, w: Weights, image, channels, vocab, seq, embed):
        super().__init__()
        self.conv_w, self.conv_b = map(_p, w.conv("conv", channels, 2 * embed, 3))
        self.image_proj = Dense(w, "image_proj", 2 * embed, embed)
        self.tokens = _p(w.embedding("tokens", vocab, embed))
        self.text_proj = Dense(w, "text_proj", embed, embed)

    def forward(self, image, ids):
        i = torch.relu(F.conv2d(image, self.conv_w, self.conv_b, padding=1)).mean((2, 3))
        i = _unit(self.image_proj(i))
        t = _unit(self.text_proj(F.embedding(ids, self.tokens).mean(1)))
        return 10.0 * (i @ t.T)


class Moe(torch.nn.Module):
    """Mixture of experts with a residual: softmax router, top-k gates renormalised,
    every expert (dense-gelu-dense) computed and weighted by its gate (0 if not chosen)."""

    def __init__(self, w: Weights, dim, experts, top):
        super().__init__()
        self.router = Dense(w, "router", dim, experts)
        self.up = torch.nn.ModuleList(Dense(w, f"expert{e}.up", dim, 2 * dim) for e in range(experts))
        self.down = torch.nn.ModuleList(Dense(w, f"expert{e}.down", 2 * dim, dim) for e in range(experts))
        self.experts, self.top = experts, top

    def forward(self, x):
        values, indices = torch.topk(torch.softmax(self.router(x), -1), self.top)
        values = values / values.sum(-1, keepdim=True)
        chosen = (indices[..., None] == torch.arange(self.experts)).to(x.dtype)  # [..., top, experts]
        gates = (values[..., None] * chosen).sum(-2)                              # [..., experts]
        outs = torch.stack([down(F.gelu(up(x))) for up, down in zip(self.up, self.down)], -2)
        return x + (gates[..., None] * outs).sum(-2)


def build(model: str, size: str = "tiny"):
    """(module, make_inputs(batch) -> tuple of tensors) for a zoo model."""
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
    return constructors[model](), lambda batch: tuple(torch.from_numpy(a) for a in example_inputs(model, batch, size))
