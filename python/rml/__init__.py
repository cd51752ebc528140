"""rml for Python: the C++ Builder, graph files and Executor.

Exporters walk a framework's graph and call the Builder once per lowered op;
shapes, folding and example values all come from the C++ op registry, so no op
semantics are written twice.
"""
from ._rml import Builder, Error, ErrorCode, ExportError, Model, load, op_names, op_schema, read_tensors, write_tensors

__all__ = ["Builder", "Error", "ErrorCode", "ExportError", "Model", "load", "op_names", "op_schema", "read_tensors", "write_tensors"]
