// rml/run.hpp: everything needed to load and run a model, and nothing more:
// no xtensor, no reference kernels, no Builder. The header a C++
// application that only runs models includes.
#pragma once

#include "rml/exec/executor.hpp"
#include "rml/exec/model.hpp"
#include "rml/ir/graph_io.hpp"
