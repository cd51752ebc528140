"""The PyTorch direct exporter: one test per ATen lowering, errors by name,
and models beyond the zoo."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import rml
from rml.from_torch import export

torch.manual_seed(0)


def check(module, *inputs, tmp_path=None):
    """Exports, evaluates (reference kernels) and runs (executor) against torch."""
    module = module.eval()
    with torch.no_grad():
        expected = module(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    names = [f"input.{i}" for i in range(len(inputs))]
    builder = export(module, inputs, input_names=names)
    feeds = {name: t.numpy() for name, t in zip(names, inputs)}
    got = builder.evaluate(feeds)
    names = ["output"] if len(expected) == 1 else [f"output.{i}" for i in range(len(expected))]
    for name, want in zip(names, expected):
        np.testing.assert_allclose(got[name], want.numpy().astype(got[name].dtype), atol=1e-5, rtol=1e-4)
    if tmp_path is not None:
        builder.write(str(tmp_path / "m.json"))
        model = rml.load(str(tmp_path / "m.json"))
        for fuse in (True, False):
            ran = model.run(feeds, fuse=fuse)
            for name, want in zip(names, expected):
                np.testing.assert_allclose(ran[name], want.numpy().astype(ran[name].dtype), atol=1e-5, rtol=1e-4)
    return builder


class Lambda(torch.nn.Module):
    def __init__(self, fn, *parameters):
        super().__init__()
        self.fn = fn
        self.params = torch.nn.ParameterList([torch.nn.Parameter(p) for p in parameters])

    def forward(self, x):
        return self.fn(x, *self.params)


class Lambda2(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, y):
        return self.fn(x, y)


X = torch.randn(2, 3, 4)
POS = torch.rand(2, 3, 4) + 0.5

UNARY_CASES = {
    "neg": (torch.neg, X), "abs": (torch.abs, X), "exp": (torch.exp, X), "log": (torch.log, POS),
    "sqrt": (torch.sqrt, POS), "rsqrt": (torch.rsqrt, POS), "tanh": (torch.tanh, X), "sigmoid": (torch.sigmoid, X),
    "relu": (torch.relu, X), "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), X), "erf": (torch.erf, X), "sin": (torch.sin, X), "cos": (torch.cos, X),
    "reciprocal": (torch.reciprocal, POS), "gelu": (F.gelu, X), "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), X),
    "clamp": (lambda x: torch.clamp(x, -0.5, 0.5), X), "softmax": (lambda x: torch.softmax(x, 1), X),
    "to_int_and_back": (lambda x: (x * 4).to(torch.int64).to(torch.float32), X),
    "to_bool": (lambda x: (x > 0).to(torch.float32) + (x.to(torch.bool)).float(), X),
    "pow_scalar": (lambda x: x ** 3, X), "scalar_pow": (lambda x: 2.0 ** x, X),
    "add_scalar_alpha": (lambda x: torch.add(x, x, alpha=2) + 1, X), "rsub": (lambda x: 1 - x, X),
    "div_scalar": (lambda x: x / 3, X), "where": (lambda x: torch.where(x > 0, x, x * 0.1), X),
    "compares": (lambda x: (x >= 0).float() + (x < 0.5).float() + (x == x).float() + (x != 0).float() + (x <= 1).float(), X),
}


@pytest.mark.parametrize("name", sorted(UNARY_CASES))
def test_elementwise_lowering(name):
    fn, x = UNARY_CASES[name]
    check(Lambda(fn), x)


SHAPE_CASES = {
    "view": lambda x: x.view(6, 4), "reshape": lambda x: x.reshape(-1), "unsqueeze": lambda x: x.unsqueeze(1),
    "squeeze": lambda x: x[:, :1].squeeze(1), "permute": lambda x: x.permute(2, 0, 1), "transpose": lambda x: x.transpose(0, 2),
    "t": lambda x: x[0].t(), "expand": lambda x: x[:, :1].expand(2, 3, 4), "slice": lambda x: x[:, 1:, ::2],
    "select": lambda x: x[:, -1], "cat": lambda x: torch.cat([x, x * 2], dim=-1), "pad": lambda x: F.pad(x, (1, 2, 0, 1), value=0.5),
    "sum": lambda x: x.sum(dim=(0, 2)), "sum_all": lambda x: x.sum(), "mean": lambda x: x.mean(-1, keepdim=True),
    "amax": lambda x: x.amax(1), "amin": lambda x: x.amin(dim=(1, 2), keepdim=True), "clone": lambda x: x.clone() + 1,
    "split_with_sizes": lambda x: torch.cat(torch.split(x, [1, 3], dim=-1)[::-1], -1),
    "split_chunks": lambda x: sum(p.sum(1) for p in torch.split(x, 2, dim=1)),
    "topk_values": lambda x: torch.topk(x, 2).values, "topk_indices": lambda x: torch.topk(x, 2).indices.float(),
}


@pytest.mark.parametrize("name", sorted(SHAPE_CASES))
def test_shape_and_reduction_lowering(name):
    check(Lambda(SHAPE_CASES[name]), X)


def test_linear_layers_matmul_addmm_bmm(tmp_path):
    check(torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2)), torch.randn(3, 4), tmp_path=tmp_path)
    check(Lambda2(torch.bmm), torch.randn(2, 3, 4), torch.randn(2, 4, 5))
    check(Lambda2(torch.matmul), torch.randn(3, 4), torch.randn(4, 2))


def test_convolution_pools_and_upsample(tmp_path):
    net = torch.nn.Sequential(
        torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(4, 4, 3, stride=2, padding=1, groups=2, bias=False), torch.nn.AvgPool2d(2, 1, padding=1),
        torch.nn.Upsample(scale_factor=2, mode="nearest"))
    check(net, torch.randn(2, 2, 8, 8), tmp_path=tmp_path)


def test_layer_norm_embedding_and_attention(tmp_path):
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(11, 8)
            self.norm = torch.nn.LayerNorm(8)
            self.qkv = torch.nn.Linear(8, 24)

        def forward(self, ids):
            h = self.norm(self.embed(ids))
            q, k, v = self.qkv(h).view(ids.shape[0], ids.shape[1], 3, 2, 4).permute(2, 0, 3, 1, 4)
            mask = torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool).tril()
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            b = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            return (a + b).transpose(1, 2).reshape(ids.shape[0], ids.shape[1], 8)

    check(Block(), torch.randint(0, 11, (2, 5)), tmp_path=tmp_path)


def test_an_unsupported_aten_op_fails_by_name():
    with pytest.raises(rml.ExportError, match=r"aten\.fmod\.Scalar has no rml lowering"):
        export(Lambda(lambda x: torch.fmod(x, 0.7)), (X,))


def test_constant_subgraphs_fold_in_torch():
    class Masked(torch.nn.Module):
        def forward(self, x):
            mask = torch.arange(4) < 2  # constant: folded in torch, no node
            return x * mask
    builder = check(Masked(), X)
    assert builder.node_count == 1


class BasicBlock(torch.nn.Module):
    """torchvision's ResNet basic block, with non-trivial running statistics."""

    def __init__(self, channels=4):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(channels)
        self.conv2 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(channels)
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)


def test_resnet_block_beyond_the_zoo(tmp_path):
    check(BasicBlock(), torch.randn(2, 4, 6, 6), tmp_path=tmp_path)


def test_batch_norm_folds_into_the_conv(tmp_path):
    # Each batch norm (a per-channel multiply and add) goes into its conv's
    # weights and bias: left are the two convs, the residual add, two relus.
    check(BasicBlock(), torch.randn(2, 4, 6, 6), tmp_path=tmp_path)
    counts = rml.load(str(tmp_path / "m.json")).op_counts
    assert counts == {"conv2d": 2, "relu": 2, "add": 1}, counts


def test_conv1d_is_a_2d_conv_over_a_unit_axis_and_relu6_a_clamp(tmp_path):
    model = torch.nn.Sequential(
        torch.nn.Conv1d(3, 6, 3, padding=1), torch.nn.ReLU6(),
        torch.nn.Conv1d(6, 4, 5, stride=2, dilation=2, padding=3, groups=2, bias=False), torch.nn.Hardtanh(-0.5, 2.0))
    builder = check(model, 3 * torch.randn(2, 3, 17), tmp_path=tmp_path)
    counts = rml.load(str(tmp_path / "m.json")).op_counts
    assert counts["conv2d"] == 2 and counts["maximum"] == 2 and counts["minimum"] == 2, counts
    assert builder.node_count > 0


def test_transformer_encoder_layer_beyond_the_zoo(tmp_path):
    layer = torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)
    check(layer, torch.randn(2, 5, 8), tmp_path=tmp_path)


def test_the_export_command_line_writes_a_graph_rml_runs(tmp_path, run_rml):
    import subprocess
    import sys

    (tmp_path / "factories.py").write_text(
        "import torch\n"
        "def mlp():\n"
        "    return torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))\n")
    out = tmp_path / "mlp.json"
    result = subprocess.run([sys.executable, "-m", "rml.export", "torch", "factories:mlp", "--example-inputs", "f32:2x12",
                             "-o", str(out)], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "wrote" in result.stdout and out.exists() and out.with_suffix(".safetensors").exists()
    assert "matmul x2" in run_rml("info", out).stdout
    bad = subprocess.run([sys.executable, "-m", "rml.export", "torch", "factories:mlp", "--example-inputs", "f32:2x5",
                          "-o", str(tmp_path / "bad.json")], cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode != 0 and not (tmp_path / "bad.json").exists()
