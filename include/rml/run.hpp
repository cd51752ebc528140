// rml/run.hpp: everything needed to load and run a model, and nothing more:
// no JSON library, no reference kernels, no Builder. The header a C++
// application that only runs models includes.
//
// Split mode (rml/core/split.hpp): with RML_SPLIT defined, this header
// declares rml::load, rml::Model and rml::Executor only, and the translation
// unit that also defines RML_IMPLEMENTATION compiles them: one file per
// program holding those two lines, `#define RML_IMPLEMENTATION` and the
// include of this header (examples/consumer/split/rml_implementation.cpp).
#pragma once

#include "rml/exec/executor.hpp"
#include "rml/exec/model.hpp"
#ifndef RML_DECLARATIONS_ONLY
#include "rml/ir/graph_read.hpp"
#endif
