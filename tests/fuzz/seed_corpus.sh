#!/bin/bash
# Seeds a fuzz harness's corpus with a few valid inputs, so that libFuzzer
# starts from files the reader accepts instead of finding the format by
# chance. The seeds are in tests/fuzz/corpus/NAME/, one a file:
#
#   *.json    chapter 06's JSON: copied as it is
#   *.args    the flag parser's arguments, one a line: joined by NUL bytes,
#             as flags_fuzz.cpp splits them
#   *.flags   a model shape as chapter 02's flags: chapter 02 writes that
#             model's checkpoint (checkpoint_fuzz) or its byte-level
#             tokenizer (tokenizer_fuzz, after the two bytes that give the
#             harness the vocabulary size), so the seeds are the book's own
#             writers' files (*.bin files are never committed)
#
#   tests/fuzz/seed_corpus.sh NAME CORPUS_DIR CH02_PROGRAM
set -euo pipefail
name="$1" corpus="$2" ch02="$3"
seeds="$(dirname "$0")/corpus/$name"
ls "$seeds"/* >/dev/null 2>&1 || { echo "no seed corpus in $seeds" >&2; exit 1; }
mkdir -p "$corpus"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for seed in "$seeds"/*; do
    base="$(basename "$seed")"
    out="$corpus/seed-${base%.*}"
    case "$seed" in
        *.json) cp "$seed" "$out" ;;
        *.args) printf '%s' "$(cat "$seed")" | tr '\n' '\0' >"$out" ;;
        *.flags)
            # shellcheck disable=SC2046
            shape=($(cat "$seed"))
            run=("$ch02" "${shape[@]}" --prompt-len 2 --answer-len 2 --repeats 1 --plot-dir "$scratch")
            case "$name" in
                checkpoint_fuzz) "${run[@]}" --save-checkpoint "$out" >/dev/null ;;
                tokenizer_fuzz)
                    "${run[@]}" --save-tokenizer "$scratch/tokenizer" >/dev/null
                    vocab=""
                    for ((i = 0; i < ${#shape[@]}; ++i)); do
                        [ "${shape[i]}" = --vocab ] && vocab="${shape[i + 1]}"
                    done
                    v=$((vocab - 1))  # the harness's vocabulary: 1 + (byte0 | byte1 << 8) % 4096
                    {
                        printf "\\$(printf %03o $((v & 255)))\\$(printf %03o $((v >> 8)))"
                        cat "$scratch/tokenizer"
                    } >"$out" ;;
                *) echo "$seed: a .flags seed is for checkpoint_fuzz or tokenizer_fuzz" >&2; exit 1 ;;
            esac ;;
        *) echo "$seed: not a seed this script knows (.json, .args, .flags)" >&2; exit 1 ;;
    esac
done
