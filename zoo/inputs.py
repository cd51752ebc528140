"""Example inputs of the zoo models, as NumPy arrays that every framework shares.

`example_inputs(model, batch)` draws from a generator seeded with 7 on every
call, so the same (model, batch, size) always gives the same arrays, and the
PyTorch, JAX and TensorFlow definitions are fed identical values. Images are
NCHW (the TensorFlow definitions transpose to NHWC inside); token ids are int32.
"""
import numpy as np

from .configs import config

INPUT_SEED = 7


def input_specs(model: str, c: dict, batch: int) -> list[tuple]:
    """(kind, shape[, vocab]) per input; kind is normal (standard normal f32),
    tokens (int32 ids below vocab) or time (diffusion steps uniform in [0, 1000))."""
    if model == "mlp":
        return [("normal", (batch, c["sizes"][0]))]
    if model in ("cnn", "vit", "unet"):
        channels = {"cnn": lambda: c["channels"][0], "vit": lambda: c["channels"], "unet": lambda: c["in_channels"]}[model]()
        return [("normal", (batch, channels, c["image"], c["image"]))]
    if model in ("transformer_block", "layernorm_gelu", "moe"):
        return [("normal", (batch, c["seq"], c["dim"]))]
    if model in ("encoder", "tiny_gpt"):
        return [("tokens", (batch, c["seq"]), c["vocab"])]
    if model in ("rnn", "lstm", "ssm"):
        return [("normal", (batch, c["seq"], c["input"]))]
    if model == "autoencoder":
        return [("normal", (batch, c["data"]))]
    if model == "vae":
        return [("normal", (batch, c["data"])), ("normal", (batch, c["latent"]))]
    if model == "gan_generator":
        return [("normal", (batch, c["latent"]))]
    if model == "diffusion_mlp":
        return [("normal", (batch, c["data"])), ("time", (batch,))]
    if model == "gcn":
        return [("normal", (batch, c["nodes"], c["features"]))]
    if model == "two_tower":
        return [("normal", (batch, c["user"])), ("normal", (batch, c["item"]))]
    if model == "clip":
        return [("normal", (batch, c["channels"], c["image"], c["image"])), ("tokens", (batch, c["seq"]), c["vocab"])]
    raise KeyError(f"zoo model '{model}' has no inputs defined")


def example_inputs(model: str, batch: int, size: str = "tiny") -> tuple[np.ndarray, ...]:
    """The inputs of `model` at `size` for a batch of `batch`, in call order."""
    c = config(model, size)
    rng = np.random.default_rng(INPUT_SEED)
    arrays = []
    for spec in input_specs(model, c, batch):
        kind, shape = spec[0], spec[1]
        if kind == "normal":
            arrays.append(rng.standard_normal(shape).astype(np.float32))
        elif kind == "tokens":
            arrays.append(rng.integers(0, spec[2], shape, dtype=np.int32))
        else:  # diffusion time steps
            arrays.append(rng.uniform(0, 1000, shape).astype(np.float32))
    return tuple(arrays)
