// The opt-in split build. By default rml is header-only: every translation
// unit that includes rml/run.hpp compiles the loader, the planner and every
// kernel. Define RML_SPLIT in every translation unit of a program, and
// RML_IMPLEMENTATION as well in exactly one: rml/run.hpp then declares
// rml::load, rml::Model and rml::Executor only, and that one translation unit
// compiles their definitions, and all they need, once.
#pragma once

#if defined(RML_SPLIT) && !defined(RML_IMPLEMENTATION)
#define RML_DECLARATIONS_ONLY 1
#endif

// Marks the definitions split mode moves out of line: inline when rml is
// header-only, ordinary external functions in the implementation unit.
#ifdef RML_SPLIT
#define RML_SPLIT_INLINE
#else
#define RML_SPLIT_INLINE inline
#endif
