"""Contraction: a general dot product (dot_general's dimension numbers) as rml's matmul."""
from __future__ import annotations

import numpy as np

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
