"""One input-naming rule for every route.

A graph's inputs are named `input.0, input.1, …` in the order the model takes
them, unless the caller passes names, or passes `ARGUMENTS` to keep the
framework's own argument names: forward()'s parameters for a torch module,
the function's parameters after `params` for JAX, the Keras Input layers' names
or the tf.function's parameters for TensorFlow. The direct exporters and the
StableHLO routes fed by a framework read those names from the same place.
"""
from __future__ import annotations

import inspect
from typing import Callable

from .._rml import ExportError

ARGUMENTS = "arguments"


def positional(count: int) -> list[str]:
    return [f"input.{i}" for i in range(count)]


def input_names(requested, count: int, arguments: Callable[[int], list[str]]) -> list[str]:
    """The names of `count` graph inputs: `requested` (a list), the default positional
    names (None), or the framework's argument names (ARGUMENTS)."""
    if requested is None:
        return positional(count)
    if isinstance(requested, str):
        if requested != ARGUMENTS:
            raise ExportError(f"input_names must be a list of names, None or {ARGUMENTS!r}, not {requested!r}")
        names = list(arguments(count))
    else:
        names = list(requested)
    if len(names) != count:
        raise ExportError(f"{len(names)} input names ({', '.join(names)}) for {count} inputs")
    if len(set(names)) != len(names):
        raise ExportError(f"input names repeat: {', '.join(names)}")
    return names


def parameters_of(fn, count: int, skip: int = 0) -> list[str]:
    """The names of a Python callable's first `count` positional parameters after the
    first `skip`. A *args parameter names its entries args.0, args.1, …"""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        raise ExportError(f"cannot read the argument names of {fn!r}; pass input_names") from None
    names, variadic = [], None
    for p in signature.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            variadic = p.name
    names = names[skip:]
    if variadic is not None:
        names += [f"{variadic}.{i}" for i in range(max(0, count - len(names)))]
    return names[:count]  # parameters with defaults beyond the inputs given are not inputs


def torch_arguments(module, count: int) -> list[str]:
    return parameters_of(module.forward, count)


def jax_arguments(fn, count: int) -> list[str]:
    return parameters_of(fn, count, skip=1)


def tf_arguments(model, count: int) -> list[str]:
    inputs = getattr(model, "inputs", None)  # a Keras functional or Sequential model
    if inputs and all(hasattr(t, "name") for t in inputs):
        return [t.name.split(":")[0] for t in inputs]
    fn = getattr(model, "python_function", None) or getattr(model, "__call__")
    return parameters_of(fn, count)
