"""The StableHLO importer's parts other than its op tables and walk (`rml.from_stablehlo`):
module text parsing, the producers of StableHLO text, and the torch-mlir worker."""
