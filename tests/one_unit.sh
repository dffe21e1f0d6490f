#!/bin/sh
# tests/one_unit.sh OUT FILE...: writes OUT, a C++ file that compiles the
# test files FILE... as one translation unit. Compiling them one by one
# parses doctest, the standard library and the book's headers once per
# file, which was most of make test's time; here they are parsed once.
# First every header any of them includes (each is #pragma once, so the
# files' own includes below add nothing), then each file in a namespace of
# its own, so that two files' helpers of the same name do not meet.
set -eu
out="$1"
shift
tests_from_out="$(realpath --relative-to="$(dirname "$out")" tests)"
{
    echo "// Written by tests/one_unit.sh: the test files as one translation unit."
    # The includes, in order, once each; a quoted one is relative to tests/.
    sed -n 's/^[[:space:]]*#include[[:space:]]*//p' "$@" |
        awk -v t="$tests_from_out" '!seen[$0]++ {
            if (substr($0, 1, 1) == "\"") print "#include \"" t "/" substr($0, 2); else print "#include " $0 }'
    n=0
    for f in "$@"; do
        echo "namespace test_file_$n {"
        echo "#include \"$tests_from_out/$(basename "$f")\""
        echo "}"
        n=$((n + 1))
    done
} >"$out.tmp"
# Replaced only when it changed, so that make recompiles it only then; the
# Makefile runs this every time, so a test file removed or renamed is seen.
if cmp -s "$out.tmp" "$out"; then rm "$out.tmp"; else mv "$out.tmp" "$out"; fi
