"""StableHLO module text as MLIR: clean-ups jaxlib's parser needs, parsing, and reading
types and attributes as Python values."""
from __future__ import annotations

import functools
import re

import numpy as np

from .._rml import ExportError


# --- text clean-ups ----------------------------------------------------------------
_RESOURCE_BLOB = re.compile(r'^\s*"?([^"\s:]+)"?\s*:\s*"0x([0-9A-Fa-f]*)"', re.MULTILINE)
_PACKED_I1 = re.compile(r'dense<"0x([0-9A-Fa-f]*)">(\s*:\s*tensor<((?:\d+x)*)i1>)')


def _inline_resources(text: str) -> str:
    """torch-mlir's `dense_resource<key>` weights, with their blobs in a trailing
    `{-# dialect_resources ... #-}` section, as hex `dense<"0x...">` literals. A blob
    starts with a 4-byte alignment header, which the literal leaves out."""
    start = text.find("{-#")
    if start < 0:
        return text
    end = text.find("#-}", start)
    blobs = {key: data[8:] for key, data in _RESOURCE_BLOB.findall(text[start:end])}
    body = text[:start] + text[end + 3:] if end >= 0 else text[:start]

    def literal(match):
        key = match.group(1).strip('"')
        if key not in blobs:
            raise ExportError(f"dense_resource<{key}> has no blob in the module's dialect_resources")
        return f'dense<"0x{blobs[key]}">' if blobs[key] else "dense<>"
    return re.sub(r"dense_resource<([^>]+)>", literal, body)


def _unpack_i1(text: str) -> str:
    """TensorFlow prints large i1 literals bit-packed (LSB first); jaxlib's parser reads
    one byte per element."""
    def unpack(match):
        data, suffix, dims = match.group(1), match.group(2), match.group(3)
        count = int(np.prod([int(d) for d in dims.split("x") if d], dtype=np.int64))
        packed = bytes.fromhex(data)
        # Up to 8 elements, one byte is also a splat: those are left as they are.
        if count <= 8 or len(packed) == count or len(packed) != (count + 7) // 8:
            return match.group(0)
        bits = np.unpackbits(np.frombuffer(packed, np.uint8), bitorder="little")[:count]
        return f'dense<"0x{bits.astype(np.uint8).tobytes().hex().upper()}">{suffix}'
    return _PACKED_I1.sub(unpack, text)


def clean_text(text: str) -> str:
    """The module text as jaxlib's MLIR parser reads it."""
    return _unpack_i1(_inline_resources(text))


# --- parsing -------------------------------------------------------------------------
@functools.cache  # imported on first use, then looked up once: the walk calls this per op
def _mlir():
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import chlo, stablehlo
    return ir, stablehlo, chlo


def _context():
    ir, stablehlo, chlo = _mlir()
    from jaxlib.mlir.dialects import func  # noqa: F401  (registers the func dialect's Python classes)
    context = ir.Context()
    try:
        from jaxlib.mlir._mlir_libs import _jax_mlir_ext
        registry = ir.DialectRegistry()
        _jax_mlir_ext.register_dialects(registry)  # func, arith, ... as jax registers them
        context.append_dialect_registry(registry)
        context.load_all_available_dialects()
    except (ImportError, AttributeError):
        pass
    stablehlo.register_dialect(context)
    chlo.register_dialect(context)
    try:  # so that their ops and attributes parse (mhlo ops then fail by name)
        from jaxlib.mlir.dialects import mhlo, sdy
        mhlo.register_mhlo_dialect(context)
        sdy.register_dialect(context)
    except (ImportError, AttributeError):
        pass
    context.allow_unregistered_dialects = True
    return context


# jaxlib's MLIR parser allocates memory in proportion to some numbers written in the
# text before it rejects them (found by tests/fuzz/fuzz_stablehlo.py): a result number
# (`%2#1111111113` on an op with four results took 17 GB) and a convolution's dimension
# number (2147483647 took more than 2 GB). Valid modules write small numbers there;
# larger ones are refused before the parser sees the text.
MAX_PARSER_INDEX = 65535
_RESULT_NUMBER = re.compile(r"%[\w$.-]+#(\d+)")
# The bracket groups of convolution dimension numbers, `[b, f, 0, 1]x[o, i, 0, 1]->[...]`,
# after `dim_numbers =` or `#stablehlo.conv<`, however the separators between them are
# spelled (the parser reads the first groups before it finds a bad separator).
_CONV_DIMENSIONS = re.compile(r"(?:dim_numbers\s*=|conv<)\s*((?:[^\[\]]{0,8}\[[^\[\]]*\]){1,3})")


def _beyond(digits: str) -> bool:
    return len(digits) > len(str(MAX_PARSER_INDEX)) or int(digits) > MAX_PARSER_INDEX


def _refuse_parser_blowups(text: str) -> None:
    for match in _RESULT_NUMBER.finditer(text):
        if _beyond(match.group(1)):
            raise ExportError(f"result number #{match.group(1)[:20]} is beyond {MAX_PARSER_INDEX} "
                              "(no op has that many results)")
    for match in _CONV_DIMENSIONS.finditer(text):
        for digits in re.findall(r"\d+", match.group(1)):
            if _beyond(digits):
                raise ExportError(f"convolution dimension number {digits[:20]} is beyond {MAX_PARSER_INDEX} "
                                  f"in '{match.group(1)[:80]}'")


def parse(text: str):
    """(context, module) for a StableHLO module's text, cleaned up first."""
    ir, _, _ = _mlir()
    text = clean_text(text)
    _refuse_parser_blowups(text)
    context = _context()
    with context:
        try:
            module = ir.Module.parse(text)
        except Exception as e:  # MLIRError
            raise ExportError(f"the StableHLO module does not parse: {e}") from None
    return context, module


# --- types -----------------------------------------------------------------------------
_NUMPY_TYPES = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.float32, "i1": np.bool_,
                "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "ui8": np.uint8,
                "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64, "index": np.int64}


def _type(value) -> tuple[tuple, str]:
    """(shape, element type) of a ranked tensor value."""
    ir, _, _ = _mlir()
    if not isinstance(value.type, ir.RankedTensorType):
        raise ExportError(f"values of type {value.type} have no rml equivalent (ranked tensors only)")
    t = ir.RankedTensorType(value.type)
    if not t.has_static_shape:
        raise ExportError(f"values of type {value.type} have no rml equivalent (static shapes only)")
    return tuple(t.shape), str(t.element_type)


def _numpy_type(element: str):
    if element not in _NUMPY_TYPES:
        raise ExportError(f"element type {element} has no rml equivalent")
    return _NUMPY_TYPES[element]


def _kind(element: str) -> str:
    """bool, float or int: how rml holds the type (i1 as f32 0/1, floats as f32, ints as i32)."""
    if element == "i1":
        return "bool"
    return "float" if element.startswith(("f", "bf")) else "int"


def _rml_dtype(element: str) -> str:
    return "i32" if _kind(element) == "int" else "f32"


def _to_rml_array(array) -> np.ndarray:
    """A NumPy constant in rml's element types: bools and floats as f32, ints saturated to i32."""
    array = np.asarray(array)
    if array.dtype == np.bool_ or np.issubdtype(array.dtype, np.floating):
        return array.astype(np.float32)
    if np.issubdtype(array.dtype, np.integer):
        info = np.iinfo(np.int32)
        return np.clip(array, info.min, info.max).astype(np.int32)
    raise ExportError(f"constants of dtype {array.dtype} have no rml equivalent")


# --- attributes ---------------------------------------------------------------------------
def _ints(op, name, default=None) -> list[int] | None:
    """An integer-array attribute (DenseI64ArrayAttr or dense integer elements) as a list."""
    ir, _, _ = _mlir()
    if name not in op.attributes:
        return default
    attr = op.attributes[name]
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return [int(v) for v in ir.DenseI64ArrayAttr(attr)]
    if isinstance(attr, ir.DenseIntElementsAttr):
        return [int(v) for v in np.array(ir.DenseIntElementsAttr(attr)).ravel()]
    raise ExportError(f"attribute {name} = {attr} is not an integer array")


def _int(op, name, default=None) -> int | None:
    ir, _, _ = _mlir()
    if name not in op.attributes:
        return default
    return int(ir.IntegerAttr(op.attributes[name]).value)


def _pairs(op, name, rank) -> list[tuple[int, int]]:
    """An [N, 2] padding attribute as (low, high) pairs (zeros when absent)."""
    values = _ints(op, name)
    if values is None:
        return [(0, 0)] * rank
    return [(values[2 * i], values[2 * i + 1]) for i in range(len(values) // 2)]


def _constant_attr(attr, element: str, shape) -> np.ndarray:
    ir, _, _ = _mlir()
    if element == "bf16":
        raise ExportError("bf16 constants have no rml equivalent")
    try:
        array = np.array(ir.DenseElementsAttr(attr))
    except Exception as e:
        raise ExportError(f"constant {str(attr)[:80]} cannot be read: {e}") from None
    return np.asarray(array, dtype=_numpy_type(element)).reshape(shape)
