#!/bin/bash
# The same flags must give the same tokens on every machine. This builds
# chapter 02 a second time for the plain x86-64 (or ARM64) baseline, without
# -march=native, so its vector code is entirely different (SSE2 instead of
# AVX-512 here), and checks that both builds generate the same answer and
# agree on the largest cached-vs-naive logit difference (zero).
#
#   tests/check_same_tokens.sh        (from the repo root, after make ch02)
set -euo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory -s ch02 >/dev/null
make --no-print-directory -s ARCH= BUILD=build/generic ch02 >/dev/null
answer() {  # the JSON fields that must not depend on the machine
    "$1" --repeats 1 --answer-len 64 --plot-dir build/generic/plots --json |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["tokens"], d["max_logit_difference"])'
}
native="$(answer build/ch02)"
generic="$(answer build/generic/ch02)"
if [ "$native" = "$generic" ]; then
    echo "same tokens with and without -march=native: 1 passed, 0 failed"
else
    printf 'native:  %s\ngeneric: %s\n' "$native" "$generic"
    echo "same tokens with and without -march=native: 0 passed, 1 failed"
    exit 1
fi
