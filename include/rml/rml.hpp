// rml: the umbrella header. Everything: IR, registry, reference kernels,
// graph files, the Builder.
#pragma once

#include "rml/builder.hpp"
#include "rml/core/canonical.hpp"
#include "rml/core/error.hpp"
#include "rml/core/tensor.hpp"
#include "rml/emit/converters.hpp"
#include "rml/ir/graph.hpp"
#include "rml/ir/graph_io.hpp"
#include "rml/ir/safetensors.hpp"
#include "rml/exec/executor.hpp"
#include "rml/ref/evaluate.hpp"
#include "rml/registry.hpp"
