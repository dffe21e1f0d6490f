#!/bin/bash
# Runs every chapter program the way a reader would, and checks the promises
# the book makes about them: --help exits 0, --json prints one JSON object,
# and bad input gets exactly one line on stderr and exit status 2.
# The cases for build/chNN are in tests/program_cases/chNN.txt, one a line:
#
#   quick: ARGS                a fast run; --json must print one JSON object
#   bad: ARGS                  exit status 2 and exactly one line on stderr
#   bad: ARGS => TEXT          ... and that line contains TEXT (the cause, not only the status)
#   bad-ulimit-v KIB: ARGS     a bad case run under `ulimit -v KIB` (the memory a process may use)
#   bad-ulimit-f BLOCKS: ARGS  a bad case run under `ulimit -f BLOCKS` (the largest file it may write)
#
# In ARGS, {results} is the folder the quick runs save their JSON in,
# {fifo} a FIFO (named pipe) no program reads, and \n a newline inside an
# argument. Every bad case ends within 60 s or fails (a hang is a failure).
#
#   tests/check_programs.sh BUILD_DIR
set -u
BIN="${1:-build}"
CASES="$(dirname "$0")/program_cases"
PLOTS="$(mktemp -d)"
RESULTS="$PLOTS/results"  # each quick run saves its JSON here; the closing table reads them
FIFO="$PLOTS/fifo"        # a named pipe nothing reads
mkfifo "$FIFO"
trap 'rm -rf "$PLOTS"' EXIT
passed=0
failed=0

ok()   { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAILED: $*"; }

# expect_exit STATUS PROGRAM ARGS...: the exit status, and for 2 exactly one
# stderr line, holding $WANT if that is set; run under `ulimit -v $LIMIT` if
# that is set (`ulimit -f $FILE_LIMIT` if that is), for at most 60 s where
# `timeout` is installed.
WANT=""
LIMIT=""
FILE_LIMIT=""
run_limited() {
    if [ -n "$LIMIT" ]; then ulimit -v "$LIMIT" || exit 125; fi
    if [ -n "$FILE_LIMIT" ]; then ulimit -f "$FILE_LIMIT" || exit 125; fi
    if command -v timeout >/dev/null; then exec timeout 60 "$@"; else exec "$@"; fi
}
expect_exit() {
    local want="$1"; shift
    local err status lines
    err="$( (run_limited "$@") 2>&1 >/dev/null)"; status=$?
    if [ "$status" != "$want" ]; then fail "$* exited $status, expected $want: $err"; return; fi
    lines="$(printf '%s' "$err" | grep -c '')"  # 0 for no output at all
    if [ "$want" = 2 ] && [ "$lines" != 1 ]; then
        fail "$* printed $lines lines on stderr, expected one: $err"; return
    fi
    if [ -n "$WANT" ] && [[ "$err" != *"$WANT"* ]]; then
        fail "$* said \"$err\", which does not contain \"$WANT\""; return
    fi
    ok
}

# bad_case LINE: ARGS [=> TEXT] of a bad: line, split into words, \n made
# a newline in each, and checked by expect_exit.
bad_case() {
    local rest="$1" args=() i
    WANT=""
    if [[ "$rest" == *" => "* ]]; then WANT="${rest#* => }"; rest="${rest%% => *}"; fi
    read -ra args <<<"$rest"
    for i in "${!args[@]}"; do args[i]="${args[i]//\\n/$'\n'}"; done
    expect_exit 2 "$prog" "${args[@]}"
    WANT=""
    LIMIT=""
    FILE_LIMIT=""
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
        line="${line//\{fifo\}/$FIFO}"
        case "$line" in
            quick:*)
                # shellcheck disable=SC2086
                out="$("$prog" ${line#quick:} --plot-dir "$PLOTS" --save-json "$RESULTS/$ch.json" --json)"
                status=$?
                if [ "$status" = 0 ] && is_json_object "$out"
                then ok; else fail "$prog ${line#quick:} --json did not print one JSON object"; fi ;;
            bad:*)
                bad_case "${line#bad:}" ;;
            bad-ulimit-v\ *:*)
                LIMIT="${line#bad-ulimit-v }"; LIMIT="${LIMIT%%:*}"
                bad_case "${line#*:}" ;;
            bad-ulimit-f\ *:*)
                FILE_LIMIT="${line#bad-ulimit-f }"; FILE_LIMIT="${FILE_LIMIT%%:*}"
                bad_case "${line#*:}" ;;
        esac
    done < "$cases"
done

# A standard stream named as the output is written where the stream is:
# `--save-json /dev/stdout >> log` appends the JSON to the log, after what
# was there and with the text report beside it, and never replaces the log.
log="$PLOTS/run.log"
echo "an earlier line" >"$log"
if "$BIN/ch03" --measure-tokens 16 --plot-dir "$PLOTS" --save-json /dev/stdout >>"$log" &&
    [ "$(head -n 1 "$log")" = "an earlier line" ] &&
    grep -q '^{"results_format": 1, "chapter": "03_memory_arithmetic"' "$log" &&
    grep -q '^Chapter 03' "$log"
then ok; else fail "ch03 --save-json /dev/stdout >> run.log did not append the JSON to the log"; fi

echo "programs: $passed passed, $failed failed"
[ "$failed" = 0 ]
