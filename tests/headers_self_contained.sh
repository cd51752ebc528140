#!/usr/bin/env bash
# Every public header compiles on its own: a translation unit holding only
# `#include "rml/X"` passes the compiler's syntax check (-fsyntax-only:
# includes, declarations and templates' definitions are checked; nothing is
# instantiated or generated). ctest: headers_self_contained.
# usage: tests/headers_self_contained.sh [COMPILER] [JOBS]
set -euo pipefail
cxx=${1:-g++}
jobs=${2:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/include"
failed=$(find rml -name '*.hpp' | sort | xargs -P "$jobs" -I{} sh -c \
  'printf "#include \"%s\"\n" "$1" | "$0" -std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic -Werror -I. -x c++ - 2>/dev/null || echo "$1"' "$cxx" {})
count=$(find rml -name '*.hpp' | wc -l)
if [ -n "$failed" ]; then
  echo "headers that do not compile on their own:"; echo "$failed"
  exit 1
fi
echo "$count headers, each compiles on its own ($cxx)"
