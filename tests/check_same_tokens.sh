#!/bin/bash
# The same flags must give the same tokens and the same logits, bit for bit,
# on every machine. This builds chapter 02 again for the plain x86-64 (or
# ARM64) baseline, without -march=native, so its vector code is entirely
# different (SSE2 instead of AVX-512 here), and, where clang++ is installed,
# once more with Clang; then checks that every build generates the same
# answer and the same logits at every step (the JSON's logits_fnv1a64: an
# FNV-1a 64 digest of every logit's bits, in order, common/kit/digest.h),
# and that within each build the cached and naive logits agree (largest
# difference zero).
#
#   tests/check_same_tokens.sh        (from the repo root)
set -euo pipefail
cd "$(dirname "$0")/.."
answer() {  # the JSON fields that must not depend on the machine or compiler
    "$1" --repeats 1 --answer-len 64 --plot-dir build/plots-check --json |
        python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["max_logit_difference"] == 0, "cached and naive logits differ"; print("tokens", d["tokens"], "logits", d["logits_fnv1a64"])'
}
make --no-print-directory -s ch02 >/dev/null
native="$(answer build/ch02)"
echo "native build: logits digest ${native##* logits }"
builds=("ARCH= BUILD=build/generic")
command -v clang++ >/dev/null && builds+=("CXX=clang++ BUILD=build/clang")
passed=0
failed=0
for build in "${builds[@]}"; do
    # shellcheck disable=SC2086
    make --no-print-directory -s $build ch02 >/dev/null
    dir="${build##*BUILD=}"
    this="$(answer "$dir/ch02")"
    if [ "$this" = "$native" ]; then
        passed=$((passed + 1))
        echo "same tokens and logits: $build"
    else
        failed=$((failed + 1))
        if [ "${this%% logits *}" = "${native%% logits *}" ]; then
            echo "DIFFERENT logits (same tokens): $build: ${this##* logits } against ${native##* logits }"
        else
            echo "DIFFERENT tokens and logits: $build"
        fi
    fi
done
echo "same tokens and logits across builds: $passed passed, $failed failed"
[ "$failed" = 0 ]
