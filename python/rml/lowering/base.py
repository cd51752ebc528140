"""The Builder wrapper every exporter's lowering object extends, and its op table."""
from __future__ import annotations

import numpy as np

from .._rml import Builder, ExportError


class Value(int):
    """An rml value id (distinguishes lowered tensors from constants still held by Python)."""


class Table(dict):
    """A framework op -> the function that lowers it; `@TABLE.register(op, ...)` adds one."""

    def register(self, *keys):
        def add(lower):
            for key in keys:
                self[key] = lower
            return lower
        return add


def output_name(index: int, count: int) -> str:
    """Graph outputs are "output", or "output.0", "output.1", ... when there are several."""
    return "output" if count == 1 else f"output.{index}"


def rml_pads(pairs) -> list[int]:
    """rml's [top, left, bottom, right] from (before, after) pairs for height and width."""
    (top, bottom), (left, right) = pairs
    return [int(top), int(left), int(bottom), int(right)]


def shape_mismatch(what: str, got, whose: str, want, where: str) -> ExportError:
    """The error for a lowered value whose shape differs from the one the framework recorded."""
    return ExportError(f"{what}: lowered shape {tuple(got)} differs from {whose} {tuple(want)} ({where})")


class Lowering:
    """One export's Builder, with values given as rml values or constants (which become
    Builder constants where an op needs them)."""

    def __init__(self, builder: Builder):
        self.b = builder

    def value(self, x) -> Value:
        """An rml value for a lowered tensor or a NumPy constant."""
        if isinstance(x, Value):
            return x
        return Value(self.b.constant(np.asarray(x)))

    def op(self, name: str, inputs, attrs: dict | None = None) -> Value:
        return Value(self.b.op(name, [self.value(i) for i in inputs], attrs or {}))

    def op_multi(self, name: str, inputs, count: int, attrs: dict | None = None) -> tuple:
        return tuple(Value(v) for v in self.b.op_multi(name, [self.value(i) for i in inputs], count, attrs or {}))

    def binary(self, name: str, a, b) -> Value:
        return self.op(name, [a, b])

    def shape(self, x) -> tuple:
        return tuple(self.b.shape(x)) if isinstance(x, Value) else tuple(np.shape(x))

    def rank(self, x) -> int:
        return len(self.shape(x))

    def reshape(self, x, shape) -> Value:
        """x reshaped, with no op when it already has that shape."""
        shape = [int(d) for d in shape]
        return self.value(x) if list(self.shape(x)) == shape else self.op("reshape", [x], {"shape": shape})

    def transpose(self, x, perm) -> Value:
        """x transposed, with no op for the identity permutation."""
        perm = [int(p) for p in perm]
        return self.value(x) if perm == sorted(perm) else self.op("transpose", [x], {"perm": perm})
