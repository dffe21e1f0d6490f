#!/bin/bash
# Runs every command the book's READMEs show in ```sh blocks, from the
# top of the repository, and checks that each exits 0: the book cannot
# drift from its code. Each distinct command runs once:
#   - a command that several files show runs once;
#   - `make run` runs every chapter's default run, so a bare `./build/chNN`
#     is not run again: make run's output stands for it;
#   - `make test`, `make sanitize` and `bash .ci/run` are skipped (CI runs
#     them itself; running them from here would recurse), and so is
#     `make validate` (minutes of real queues: CI runs ./build/validate
#     once, briefly), and so are commands that run the exercises' tests
#     with --no-skip, which fail until solved.
# Each command's output is kept in build/readme_outputs/, where
# tests/check_readme_numbers.sh, run next, reads it instead of running the
# command again: it compares the deterministic lines the files quote with
# what the programs print, and shows by a self-test that a changed number
# fails.
#
#   tests/check_readme_commands.sh        (after make, from the repo root)
set -u
cd "$(dirname "$0")/.."
passed=0
failed=0
skipped=0
outputs="build/readme_outputs"  # one file per command, named by its SHA-1
rm -rf "$outputs"
mkdir -p "$outputs"
export README_OUTPUTS="$PWD/$outputs"
kept() { printf '%s' "$1" | sha1sum | cut -c1-40; }

# Every command of every ```sh block, in order, each once.
files=(README.md chapters/*/*.md)  # each chapter's EXERCISES.md, README.md, ...
declare -A seen
commands=()
from=()  # the file that shows each first
for file in "${files[@]}"; do
    [ -f "$file" ] || continue
    in_sh=0
    while IFS= read -r line; do
        case "$line" in
            '```sh'*) in_sh=1; continue ;;
            '```'*)   in_sh=0; continue ;;
        esac
        [ "$in_sh" = 1 ] || continue
        command="${line%%#*}"                             # drop a trailing comment
        command="${command%"${command##*[![:space:]]}"}"  # and trailing spaces
        [ -n "$command" ] || continue
        [ -z "${seen[$command]+x}" ] || continue
        seen[$command]=1
        commands+=("$command")
        from+=("$file")
    done < "$file"
done

# make run first, if a file shows it: its chapters' outputs are kept one by
# one, as the outputs of the bare ./build/chNN it ran.
make_run=0
[ -n "${seen[make run]+x}" ] && make_run=1
if [ "$make_run" = 1 ]; then
    echo "==> make run"
    if make run >"$outputs/make_run.log" 2>&1; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAILED: make run"
        tail -5 "$outputs/make_run.log"
    fi
    awk -v dir="$outputs" '
        /^==> build\/ch[0-9][0-9]$/ { sub(/^==> build\//, ""); name = $0; next }
        name != "" { print > (dir "/chapter_" name) }' "$outputs/make_run.log"
    for out in "$outputs"/chapter_ch*; do
        [ -f "$out" ] || continue
        mv "$out" "$outputs/$(kept "./build/${out##*/chapter_}")"
    done
fi

for i in "${!commands[@]}"; do
    command="${commands[$i]}"
    file="${from[$i]}"
    case "$command" in
        "make run") continue ;;  # ran above
        "make test"|"make sanitize"|"bash .ci/run"|"make validate"*|"./build/validate"*)
            skipped=$((skipped + 1)); continue ;;
        # Exercise tests are meant to fail until the reader solves them.
        *--no-skip*) skipped=$((skipped + 1)); continue ;;
    esac
    if [ "$make_run" = 1 ] && [[ "$command" =~ ^\./build/ch[0-9][0-9]$ ]]; then
        skipped=$((skipped + 1)); continue  # make run ran it
    fi
    echo "==> $file: $command"
    out="$outputs/$(kept "$command")"
    if bash -c "$command" >"$out.stdout" 2>"$out.stderr"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAILED: $command (from $file)"
        head -5 "$out.stderr"
    fi
    cat "$out.stdout" "$out.stderr" >"$out"
    rm -f "$out.stdout" "$out.stderr"
done

echo "README commands: $passed passed, $failed failed, $skipped not run here"

# The numbers the files quote, against what the programs printed above,
# and the proof that this check bites (a changed number must fail it).
numbers=0
bash tests/check_readme_numbers.sh || numbers=1
bash tests/check_readme_numbers.sh --self-test || numbers=1
[ "$failed" = 0 ] && [ "$numbers" = 0 ]
