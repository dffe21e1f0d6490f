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
# The cases run on every core, each printing its verdict ("ok" or "FAILED:
# ...") into a file of its own, numbered in the order of the cases; the
# verdicts are printed in that order at the end. A chapter's quick runs run
# one after another, in order (the last one saves the JSON the closing table
# reads), and a chapter whose quick runs read {results} starts once every
# earlier chapter's quick runs are done.
#
#   tests/check_programs.sh BUILD_DIR
set -u
BIN="${1:-build}"
CASES="$(dirname "$0")/program_cases"
PLOTS="$(mktemp -d)"
RESULTS="$PLOTS/results"  # each quick run saves its JSON here; the closing table reads them
VERDICTS="$PLOTS/verdicts"
mkdir -p "$VERDICTS"
trap 'rm -rf "$PLOTS"' EXIT
JOBS="$(nproc 2>/dev/null || echo 2)"

ok()   { echo ok; }
fail() { echo "FAILED: $*"; }

# queue COMMAND...: COMMAND in the background, its verdicts in the next
# numbered files; at most $JOBS at once. barrier: waits for them all.
verdicts=0
running=0
queue() {
    if [ "$running" -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
    running=$((running + 1))
    "$@" &
}
barrier() { wait; running=0; }

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

# quick_runs VERDICT LINE...: the quick lines of one chapter, in order, the
# verdicts from file VERDICT on.
quick_runs() {
    local n="$1" line out status; shift
    for line in "$@"; do
        # shellcheck disable=SC2086
        out="$("$prog" ${line#quick:} --plot-dir "$PLOTS" --save-json "$RESULTS/$ch.json" --json)"
        status=$?
        if [ "$status" = 0 ] && is_json_object "$out"
        then ok; else fail "$prog ${line#quick:} --json did not print one JSON object"; fi >"$VERDICTS/$n"
        n=$((n + 1))
    done
}

for cases in "$CASES"/ch*.txt; do
    ch="$(basename "$cases" .txt)"
    prog="$BIN/$ch"
    verdicts=$((verdicts + 1))
    [ -x "$prog" ] || { fail "$prog is not built" >"$VERDICTS/$verdicts"; continue; }
    quick=()
    while IFS= read -r line; do
        [[ "$line" == quick:* ]] && quick+=("${line//\{results\}/$RESULTS}")
    done < "$cases"
    [[ "${quick[*]}" == *"$RESULTS"* ]] && barrier
    queue expect_exit 0 "$prog" --help >"$VERDICTS/$verdicts"
    [ ${#quick[@]} -gt 0 ] && queue quick_runs $((verdicts + 1)) "${quick[@]}"
    verdicts=$((verdicts + ${#quick[@]}))
    while IFS= read -r line; do
        line="${line//\{results\}/$RESULTS}"
        if [[ "$line" == *"{fifo}"* ]]; then
            # A FIFO of its own: a case that reads one keeps it open for a moment.
            mkfifo "$PLOTS/fifo$verdicts"
            line="${line//\{fifo\}/$PLOTS/fifo$verdicts}"
        fi
        case "$line" in
            bad:*) ;;
            bad-ulimit-v\ *:*) LIMIT="${line#bad-ulimit-v }"; LIMIT="${LIMIT%%:*}" ;;
            bad-ulimit-f\ *:*) FILE_LIMIT="${line#bad-ulimit-f }"; FILE_LIMIT="${FILE_LIMIT%%:*}" ;;
            *) continue ;;
        esac
        verdicts=$((verdicts + 1))
        queue bad_case "${line#*:}" >"$VERDICTS/$verdicts"
        LIMIT=""
        FILE_LIMIT=""
    done < "$cases"
done

# A standard stream named as the output is written where the stream is:
# `--save-json /dev/stdout >> log` appends the JSON to the log, after what
# was there and with the text report beside it, and never replaces the log.
log="$PLOTS/run.log"
echo "an earlier line" >"$log"
verdicts=$((verdicts + 1))
if "$BIN/ch03" --measure-tokens 16 --plot-dir "$PLOTS" --save-json /dev/stdout >>"$log" &&
    [ "$(head -n 1 "$log")" = "an earlier line" ] &&
    grep -q '^{"results_format": 1, "chapter": "03_memory_arithmetic"' "$log" &&
    grep -q '^Chapter 03' "$log"
then ok; else fail "ch03 --save-json /dev/stdout >> run.log did not append the JSON to the log"; fi >"$VERDICTS/$verdicts"
barrier

passed=0
failed=0
for ((n = 1; n <= verdicts; n++)); do
    if [ "$(cat "$VERDICTS/$n" 2>/dev/null)" = ok ]; then passed=$((passed + 1))
    else failed=$((failed + 1)); cat "$VERDICTS/$n" 2>/dev/null || echo "FAILED: case $n gave no verdict"; fi
done
echo "programs: $passed passed, $failed failed"
[ "$failed" = 0 ]
