"""Architectures as their libraries write them, for the real-architecture tier.

Each entry builds a model in its framework and says how to make inputs for a
batch size. Where the library installs from PyPI beside the pinned frameworks
it is used itself: Hugging Face `transformers` (BERT, GPT-2, ViT, Wav2Vec2,
built from small configs with random weights, no hub), `keras.applications`
(MobileNetV2, ResNet50, EfficientNetB0) and Flax `linen` (its layers). torchvision
does not install beside the pinned torch here (its wheel needs torch 2.14), so
its ResNet, MobileNetV2 and SqueezeNet are written here block for block the
way torchvision writes them (same layers, same order, same hyper-parameters;
the widths are smaller to keep the tier fast).

Weights are random but seeded; every batch-norm layer gets non-trivial running
statistics so that folding it is tested on real numbers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from torch import nn

SEED = 0


@dataclass(frozen=True)
class Architecture:
    name: str
    framework: str                          # torch, jax or tf
    library: str                            # where the definition comes from
    build: Callable[[], object]             # torch module / (fn, params) / Keras model
    inputs: Callable[[int], tuple]          # batch -> NumPy inputs
    slow: bool = False                      # opt-in only (RML_REAL_ARCH_SLOW=1)


def image(channels: int, size: int, layout: str = "nchw"):
    def make(batch: int) -> tuple:
        rng = np.random.default_rng(100 + batch)
        shape = (batch, channels, size, size) if layout == "nchw" else (batch, size, size, channels)
        return (rng.standard_normal(shape).astype(np.float32),)
    return make


def tokens(vocab: int, length: int):
    def make(batch: int) -> tuple:
        rng = np.random.default_rng(200 + batch)
        return (rng.integers(0, vocab, (batch, length)).astype(np.int64),)
    return make


def signal(length: int):
    def make(batch: int) -> tuple:
        rng = np.random.default_rng(300 + batch)
        return (rng.standard_normal((batch, length)).astype(np.float32),)
    return make


def sequence(length: int, features: int):
    def make(batch: int) -> tuple:
        rng = np.random.default_rng(400 + batch)
        return (rng.standard_normal((batch, length, features)).astype(np.float32),)
    return make


def torch_eval(module: nn.Module) -> nn.Module:
    """Seeded random weights, with batch-norm statistics away from (0, 1)."""
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.num_features, generator=generator) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=generator) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(m.num_features, generator=generator) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(m.num_features, generator=generator) * 0.1)
    return module.eval()


# --- torchvision, written block for block -------------------------------------------------------
def conv3x3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(cin, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = conv3x3(planes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, block, layers, widths=(16, 32, 64, 128), num_classes=10):
        super().__init__()
        self.inplanes = widths[0]
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, widths[0], layers[0])
        self.layer2 = self._make_layer(block, widths[1], layers[1], stride=2)
        self.layer3 = self._make_layer(block, widths[2], layers[2], stride=2)
        self.layer4 = self._make_layer(block, widths[3], layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[3] * block.expansion, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def _make_divisible(v, divisor=8):
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class Conv2dNormActivation(nn.Sequential):
    def __init__(self, cin, cout, kernel_size=3, stride=1, groups=1):
        super().__init__(nn.Conv2d(cin, cout, kernel_size, stride, (kernel_size - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = [Conv2dNormActivation(inp, hidden_dim, kernel_size=1)] if expand_ratio != 1 else []
        layers += [Conv2dNormActivation(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),
                   nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes=10, width_mult=0.35):
        super().__init__()
        settings = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
                    [6, 320, 1, 1]]
        input_channel = _make_divisible(32 * width_mult)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult))
        features = [Conv2dNormActivation(3, input_channel, stride=2)]
        for t, c, n, s in settings:
            output_channel = _make_divisible(c * width_mult)
            for i in range(n):
                features.append(InvertedResidual(input_channel, output_channel, s if i == 0 else 1, t))
                input_channel = output_channel
        features.append(Conv2dNormActivation(input_channel, self.last_channel, kernel_size=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=0.2), nn.Linear(self.last_channel, num_classes))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


class Fire(nn.Module):
    def __init__(self, inplanes, squeeze, expand1x1, expand3x3):
        super().__init__()
        self.squeeze = nn.Conv2d(inplanes, squeeze, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze, expand1x1, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze, expand3x3, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.squeeze_activation(self.squeeze(x))
        return torch.cat([self.expand1x1_activation(self.expand1x1(x)),
                          self.expand3x3_activation(self.expand3x3(x))], 1)


class SqueezeNet(nn.Module):
    """torchvision's SqueezeNet 1.1 at a quarter of its widths."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, stride=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
            Fire(16, 4, 16, 16), Fire(32, 4, 16, 16),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
            Fire(32, 8, 32, 32), Fire(64, 8, 32, 32),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
            Fire(64, 12, 48, 48), Fire(96, 12, 48, 48), Fire(96, 16, 64, 64), Fire(128, 16, 64, 64))
        self.classifier = nn.Sequential(nn.Dropout(p=0.5), nn.Conv2d(128, num_classes, kernel_size=1),
                                        nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


class LSTMClassifier(nn.Module):
    """The text classifier of the PyTorch tutorials: embedding, a two-layer LSTM, the last step."""

    def __init__(self, vocab=100, embed=32, hidden=48, classes=5):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=2, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, ids):
        out, _ = self.lstm(self.embedding(ids))
        return self.fc(out[:, -1, :])


class TemporalConvNet(nn.Module):
    """A TCN (Bai et al.) block stack: dilated causal Conv1d, chomp, ReLU, residual 1x1."""

    def __init__(self, channels=(8, 16, 16), cin=4, kernel=3):
        super().__init__()
        blocks, previous = [], cin
        for i, c in enumerate(channels):
            d = 2 ** i
            blocks.append(nn.ModuleDict({
                "conv1": nn.Conv1d(previous, c, kernel, padding=(kernel - 1) * d, dilation=d),
                "conv2": nn.Conv1d(c, c, kernel, padding=(kernel - 1) * d, dilation=d),
                "down": nn.Conv1d(previous, c, 1) if previous != c else nn.Identity()}))
            previous = c
        self.blocks = nn.ModuleList(blocks)
        self.chomp = (kernel - 1)

    def forward(self, x):  # (N, L, C) -> (N, C, L)
        x = x.transpose(1, 2)
        for i, b in enumerate(self.blocks):
            cut = self.chomp * 2 ** i
            h = torch.relu(b["conv1"](x)[:, :, :-cut])
            h = torch.relu(b["conv2"](h)[:, :, :-cut])
            x = torch.relu(h + b["down"](x))
        return x


# --- Hugging Face transformers ------------------------------------------------------------------
def hf(model_class: str, config_class: str, **config):
    def build():
        import transformers
        torch.manual_seed(SEED)
        cfg = getattr(transformers, config_class)(**config)
        cfg._attn_implementation = "eager"
        model = getattr(transformers, model_class)(cfg).eval()
        return HFOutput(model)
    return build


class HFOutput(nn.Module):
    """The model's first output (last hidden state or logits) as one tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x, return_dict=False)[0]


SMALL_TEXT = dict(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)


def torch_architectures() -> list[Architecture]:
    tv = "torchvision (written here block for block)"
    return [
        Architecture("resnet18", "torch", tv, lambda: torch_eval(ResNet(BasicBlock, [2, 2, 2, 2])), image(3, 64)),
        Architecture("resnet50", "torch", tv, lambda: torch_eval(ResNet(Bottleneck, [3, 4, 6, 3], (8, 16, 32, 64))),
                     image(3, 64)),
        Architecture("mobilenet_v2", "torch", tv, lambda: torch_eval(MobileNetV2()), image(3, 64)),
        Architecture("squeezenet1_1", "torch", tv, lambda: torch_eval(SqueezeNet()), image(3, 64)),
        Architecture("lstm_classifier", "torch", "torch.nn (PyTorch tutorial)", lambda: LSTMClassifier().eval(),
                     tokens(100, 12)),
        Architecture("tcn", "torch", "torch.nn (Bai et al. TCN)", lambda: TemporalConvNet().eval(), sequence(32, 4)),
        Architecture("bert", "torch", "transformers BertModel",
                     hf("BertModel", "BertConfig", max_position_embeddings=64, **SMALL_TEXT), tokens(120, 16)),
        Architecture("gpt2", "torch", "transformers GPT2LMHeadModel",
                     hf("GPT2LMHeadModel", "GPT2Config", vocab_size=120, n_embd=32, n_layer=2, n_head=4,
                        n_positions=64), tokens(120, 16)),
        Architecture("vit", "torch", "transformers ViTModel",
                     hf("ViTModel", "ViTConfig", image_size=32, patch_size=8, num_channels=3, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4, intermediate_size=64), image(3, 32)),
        Architecture("wav2vec2", "torch", "transformers Wav2Vec2Model",
                     hf("Wav2Vec2Model", "Wav2Vec2Config", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, conv_dim=(16, 16, 16), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
                        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, do_stable_layer_norm=False,
                        feat_extract_norm="group"), signal(400)),
    ]


# --- Flax linen -------------------------------------------------------------------------------
def flax_model(make_module, example):
    def build():
        import jax
        module = make_module()
        variables = module.init(jax.random.PRNGKey(SEED), example(1)[0])
        variables = jax.tree_util.tree_map(lambda v: v, variables)
        if "batch_stats" in variables:
            key = iter(jax.random.split(jax.random.PRNGKey(SEED + 1), 1000))
            stats = jax.tree_util.tree_map_with_path(
                lambda path, v: (jax.random.uniform(next(key), v.shape) * 0.5 + 0.75) if "var" in str(path[-1])
                else jax.random.normal(next(key), v.shape) * 0.1, variables["batch_stats"])
            variables = {**variables, "batch_stats": stats}

        def fn(params, x):
            return module.apply(params, x)
        return fn, variables
    return build


def flax_modules():
    import flax.linen as fnn

    class CNN(fnn.Module):
        """The Flax MNIST example's CNN, with batch norm as in its ResNet examples."""

        @fnn.compact
        def __call__(self, x):
            x = fnn.Conv(features=16, kernel_size=(3, 3))(x)
            x = fnn.BatchNorm(use_running_average=True)(x)
            x = fnn.relu(x)
            x = fnn.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
            x = fnn.Conv(features=32, kernel_size=(3, 3), strides=(2, 2))(x)
            x = fnn.relu(x)
            x = fnn.max_pool(x, window_shape=(2, 2), strides=(2, 2), padding="SAME")
            x = x.reshape((x.shape[0], -1))
            x = fnn.relu(fnn.Dense(features=64)(x))
            return fnn.Dense(features=10)(x)

    class EncoderBlock(fnn.Module):
        """A pre-norm transformer encoder of the Flax examples (lm1b / wmt style)."""

        @fnn.compact
        def __call__(self, ids):
            x = fnn.Embed(num_embeddings=100, features=32)(ids)
            positions = self.param("pos", fnn.initializers.normal(0.02), (1, ids.shape[1], 32))
            x = x + positions
            for _ in range(2):
                h = fnn.LayerNorm()(x)
                h = fnn.MultiHeadDotProductAttention(num_heads=4, qkv_features=32)(h, h)
                x = x + h
                h = fnn.LayerNorm()(x)
                h = fnn.Dense(64)(h)
                h = fnn.gelu(h)
                x = x + fnn.Dense(32)(h)
            return fnn.LayerNorm()(x)

    class SequenceGRU(fnn.Module):
        """A GRU over the time axis with flax's RNN wrapper, the last step classified."""

        @fnn.compact
        def __call__(self, x):
            h = fnn.RNN(fnn.GRUCell(features=24))(x)
            return fnn.Dense(5)(h[:, -1])

    return CNN, EncoderBlock, SequenceGRU


def jax_architectures() -> list[Architecture]:
    def lazily(index):
        return lambda: flax_modules()[index]()
    return [
        Architecture("flax_cnn", "jax", "flax.linen (MNIST example)",
                     flax_model(lazily(0), image(3, 28, "nhwc")), image(3, 28, "nhwc")),
        Architecture("flax_encoder", "jax", "flax.linen (MultiHeadDotProductAttention)",
                     flax_model(lazily(1), tokens(100, 16)), tokens(100, 16)),
        Architecture("flax_gru", "jax", "flax.linen (RNN, GRUCell)",
                     flax_model(lazily(2), sequence(10, 6)), sequence(10, 6)),
    ]


# --- Keras applications and layers -------------------------------------------------------------
def keras_model(make):
    def build():
        import keras
        keras.utils.set_random_seed(SEED)
        model = make(keras)
        for layer in model.layers:  # running statistics away from (0, 1)
            if isinstance(layer, keras.layers.BatchNormalization):
                rng = np.random.default_rng(SEED)
                n = layer.moving_mean.shape[0]
                layer.moving_mean.assign(rng.standard_normal(n).astype(np.float32) * 0.1)
                layer.moving_variance.assign(rng.random(n).astype(np.float32) * 0.5 + 0.75)
        return model
    return build


def keras_architectures() -> list[Architecture]:
    apps = "keras.applications"
    return [
        Architecture("keras_mobilenet_v2", "tf", apps, keras_model(
            lambda k: k.applications.MobileNetV2(input_shape=(64, 64, 3), alpha=0.35, weights=None, classes=10)),
            image(3, 64, "nhwc")),
        Architecture("keras_efficientnet_b0", "tf", apps, keras_model(
            lambda k: k.applications.EfficientNetB0(input_shape=(64, 64, 3), weights=None, classes=10)),
            image(3, 64, "nhwc"), slow=True),
        Architecture("keras_resnet50", "tf", apps, keras_model(
            lambda k: k.applications.ResNet50(input_shape=(64, 64, 3), weights=None, classes=10)),
            image(3, 64, "nhwc"), slow=True),
        Architecture("keras_text_lstm", "tf", "keras.layers (Embedding, LSTM, Conv1D)", keras_model(
            lambda k: k.Sequential([k.Input((16,), dtype="int32"), k.layers.Embedding(100, 24),
                                    k.layers.Conv1D(24, 3, padding="same", activation="relu"),
                                    k.layers.LSTM(32), k.layers.Dense(5, activation="softmax")])),
            lambda batch: tuple(x.astype(np.int32) for x in tokens(100, 16)(batch))),
    ]


def architectures() -> list[Architecture]:
    return torch_architectures() + jax_architectures() + keras_architectures()
