// The one translation unit of a split-mode program that compiles rml: the
// loader, the planner and every kernel. Every other file defines RML_SPLIT
// too and sees rml/run.hpp's declarations only (a few seconds to compile).
#define RML_IMPLEMENTATION
#include <rml/run.hpp>
