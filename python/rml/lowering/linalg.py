"""Contraction: a general dot product (dot_general's dimension numbers) as rml's matmul."""
from __future__ import annotations

import numpy as np

from .._rml import ExportError
from .base import Lowering, Value


def dot_general(L: Lowering, a, b, dimension_numbers) -> Value:
    """a and b contracted over ((a's axes, b's axes), (a's batch axes, b's batch axes)):
    transpose + reshape to [batch, M, K] @ [batch, K, N] (2-D when there is no batch),
    matmul, reshape to batch + a's free axes + b's free axes."""
    (a_contract, b_contract), (a_batch, b_batch) = dimension_numbers
    a_shape, b_shape = L.shape(a), L.shape(b)
    direct = _as_matmul(L, a, b, a_shape, b_shape, a_contract, b_contract, a_batch, b_batch)
    if direct is not None:
        return direct
    a_free = [d for d in range(len(a_shape)) if d not in a_contract and d not in a_batch]
    b_free = [d for d in range(len(b_shape)) if d not in b_contract and d not in b_batch]
    size = lambda shape, dims: int(np.prod([shape[d] for d in dims], dtype=np.int64))
    batch = [a_shape[d] for d in a_batch]
    lead = [size(a_shape, a_batch)] if a_batch else []
    m, k, n = size(a_shape, a_free), size(a_shape, a_contract), size(b_shape, b_free)
    a2 = L.reshape(L.transpose(a, list(a_batch) + a_free + list(a_contract)), lead + [m, k])
    b2 = L.reshape(L.transpose(b, list(b_batch) + list(b_contract) + b_free), lead + [k, n])
    out = L.op("matmul", [a2, b2])
    return L.reshape(out, batch + [a_shape[d] for d in a_free] + [b_shape[d] for d in b_free])


def einsum(L: Lowering, equation: str, a, b) -> Value:
    """A two-operand einsum ("abc,cde->abde") as dot_general: letters in both operands and
    the output are batch axes, in both operands only contracted, the others free; the
    result is transposed into the output's order. Ellipses, repeated letters (diagonals)
    and letters summed within one operand have no lowering."""
    inputs, _, out = equation.replace(" ", "").partition("->")
    operands = inputs.split(",")
    if not _ or len(operands) != 2 or "." in equation:
        raise ExportError(f"einsum '{equation}': only two operands with an explicit output and no ellipsis")
    sa, sb = operands
    if any(len(set(s)) != len(s) for s in (sa, sb, out)):
        raise ExportError(f"einsum '{equation}': a repeated letter (a diagonal) has no lowering")
    if any(c not in sb and c not in out for c in sa) or any(c not in sa and c not in out for c in sb):
        raise ExportError(f"einsum '{equation}': a letter summed within one operand has no lowering")
    batch = [c for c in sa if c in sb and c in out]
    contract = [c for c in sa if c in sb and c not in out]
    a_free, b_free = [c for c in sa if c not in sb], [c for c in sb if c not in sa]
    dims = (([sa.index(c) for c in contract], [sb.index(c) for c in contract]),
            ([sa.index(c) for c in batch], [sb.index(c) for c in batch]))
    result = dot_general(L, a, b, dims)
    order = batch + a_free + b_free
    return L.transpose(result, [order.index(c) for c in out])


def _as_matmul(L, a, b, a_shape, b_shape, a_contract, b_contract, a_batch, b_batch):
    """rml's broadcasting matmul, without reshapes, for the layouts jnp.matmul and
    x @ W produce: a contracts its last axis and b its second to last, with equal
    leading batch axes, or with a plain 2-D operand on either side (None otherwise)."""
    ra, rb = len(a_shape), len(b_shape)
    if list(a_contract) != [ra - 1] or ra < 1 or rb < 2 or list(b_contract) != [rb - 2]:
        return None
    batch = list(range(len(a_batch)))
    if a_batch or b_batch:  # [..., M, K] @ [..., K, N] with the same leading batch axes
        if list(a_batch) != batch or list(b_batch) != batch or ra != rb or ra != len(batch) + 2:
            return None
        return L.op("matmul", [a, b])
    if rb == 2 and ra >= 2:  # x @ W: dot_general gives a's free axes then N, as matmul does
        return L.op("matmul", [a, b])
    if ra == 2:  # W @ x, x with leading axes: matmul puts them first, dot_general after M
        product = L.op("matmul", [a, b])
        return L.transpose(product, [rb - 2] + list(range(rb - 2)) + [rb - 1])
    return None
