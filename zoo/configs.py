"""The 19 zoo models and their tiny (fixture) and bench (timed) sizes.

Every framework's definition reads its sizes from here, so PyTorch, JAX and
TensorFlow build the same function. The sizes follow the specification's
model table; where it leaves a size open (heads, MLP widths, kernel sizes),
the choice is written here once.
"""

from pathlib import Path

# The 19 models, in order (a model's index seeds its weights). models.txt is the
# one list: the C++ fixture tests read it too.
MODELS = tuple(Path(__file__).with_name("models.txt").read_text().split())

# Models whose only input is int32 token ids (clip takes an image and token ids).
TOKEN_MODELS = ("encoder", "tiny_gpt")

CONFIGS = {
    "mlp": {
        "tiny": {"sizes": (12, 16, 16, 4)},
        "bench": {"sizes": (784, 512, 256, 10)},
    },
    "cnn": {
        "tiny": {"image": 8, "channels": (1, 3, 4), "classes": 5},
        "bench": {"image": 28, "channels": (1, 16, 32), "classes": 10},
    },
    "transformer_block": {
        "tiny": {"seq": 5, "dim": 8, "heads": 2, "hidden": 16},
        "bench": {"seq": 64, "dim": 256, "heads": 4, "hidden": 1024},
    },
    "layernorm_gelu": {
        "tiny": {"seq": 3, "dim": 8, "hidden": 12},
        "bench": {"seq": 64, "dim": 512, "hidden": 2048},
    },
    "vit": {
        "tiny": {"image": 8, "channels": 1, "patch": 4, "dim": 8, "layers": 2, "heads": 2, "hidden": 16, "classes": 5},
        "bench": {"image": 32, "channels": 3, "patch": 4, "dim": 192, "layers": 4, "heads": 4, "hidden": 768, "classes": 10},
    },
    "encoder": {
        "tiny": {"vocab": 11, "seq": 5, "dim": 8, "layers": 2, "heads": 2, "hidden": 16},
        "bench": {"vocab": 1024, "seq": 64, "dim": 256, "layers": 4, "heads": 4, "hidden": 1024},
    },
    "tiny_gpt": {
        "tiny": {"vocab": 11, "seq": 5, "dim": 8, "layers": 2, "heads": 2, "hidden": 16},
        "bench": {"vocab": 1024, "seq": 64, "dim": 256, "layers": 4, "heads": 4, "hidden": 1024},
    },
    "rnn": {
        "tiny": {"seq": 5, "input": 3, "hidden": 4},
        "bench": {"seq": 64, "input": 64, "hidden": 256},
    },
    "lstm": {
        "tiny": {"seq": 5, "input": 3, "hidden": 4},
        "bench": {"seq": 64, "input": 64, "hidden": 256},
    },
    "ssm": {
        "tiny": {"seq": 5, "input": 3, "hidden": 4},
        "bench": {"seq": 256, "input": 64, "hidden": 256},
    },
    "autoencoder": {
        "tiny": {"data": 12, "hidden": 8, "latent": 2},
        "bench": {"data": 784, "hidden": 512, "latent": 32},
    },
    "vae": {
        "tiny": {"data": 12, "hidden": 8, "latent": 2},
        "bench": {"data": 784, "hidden": 512, "latent": 32},
    },
    "gan_generator": {
        "tiny": {"data": 12, "hidden": 8, "latent": 3},
        "bench": {"data": 784, "hidden": 512, "latent": 64},
    },
    "diffusion_mlp": {
        "tiny": {"data": 2, "freqs": 4, "hidden": 8},
        "bench": {"data": 64, "freqs": 64, "hidden": 512},
    },
    "unet": {
        "tiny": {"image": 8, "in_channels": 1, "channels": (2, 4)},
        "bench": {"image": 32, "in_channels": 3, "channels": (32, 64)},
    },
    "gcn": {
        "tiny": {"nodes": 6, "features": 3, "hidden": 4, "classes": 2},
        "bench": {"nodes": 256, "features": 64, "hidden": 128, "classes": 8},
    },
    "two_tower": {
        "tiny": {"user": 5, "item": 4, "embed": 3},
        "bench": {"user": 128, "item": 128, "embed": 64},
    },
    "clip": {
        "tiny": {"image": 8, "channels": 2, "vocab": 11, "seq": 4, "embed": 4},
        "bench": {"image": 28, "channels": 16, "vocab": 1024, "seq": 16, "embed": 64},
    },
    "moe": {
        "tiny": {"seq": 3, "dim": 4, "experts": 4, "top": 2},
        "bench": {"seq": 64, "dim": 256, "experts": 8, "top": 2},
    },
}


def config(model: str, size: str = "tiny") -> dict:
    """The sizes of `model` at `size` ("tiny" or "bench")."""
    if model not in CONFIGS:
        raise KeyError(f"unknown zoo model '{model}' (known: {', '.join(MODELS)})")
    if size not in CONFIGS[model]:
        raise KeyError(f"unknown size '{size}' (tiny or bench)")
    return dict(CONFIGS[model][size])


def seed(model: str) -> int:
    """Every model's weights come from a generator seeded with 1234 + its index."""
    return 1234 + MODELS.index(model)
