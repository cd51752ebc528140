"""Elementwise recipes: ops rml writes as a few others."""
from __future__ import annotations

import numpy as np

from .base import Lowering, Value


def erfc(L: Lowering, x) -> Value:
    """1 - erf(x): exact to an ulp of 1 (tf.nn.gelu writes GELU as 0.5 x erfc(-x / sqrt 2))."""
    return L.op("sub", [np.float32(1), L.op("erf", [x])])


def clamp(L: Lowering, x, low=None, high=None) -> Value:
    """minimum(maximum(x, low), high), either bound optional."""
    if low is not None:
        x = L.binary("maximum", x, low)
    if high is not None:
        x = L.binary("minimum", x, high)
    return x


def convert(L: Lowering, x, to: str) -> Value:
    """x as rml dtype `to` ("f32" or "i32"), or as a bool ("bool": f32 0/1, x != 0)."""
    if to == "bool":
        return L.op("ne", [x, np.zeros((), np.int32 if L.b.dtype(x) == "i32" else np.float32)])
    return x if L.b.dtype(x) == to else L.op("cast", [x], {"to": to})


# Functions rml has no op for, written with those it has. Each is within a rounding or
# two of the framework's own result relative to its size, or (near zero, where a
# difference of exponentials cancels) within an ulp of 1 absolutely.
def expm1(L: Lowering, x) -> Value:
    return L.op("sub", [L.op("exp", [x]), np.float32(1)])


def log1p(L: Lowering, x) -> Value:
    return L.op("log", [L.op("add", [x, np.float32(1)])])


def log_base(L: Lowering, x, base: float) -> Value:
    return L.op("mul", [L.op("log", [x]), np.float32(1 / np.log(base))])


def sinh(L: Lowering, x) -> Value:
    return L.op("mul", [L.op("sub", [L.op("exp", [x]), L.op("exp", [L.op("neg", [x])])]), np.float32(0.5)])


def cosh(L: Lowering, x) -> Value:
    return L.op("mul", [L.op("add", [L.op("exp", [x]), L.op("exp", [L.op("neg", [x])])]), np.float32(0.5)])


def tan(L: Lowering, x) -> Value:
    return L.op("div", [L.op("sin", [x]), L.op("cos", [x])])


def atanh(L: Lowering, x) -> Value:
    """0.5 log((1 + x) / (1 - x))."""
    one = np.float32(1)
    ratio = L.op("div", [L.op("add", [one, x]), L.op("sub", [one, x])])
    return L.op("mul", [L.op("log", [ratio]), np.float32(0.5)])


def asinh(L: Lowering, x) -> Value:
    """sign(x) log(|x| + sqrt(x^2 + 1)), on |x| so that large negative x do not cancel."""
    a = L.op("abs", [x])
    magnitude = L.op("log", [L.op("add", [a, L.op("sqrt", [L.op("add", [L.op("mul", [a, a]), np.float32(1)])])])])
    return L.op("select", [L.op("lt", [x, np.float32(0)]), L.op("neg", [magnitude]), magnitude])


def acosh(L: Lowering, x) -> Value:
    """log(x + sqrt(x^2 - 1)) (NaN below 1)."""
    root = L.op("sqrt", [L.op("sub", [L.op("mul", [x, x]), np.float32(1)])])
    return L.op("log", [L.op("add", [x, root])])


def atan(L: Lowering, x) -> Value:
    """arctan by Cephes' single-precision method (within two ulp): |x| is reduced to
    [0, tan(pi/8)] by atan(x) = pi/4 + atan((x-1)/(x+1)) or pi/2 + atan(-1/x), then an odd
    polynomial; the sign is put back last."""
    f32 = np.float32
    a = L.op("abs", [x])
    big = L.op("gt", [a, f32(2.414213562373095)])       # tan(3 pi / 8)
    middle = L.op("gt", [a, f32(0.4142135623730950)])   # tan(pi / 8)
    reduced = L.op("select", [big, L.op("div", [f32(-1), a]),
                              L.op("select", [middle, L.op("div", [L.op("sub", [a, f32(1)]), L.op("add", [a, f32(1)])]),
                                              a])])
    offset = L.op("select", [big, f32(np.pi / 2), L.op("select", [middle, f32(np.pi / 4), f32(0)])])
    z = L.op("mul", [reduced, reduced])
    poly = f32(8.05374449538e-2)
    for c in (-1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1):
        poly = L.op("add", [L.op("mul", [poly, z]), f32(c)])
    magnitude = L.op("add", [offset, L.op("add", [L.op("mul", [L.op("mul", [poly, z]), reduced]), reduced])])
    return L.op("select", [L.op("lt", [x, f32(0)]), L.op("neg", [magnitude]), magnitude])


def asin(L: Lowering, x) -> Value:
    """atan(x / sqrt((1 - x)(1 + x))): +-inf at +-1 gives +-pi/2; NaN outside [-1, 1]."""
    one = np.float32(1)
    cosine = L.op("sqrt", [L.op("mul", [L.op("sub", [one, x]), L.op("add", [one, x])])])
    return atan(L, L.op("div", [x, cosine]))


def acos(L: Lowering, x) -> Value:
    """pi/2 - asin(x)."""
    return L.op("sub", [np.float32(np.pi / 2), asin(L, x)])


def atan2(L: Lowering, y, x) -> Value:
    """The angle of (x, y): atan(y / x), plus or minus pi left of the y axis; on the axis
    (x = 0) +-pi/2 by y's sign, and 0 at the origin (y / x there is NaN)."""
    f32 = np.float32
    base = atan(L, L.op("div", [y, x]))
    negative_y = L.op("lt", [y, f32(0)])
    left = L.op("add", [base, L.op("select", [negative_y, f32(-np.pi), f32(np.pi)])])
    angle = L.op("select", [L.op("lt", [x, f32(0)]), left, base])
    on_axis = L.op("select", [negative_y, f32(-np.pi / 2), L.op("select", [L.op("gt", [y, f32(0)]), f32(np.pi / 2),
                                                                           f32(0)])])
    return L.op("select", [L.op("eq", [x, f32(0)]), on_axis, angle])
