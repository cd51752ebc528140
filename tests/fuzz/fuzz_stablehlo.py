"""atheris (libFuzzer for Python) harness for the StableHLO text importer.

What is fuzzed: `rml.from_stablehlo.export(text, None, example_inputs)` on
arbitrary module text. The text is parsed with jaxlib's MLIR bindings
(`rml.stablehlo.parsing.parse`), @main's argument types are read from it, zero
arrays of those shapes and element types are the example inputs (every
argument is a graph input: no parameters), and a returned Builder is then
finished as the tests finish one: written, loaded back with rml.load (with
memory limits) and run once on the zero inputs through the executor, fused and
unfused.

The contract: on ANY text the importer returns a Builder or raises
`rml.ExportError` / `rml.Error`. Any other exception (KeyError, IndexError,
TypeError, a plain ValueError, ZeroDivisionError, OverflowError,
RecursionError, MemoryError, ...), a crash, a hang (-timeout) or memory past
-rss_limit_mb is a finding. Writing, loading and running the returned graph
may raise `rml.Error` too (a limit, say), except one with code
`ErrorCode.internal`, which is a broken invariant and a finding.

Not findings, skipped before the importer runs: modules whose @main arguments
have an element type with no NumPy equivalent (the harness cannot make an
example for them) or more than MAX_ARGUMENT_ELEMENTS elements in one argument. (The
importer itself refuses text that would make jaxlib's parser allocate gigabytes:
parsing.MAX_PARSER_INDEX.) The
importer's resource limits (loop trips, elements of one value) are lowered
here, so that inputs that reach them fail in milliseconds, within memory.

Run (from the repository root; corpus and findings stay out of the tree, in the
git-ignored build-fuzz/):

    mkdir -p build-fuzz/corpus/stablehlo build-fuzz/findings
    cp -n tests/fuzz/seeds/stablehlo/*.mlir build-fuzz/corpus/stablehlo/
    .venv/bin/python tests/fuzz/fuzz_stablehlo.py -max_total_time=600 -timeout=10 \\
        -rss_limit_mb=2048 -artifact_prefix=build-fuzz/findings/stablehlo- \\
        build-fuzz/corpus/stablehlo

The seeds come from tests/fuzz/make_stablehlo_seeds.py. Half of the mutations
are libFuzzer's, half made by CustomMutator below, which changes the text's
numbers, element types, dimension sizes, ops and lines (byte mutations alone
rarely get past the MLIR parser and verifier).

Replay a finding (runs that one input and prints the traceback):

    .venv/bin/python tests/fuzz/fuzz_stablehlo.py build-fuzz/findings/stablehlo-crash-...

Speed: a fresh MLIR context costs about as much as parsing and importing a
small module several times over, so one context serves CONTEXT_USES parses
(`parsing._context` is replaced by a cached factory here) before a fresh one
bounds the memory it accumulates (MLIR uniques every type and attribute it
parses for the context's lifetime); and the module parsed to read @main's
arguments is handed to `export` instead of being parsed again. Both keep what
`export` does identical: it still parses the same text in an equivalent
context.
"""
from __future__ import annotations

import gc
import glob
import math
import os
import random
import re
import shutil
import sys
import tempfile
import types

import atheris

import numpy as np

import rml
from rml import from_stablehlo
from rml.stablehlo import parsing


def _instrument_rml():
    """Coverage instrumentation for every function of the rml package, in place.
    atheris.instrument_imports() would instrument nothing here: the editable install
    imports rml through scikit-build-core's own loader, which atheris does not patch;
    atheris.instrument_all() would also instrument jax and NumPy (minutes at start and
    every execution slower). Lambdas the op tables hold are functions of their own,
    found here as well."""
    package = os.path.dirname(rml.__file__) + os.sep
    functions = [f for f in gc.get_objects()
                 if isinstance(f, types.FunctionType) and f.__code__.co_filename.startswith(package)]
    for f in functions:
        atheris.instrument_func(f)
    return len(functions)


_instrument_rml()

MAX_ARGUMENT_ELEMENTS = 1 << 16
# The importer's unrolling limits, lowered: a loop that runs to the real limit (4096
# trips, 16384 in all) is rejected by design, but only after seconds of lowering its
# body trip by trip; here it meets the same check after a few milliseconds (the seeds'
# loops run 3 trips; 16 rather than 64 halves the time a mutated corpus spends importing).
from_stablehlo.MAX_LOOP_TRIPS = 16
from_stablehlo.MAX_TOTAL_TRIPS = 64
# Likewise the elements of one value (2^31 by default): every value's example is
# computed, and a few values past 2^20 elements would take the run past -rss_limit_mb.
from_stablehlo.MAX_VALUE_ELEMENTS = 1 << 20
CONTEXT_USES = 1000
# The executor's bounds for a returned graph (rml.load's limits).
RUN_LIMITS = {"max_memory_bytes": 256 << 20, "max_tensor_elements": 1 << 24, "max_nodes": 100_000}


class _SharedContext:
    """A stand-in for parsing._context: the same MLIR context for `uses` calls, then a
    fresh one (made by the original factory, with MLIR's thread pool off: the harness
    runs one parse at a time)."""

    def __init__(self, make, uses: int):
        self.make, self.uses, self.left, self.context = make, uses, 0, None

    def __call__(self):
        if self.left == 0:
            self.context = self.make()
            self.context.enable_multithreading(False)
            self.left = self.uses
        self.left -= 1
        return self.context


parsing._context = _SharedContext(parsing._context, CONTEXT_USES)
_parse = parsing.parse
_parsed = None  # (text, (context, module)): the last text the harness parsed


def _parse_once(text):
    """from_stablehlo.parse, reusing the harness's own parse of the same text."""
    if _parsed is not None and _parsed[0] is text:
        return _parsed[1]
    return _parse(text)


from_stablehlo.parse = _parse_once

def _graph_path() -> str:
    """Where returned graphs are written: a folder of this process's own in memory
    (/dev/shm), where one exists. libFuzzer ends the process without Python's clean-up,
    so the folders of processes that have ended are removed here."""
    root = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    for old in glob.glob(os.path.join(root, "rml-fuzz_stablehlo-*")):
        pid = old.rsplit("-", 1)[1]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            shutil.rmtree(old, ignore_errors=True)
    folder = os.path.join(root, f"rml-fuzz_stablehlo-{os.getpid()}")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, "graph.json")


_GRAPH = _graph_path()


def _examples(context, module) -> list[np.ndarray] | None:
    """Zero arrays shaped like @main's arguments (None: skip this input), read with the
    importer's own functions (which reject a missing @main or body, and unranked or
    dynamic shapes, with ExportError)."""
    with context:
        main = from_stablehlo._main(module)
        examples = []
        for argument in from_stablehlo._body(main, "main").arguments:
            shape, element = parsing._type(argument)
            if element not in parsing._NUMPY_TYPES:
                return None
            if math.prod(shape) > MAX_ARGUMENT_ELEMENTS:
                return None
            examples.append(np.zeros(shape, parsing._NUMPY_TYPES[element]))
    return examples


def _finish(builder, examples):
    """The graph written, loaded and run as tests do: rml.Error is allowed here (limits,
    unsupported inputs), save one that reports a broken invariant."""
    feeds = {f"input.{i}": x for i, x in enumerate(examples)}
    try:
        builder.write(_GRAPH)
        model = rml.load(_GRAPH, RUN_LIMITS)
        for fuse in (True, False):
            model.run(feeds, fuse=fuse)
    except rml.Error as e:
        if e.code == rml.ErrorCode.internal:
            raise


def TestOneInput(data: bytes):
    global _parsed
    # Invalid UTF-8 is replaced (U+FFFD) rather than skipped: export takes a str, so
    # those bytes never reach it either way, and a mutation that splits a multi-byte
    # character still runs (the rest of the module is as interesting as before).
    text = data.decode("utf-8", errors="replace")
    try:
        context, module = _parse(text)
        examples = _examples(context, module)
    except rml.ExportError:
        return  # does not parse, no @main, an argument of no rml type: a contract-keeping answer
    if examples is None:
        return
    _parsed = (text, (context, module))
    try:
        builder = from_stablehlo.export(text, None, examples)
    except rml.Error:  # ExportError included
        return
    finally:
        _parsed = None
    _finish(builder, examples)


# --- a mutator that knows StableHLO text -------------------------------------------------
# libFuzzer's byte mutations almost always break a module's syntax or types, which the
# MLIR parser and verifier reject before the importer sees it. Half of the mutations are
# made here instead, on the text's tokens, in ways that often keep it valid: a number
# (a dimension, an attribute, a constant) replaced, an element type or an op swapped for
# another with the same signature, everywhere at once, a line duplicated or dropped.
_NUMBER = re.compile(r"(?<![\w.%#@])-?\d+(?![\w.])")
_INTERESTING = [0, 1, 2, 3, 4, 5, 7, 8, 16, 63, 64, 65, 255, 256, 4095, 4096, 4097, 65535, 65536, 1 << 20,
                (1 << 31) - 1, 1 << 31, 1 << 32, (1 << 63) - 1, -1, -2, -3, -4096, -(1 << 31), -(1 << 63)]
_ELEMENTS = ["f32", "f64", "f16", "bf16", "i1", "i8", "i16", "i32", "i64", "ui8", "ui32", "ui64", "index",
             "complex<f32>", "f8E4M3FN", "i4", "si32"]
_SWAPS = [
    ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "remainder", "atan2", "and", "or",
     "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical"],
    ["negate", "abs", "exponential", "log", "sqrt", "rsqrt", "tanh", "logistic", "sine", "cosine", "floor",
     "ceil", "sign", "round_nearest_even", "round_nearest_afz", "cbrt", "exponential_minus_one", "log_plus_one",
     "tan", "not", "is_finite", "popcnt", "count_leading_zeros"],
    ["EQ", "NE", "LT", "LE", "GT", "GE"], ["SIGNED", "UNSIGNED", "FLOAT", "TOTALORDER"],
    ["reduce_sum", "reduce_max"], ["dynamic_slice", "slice"], ["while", "if", "case"],
]


def _mutate_text(text: str, rng: random.Random) -> str:
    kind = rng.randrange(6)
    if kind <= 1:  # one number
        numbers = list(_NUMBER.finditer(text))
        if numbers:
            match = rng.choice(numbers)
            value = int(match.group())
            new = rng.choice(_INTERESTING) if kind == 0 else value + rng.choice([-2, -1, 1, 2])
            return text[:match.start()] + str(new) + text[match.end():]
    elif kind == 2:  # one element type, everywhere
        present = [e for e in _ELEMENTS if re.search(rf"\b{re.escape(e)}\b", text)]
        if present:
            old = rng.choice(present)
            return re.sub(rf"(?<=[x<]){re.escape(old)}(?=>)", rng.choice(_ELEMENTS), text)
    elif kind == 3:  # one op or keyword, everywhere
        group = rng.choice(_SWAPS)
        present = [w for w in group if re.search(rf"\b{w}\b", text)]
        if present:
            return re.sub(rf"\b{rng.choice(present)}\b", rng.choice(group), text)
    elif kind == 4:  # one dimension size, everywhere (shapes stay consistent where they agreed)
        sizes = sorted(set(re.findall(r"(?<=[<x])(\d+)(?=x)", text)))
        if sizes:
            old = rng.choice(sizes)
            return re.sub(rf"(?<=[<x]){old}(?=x)", str(rng.choice([0, 1, 2, 3, 5, 8, 4096, 1 << 20, 1 << 40])), text)
    else:  # a line duplicated or dropped
        lines = text.split("\n")
        i = rng.randrange(len(lines))
        if rng.random() < 0.5:
            lines.insert(rng.randrange(len(lines) + 1), lines[i])
        else:
            del lines[i]
        return "\n".join(lines)
    return text


def CustomMutator(data: bytes, max_size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    if rng.random() < 0.5:
        mutated = _mutate_text(data.decode("utf-8", errors="replace"), rng).encode()
        if len(mutated) <= max_size and mutated != data:
            return mutated
    return atheris.Mutate(data, max_size)


def main():
    atheris.Setup(sys.argv, TestOneInput, custom_mutator=CustomMutator)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
