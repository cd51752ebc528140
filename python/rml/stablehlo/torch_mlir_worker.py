"""Converts saved torch.export programs to StableHLO text with torch-mlir's fx importer.

Run as a script in a fresh interpreter (`python torch_mlir_worker.py JOBS`), never
imported: torch-mlir's MLIR runtime must not share a process with jaxlib's or
TensorFlow's, so this file imports torch and torch-mlir only. JOBS is a JSON list of
{"program": path of a saved ExportedProgram, "out": path prefix, "lift": bool}; each job
writes out.mlir, out.json (leading-argument names) and out.npz, or out.error.
"""
import json
import sys
import traceback

import numpy as np
import torch
from torch._decomp import get_decompositions
from torch.export.graph_signature import InputKind
from torch_mlir import fx
from torch_mlir.extras.fx_decomp_util import get_decomposition_table


def decompositions() -> dict:
    """torch-mlir's table, with upsample_nearest2d decomposed too."""
    table = dict(get_decomposition_table())
    table.update(get_decompositions([torch.ops.aten.upsample_nearest2d.vec, torch.ops.aten.upsample_nearest2d.default]))
    return table


def leading_arguments(program):
    """(names, arrays) of the non-user placeholders, which precede the user inputs."""
    state = dict(program.state_dict)
    state.update(program.constants)
    specs = program.graph_signature.input_specs
    users = {node.name: len(node.users) for node in program.graph.nodes if node.op == "placeholder"}
    kinds = [spec.kind == InputKind.USER_INPUT for spec in specs]
    if kinds != sorted(kinds):
        raise RuntimeError("the program's parameters do not all precede its inputs")
    names, arrays, unused = [], [], set()
    for spec in specs:
        if spec.kind == InputKind.USER_INPUT:
            continue
        if spec.kind not in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            raise RuntimeError(f"input kind {spec.kind} is not supported")
        if users.get(spec.arg.name, 0) == 0 and spec.kind != InputKind.CONSTANT_TENSOR:
            unused.add(spec.target)
        names.append(spec.target)
        arrays.append(state[spec.target].detach().cpu())
    # A lifted constant that is an unused parameter's tensor takes the parameter's name.
    for i, spec in enumerate(s for s in specs if s.kind != InputKind.USER_INPUT):
        if spec.kind == InputKind.CONSTANT_TENSOR:
            for j, other in enumerate(names):
                if other in unused and arrays[j].shape == arrays[i].shape and torch.equal(arrays[j], arrays[i]):
                    names[i], names[j] = other, other + ".unused"
                    unused.discard(other)
                    break
    return names, [a.float().numpy() if a.dtype in (torch.float16, torch.bfloat16) else a.numpy() for a in arrays]


def convert(job: dict, table: dict) -> None:
    """One job: its out.mlir, out.json and out.npz, or out.error."""
    try:
        program = torch.export.load(job["program"]).run_decompositions(table)
        if job["lift"]:
            names, arrays = leading_arguments(program)
            module = fx.stateless_fx_import(program.graph_module, output_type="stablehlo")
        else:
            names, arrays = [], []
            module = fx.export_and_import(program, output_type="stablehlo", decomposition_table={})
        with open(job["out"] + ".mlir", "w") as f:
            f.write(str(module))
        with open(job["out"] + ".json", "w") as f:
            json.dump(names, f)
        np.savez(job["out"] + ".npz", *arrays)
    except Exception:
        with open(job["out"] + ".error", "w") as f:
            f.write(traceback.format_exc())


def main(argv: list[str]) -> None:
    table = decompositions()
    for job in json.loads(argv[1]):
        convert(job, table)


if __name__ == "__main__":
    main(sys.argv)
