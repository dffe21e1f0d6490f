#!/bin/bash
# Runs every command the book's READMEs show in ```sh blocks, from the
# top of the repository, and checks that each exits 0: the book cannot
# drift from its code. `make test` and `bash .ci/run` are skipped (CI runs
# them itself; running them from here would recurse), and so are commands
# that run the exercises' tests with --no-skip, which fail until solved. A
# command that two files show runs once.
# Then tests/check_readme_numbers.sh compares the deterministic lines the
# files quote with what the programs print, and shows by a self-test that
# a changed number fails.
#
#   tests/check_readme_commands.sh        (after make, from the repo root)
set -u
cd "$(dirname "$0")/.."
passed=0
failed=0
declare -A ran  # each distinct command once: `make run` appears in two READMEs
files=(README.md chapters/*/*.md)  # each chapter's EXERCISES.md, README.md, ...

for file in "${files[@]}"; do
    [ -f "$file" ] || continue
    in_sh=0
    while IFS= read -r line; do
        case "$line" in
            '```sh'*) in_sh=1; continue ;;
            '```'*)   in_sh=0; continue ;;
        esac
        [ "$in_sh" = 1 ] || continue
        command="${line%%#*}"                         # drop a trailing comment
        command="${command%"${command##*[![:space:]]}"}"  # and trailing spaces
        [ -n "$command" ] || continue
        case "$command" in
            "make test"|"make sanitize"|"bash .ci/run") continue ;;
            # Exercise tests are meant to fail until the reader solves them.
            *--no-skip*) continue ;;
        esac
        [ -z "${ran[$command]+x}" ] || continue
        ran[$command]=1
        echo "==> $file: $command"
        if bash -c "$command" >/dev/null 2>/tmp/readme_command_stderr; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1))
            echo "FAILED: $command (from $file)"
            head -5 /tmp/readme_command_stderr
        fi
    done < "$file"
done

echo "README commands: $passed passed, $failed failed"

# The numbers the files quote, against what the programs print now, and
# the proof that this check bites (a changed number must fail it).
numbers=0
bash tests/check_readme_numbers.sh || numbers=1
bash tests/check_readme_numbers.sh --self-test || numbers=1
[ "$failed" = 0 ] && [ "$numbers" = 0 ]
