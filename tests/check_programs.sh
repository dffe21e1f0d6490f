#!/bin/bash
# Runs every chapter program the way a reader would, and checks the promises
# the book makes about them: --help exits 0, --json prints one JSON object,
# and bad input gets exactly one line on stderr and exit status 2.
# The cases for build/chNN are in tests/program_cases/chNN.txt.
#
#   tests/check_programs.sh BUILD_DIR
set -u
BIN="${1:-build}"
CASES="$(dirname "$0")/program_cases"
PLOTS="$(mktemp -d)"
RESULTS="$PLOTS/results"  # each quick run saves its JSON here; the closing table reads them
trap 'rm -rf "$PLOTS"' EXIT
passed=0
failed=0

ok()   { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAILED: $*"; }

# expect_exit STATUS PROGRAM ARGS...: the exit status, and for 2 exactly one stderr line.
expect_exit() {
    local want="$1"; shift
    local err status lines
    err="$("$@" 2>&1 >/dev/null)"; status=$?
    if [ "$status" != "$want" ]; then fail "$* exited $status, expected $want"; return; fi
    lines="$(printf '%s' "$err" | grep -c '')"  # 0 for no output at all
    if [ "$want" = 2 ] && [ "$lines" != 1 ]; then
        fail "$* printed $lines lines on stderr, expected one: $err"; return
    fi
    ok
}

# One JSON object: parsed by Python where it is installed; otherwise at
# least one line that opens and closes an object.
is_json_object() {
    if command -v python3 >/dev/null; then
        python3 -c 'import json,sys; assert isinstance(json.loads(sys.stdin.read()), dict)' <<<"$1" 2>/dev/null
    else
        [ "$(printf '%s\n' "$1" | wc -l)" = 1 ] && [[ "$1" == "{"*"}" ]]
    fi
}

for cases in "$CASES"/ch*.txt; do
    ch="$(basename "$cases" .txt)"
    prog="$BIN/$ch"
    [ -x "$prog" ] || { fail "$prog is not built"; continue; }
    expect_exit 0 "$prog" --help
    while IFS= read -r line; do
        line="${line//\{results\}/$RESULTS}"
        case "$line" in
            quick:*)
                # shellcheck disable=SC2086
                out="$("$prog" ${line#quick:} --plot-dir "$PLOTS" --save-json "$RESULTS/$ch.json" --json)"
                status=$?
                if [ "$status" = 0 ] && is_json_object "$out"
                then ok; else fail "$prog ${line#quick:} --json did not print one JSON object"; fi ;;
            bad:*)
                # shellcheck disable=SC2086
                expect_exit 2 "$prog" ${line#bad:} ;;
        esac
    done < "$cases"
done

echo "programs: $passed passed, $failed failed"
[ "$failed" = 0 ]
