"""Core ATen ops lowered as recipes of rml ops (python/rml/lowering/): each against torch
itself, through the reference kernels and the executor (fused and unfused)."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import rml
from rml.from_torch import export
from test_from_torch import check

torch.manual_seed(0)


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def awkward(*shape):
    """Values with halves, integers, zeros, large magnitudes, infinities and NaN."""
    specials = torch.tensor([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.0, -0.0, 3.0, -7.0, 1e9, -1e9, 8388609.0,
                             -8388609.5, 0.49999997, -0.49999997, math.inf, -math.inf, math.nan, 1e-30])
    x = torch.randn(*shape) * 4
    flat = x.view(-1)
    flat[:min(len(specials), flat.numel())] = specials[:flat.numel()]
    return x


X = torch.randn(2, 3, 5)
UNIT = torch.rand(2, 3, 5) * 1.8 - 0.9
POS = torch.rand(2, 3, 5) + 0.5
IMG = torch.randn(1, 2, 5, 7)
VOL = torch.randn(2, 2, 5, 6, 7)  # N, C, D, H, W
VOL4 = torch.randn(1, 4, 6, 4, 5)
IDX = torch.tensor([[2, 0, 1], [1, 1, 0]])

CASES = {
    # rounding, exactly (awkward values: halves, ties, 2^23, NaN, infinities)
    "trunc": (torch.trunc, awkward(4, 6)), "floor": (torch.floor, awkward(4, 6)), "ceil": (torch.ceil, awkward(4, 6)),
    "round": (torch.round, awkward(4, 6)), "sign": (torch.sign, awkward(4, 6)),
    "div_trunc": (lambda a, b: torch.div(a, b, rounding_mode="trunc"), X, POS),
    "div_floor": (lambda a, b: torch.div(a, b, rounding_mode="floor"), X, POS),
    # functions written with exp, log, sin, cos
    "expm1": (torch.expm1, X), "log1p": (torch.log1p, POS), "log2": (torch.log2, POS), "log10": (torch.log10, POS),
    "sinh": (torch.sinh, X), "cosh": (torch.cosh, X), "tan": (torch.tan, UNIT), "asinh": (torch.asinh, X * 30),
    "acosh": (torch.acosh, POS + 1), "atan": (torch.atan, awkward(4, 6)), "asin": (torch.asin, UNIT),
    "acos": (torch.acos, torch.cat([UNIT, torch.tensor([[[1.0, -1.0, 0.0, 0.999, -0.999]] * 3] * 2)])),
    "atan2": (torch.atan2, torch.tensor([0.0, 1.0, -1.0, 0.0, 2.0, -3.0, 0.0]), torch.tensor([0.0, 0.0, 0.0, 1.0, -1.0, -2.0, -5.0])),
    "atan2_random": (torch.atan2, X, X.flip(0)),
    "prod": (lambda x: torch.prod(x, dim=2), X), "prod_all": (torch.prod, torch.rand(3, 7) + 0.5),
    "prod_keep": (lambda x: torch.prod(x, dim=1, keepdim=True), torch.tensor([[1.0, 0.0, math.inf], [2.0, 3.0, -1.0]])), "atanh": (torch.atanh, UNIT), "elu": (F.elu, X),
    "selu": (F.selu, X), "celu": (lambda x: F.celu(x, 0.7), X),
    # bools
    "isnan": (torch.isnan, awkward(3, 7)), "isinf": (torch.isinf, awkward(3, 7)),
    "logical": (lambda a, b: torch.logical_xor(torch.logical_and(a > 0, b > 0), torch.logical_or(a < 0, b > 1))
                .logical_not(), X, X.flip(0)),
    "bitwise_bool": (lambda a, b: ((a > 0) & (b > 0)) | ~(a > 1) ^ (b < 0), X, X.flip(0)),
    "any": (lambda x: (x > 1).any(dim=1), X), "any_all": (lambda x: (x > 2).any(), X),
    # statistics
    "mean_all": (torch.mean, X), "var": (lambda x: torch.var(x, dim=(0, 2), keepdim=True), X),
    "var_biased": (lambda x: torch.var(x, dim=1, unbiased=False), X), "std": (lambda x: torch.std(x, dim=-1), X),
    "log_softmax": (lambda x: F.log_softmax(x, dim=1), X * 10),
    "argmax": (lambda x: torch.argmax(x, dim=1), X), "argmin": (lambda x: torch.argmin(x, dim=2, keepdim=True), X),
    "argmax_all": (torch.argmax, X), "argmax_ties_nan": (lambda x: torch.argmax(x, dim=1),
                                                        torch.tensor([[1.0, 3.0, 3.0], [2.0, math.nan, 5.0]])),
    "argmin_int": (lambda x: torch.argmin(x.int(), dim=1), torch.tensor([[5.0, -2.0, -2.0], [0.0, 4.0, -9.0]])),
    "max_dim": (lambda x: torch.max(x, dim=1), X), "min_dim": (lambda x: torch.min(x, dim=0, keepdim=True), X),
    "sort": (lambda x: torch.sort(x, dim=1).values, awkward(3, 6)),
    "sort_descending": (lambda x: torch.sort(x, dim=0, descending=True), X),
    # indexing and layout
    "gather": (lambda x, i: torch.gather(x, 1, i), torch.randn(2, 4), IDX),
    "take_along_rows": (lambda x: torch.gather(x, 0, IDX.t()), torch.randn(4, 2)),
    "index_one": (lambda x, i: x[:, i], X, IDX), "index_two": (lambda x, i: x[i, i - 1], torch.randn(3, 3, 2), IDX),
    "index_negative": (lambda x: x[torch.tensor([-1, 0, -2])], X),
    "diagonal": (lambda x: torch.diagonal(x, offset=1, dim1=1, dim2=2), torch.randn(2, 4, 5)),
    "diagonal_below": (lambda x: torch.diagonal(x, offset=-2), torch.randn(5, 3)),
    "flip": (lambda x: torch.flip(x, [0, 2]), X), "roll": (lambda x: torch.roll(x, 2, 2), X),
    "repeat": (lambda x: x.repeat(2, 1, 3, 1), X), "tile": (lambda x: torch.tile(x, (2,)), X),
    "as_strided": (lambda x: torch.as_strided(x, (3, 3), (2, 1), 1), torch.randn(4, 3)),
    "clamp_tensor": (lambda x, lo: torch.clamp(x, lo, lo + 1), X, X.flip(1)),
    "full_like": (lambda x: x + torch.full_like(x, 3.5), X), "zeros_like_int": (lambda x: torch.zeros_like(x.int()), X),
    "fill": (lambda x: x.clone().fill_(2.0) * x, X),
    "slice_scatter": (lambda x, s: torch.slice_scatter(x, s, dim=2, start=1, end=5, step=2), X, torch.randn(2, 3, 2)),
    "select_scatter": (lambda x, s: torch.select_scatter(x, s, 1, -1), X, torch.randn(2, 5)),
    "index_put": (lambda x, v: x.index_put((torch.tensor([0, 2]),), v), torch.randn(3, 4), torch.randn(2, 4)),
    "setitem": (lambda x, v: _setitem(x, v), torch.randn(3, 4), torch.randn(4)),
    "scatter": (lambda x, s: torch.scatter(x, 1, IDX, s), torch.randn(2, 4), torch.randn(2, 3)),
    "scatter_value": (lambda x: torch.scatter(x, 0, IDX[:, :2], -4.0), torch.randn(3, 2)),
    # windows, padding, resizing, normalisation
    "avg_pool1d": (lambda x: F.avg_pool1d(x, 3, 2, 1), X), "avg_pool1d_unbatched": (lambda x: F.avg_pool1d(x, 2), X[0]),
    "adaptive_avg_pool1d": (lambda x: F.adaptive_avg_pool1d(x, 3), X),
    "conv_transpose2d": (torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1), IMG),
    "conv_transpose2d_grouped": (torch.nn.ConvTranspose2d(2, 4, (2, 3), stride=(1, 2), dilation=2, groups=2), IMG),
    "conv_transpose1d": (torch.nn.ConvTranspose1d(3, 2, 4, stride=3, padding=2, bias=False), X),
    "conv_transpose2d_uneven": (torch.nn.ConvTranspose2d(2, 3, (3, 5), stride=(2, 3), padding=(0, 2)), IMG),
    "conv_transpose2d_narrow_kernel": (torch.nn.ConvTranspose2d(2, 3, 2, stride=3), IMG),
    "conv3d": (torch.nn.Conv3d(2, 3, (2, 3, 3), stride=(2, 1, 2), padding=(1, 1, 0)), VOL),
    "conv3d_grouped_dilated": (torch.nn.Conv3d(4, 2, 2, dilation=(2, 1, 1), groups=2, bias=False), VOL4),
    "conv_transpose3d": (torch.nn.ConvTranspose3d(2, 3, (2, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1),
                                                  output_padding=(0, 1, 0)), VOL),
    "conv_transpose3d_grouped_dilated": (torch.nn.ConvTranspose3d(4, 2, 2, stride=2, dilation=(1, 2, 1), groups=2),
                                         VOL4),
    "max_pool3d": (lambda x: F.max_pool3d(x, (3, 2, 2), (2, 1, 2), (1, 1, 0)), VOL),
    "max_pool3d_ceil_dilated": (lambda x: F.max_pool3d(x, 2, 2, dilation=(2, 1, 1), ceil_mode=True), VOL),
    "max_pool3d_unbatched": (lambda x: F.max_pool3d(x, 2), VOL[0]),
    "avg_pool3d": (lambda x: F.avg_pool3d(x, (3, 2, 3), 2, (1, 0, 1)), VOL),
    "avg_pool3d_excluding_pad": (lambda x: F.avg_pool3d(x, 3, (1, 2, 2), 1, count_include_pad=False), VOL),
    "avg_pool3d_ceil": (lambda x: F.avg_pool3d(x, 2, ceil_mode=True), VOL),
    "adaptive_avg_pool3d": (lambda x: F.adaptive_avg_pool3d(x, (2, 3, 2)), VOL),
    "max_pool_ceil": (lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True), IMG),
    "max_pool_ceil_padded": (lambda x: F.max_pool2d(x, (2, 3), 2, (1, 1), ceil_mode=True), IMG),
    "max_pool_ceil_dilated": (lambda x: F.max_pool2d(x, 2, 3, dilation=2, ceil_mode=True), torch.randn(1, 2, 8, 9)),
    "avg_pool_ceil": (lambda x: F.avg_pool2d(x, 3, 2, ceil_mode=True), IMG),
    "avg_pool_ceil_excluding_pad": (lambda x: F.avg_pool2d(x, 2, 2, 1, ceil_mode=True, count_include_pad=False), IMG),
    "adaptive_avg_even": (lambda x: F.adaptive_avg_pool2d(x, (5, 1)), IMG),
    "adaptive_avg_uneven": (lambda x: F.adaptive_avg_pool2d(x, (3, 4)), IMG),
    "reflect_pad2d": (lambda x: F.pad(x, (2, 1, 3, 0), mode="reflect"), IMG),
    "reflect_pad1d": (lambda x: F.pad(x, (1, 3), mode="reflect"), X),
    "replicate_pad2d": (lambda x: F.pad(x, (2, 1, 0, 3), mode="replicate"), IMG),
    "replicate_pad3d": (lambda x: F.pad(x, (1, 1, 2, 0, 0, 1), mode="replicate"), torch.randn(1, 2, 3, 3, 4)),
    "bilinear": (lambda x: F.interpolate(x, size=(8, 11), mode="bilinear"), IMG),
    "bilinear_corners": (lambda x: F.interpolate(x, size=(9, 4), mode="bilinear", align_corners=True), IMG),
    "bilinear_scale": (lambda x: F.interpolate(x, scale_factor=1.7, mode="bilinear"), IMG),
    "nearest_size": (lambda x: F.interpolate(x, size=(7, 5), mode="nearest"), IMG),
    "nearest_scale": (lambda x: F.interpolate(x, scale_factor=2.5, mode="nearest"), IMG),
    "group_norm": (torch.nn.GroupNorm(2, 4), torch.randn(2, 4, 3, 5)),
    "instance_norm": (torch.nn.InstanceNorm2d(3, affine=True), torch.randn(2, 3, 4, 4)),
    "instance_norm_1d": (torch.nn.InstanceNorm1d(3), torch.randn(2, 3, 6)),
    "cdist": (lambda a, b: torch.cdist(a, b), torch.randn(2, 4, 3), torch.randn(2, 5, 3)),
    "cdist_p1": (lambda a, b: torch.cdist(a, b, p=1), torch.randn(4, 3), torch.randn(6, 3)),
    "pdist": (lambda x: F.pdist(x), torch.randn(5, 3)),
}


def _setitem(x, v):
    y = x.clone()
    y[1] = v
    return y


@pytest.mark.parametrize("name", sorted(CASES))
def test_core_aten_op_matches_torch(name, tmp_path):
    fn, *inputs = CASES[name]
    module = fn if isinstance(fn, torch.nn.Module) else Fn(fn)
    check(module, *inputs, tmp_path=tmp_path)


def test_rounding_is_exact_on_every_awkward_value(tmp_path):
    x = awkward(4, 6)
    builder = export(Fn(lambda v: (torch.round(v), torch.floor(v), torch.ceil(v), torch.trunc(v))), (x,),
                     input_names=["x"])
    got = builder.evaluate({"x": x.numpy()})
    for i, fn in enumerate((torch.round, torch.floor, torch.ceil, torch.trunc)):
        np.testing.assert_array_equal(got[f"output.{i}"], fn(x).numpy())


def test_random_ops_are_refused_not_frozen():
    class Noisy(torch.nn.Module):
        def forward(self, x):
            return x + torch.randn(3)

    with pytest.raises(rml.ExportError, match=r"aten\.randn\.default draws random numbers"):
        export(Noisy(), (torch.randn(3),))


def test_scatter_with_indices_computed_at_run_time_fails_by_name():
    with pytest.raises(rml.ExportError, match="indices computed at run time"):
        export(Fn(lambda x, i: torch.scatter(x, 1, i, 1.0)), (torch.randn(2, 4), IDX))
