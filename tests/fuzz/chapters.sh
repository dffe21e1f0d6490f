#!/bin/bash
# make fuzz's chapter harness: every chapter's program, built with
# AddressSanitizer and UBSan (make fuzz builds them in build/sanitize/), run
# again and again with a few flags drawn at random from its own --help, on
# top of a small fast run (the base of tests/flag_cases/chNN.txt: a tiny
# model, a dozen requests, --cost-model analytic). A value is drawn from
# what the help says of the flag: mostly small valid values, often a
# boundary (the range's ends and one past them, 0, 1, -1), sometimes
# something no flag takes (a number past 64 bits, an empty string, "abc",
# "0x10", "1.5"); files are the harness's own model, tokenizer and results,
# missing, empty, random bytes, a folder, a device, or files in the run's
# own folder (a copy of the model there may be named as input and output).
#
# A run fails the harness when
#   - a sanitizer reports anything (the run then stops, exit status 99);
#   - it exits with a status other than 0 or 2 (a crash, an abort);
#   - it exits 2 without exactly one line on stderr;
#   - it exits 0 with nothing on stdout.
# A run still going after RUN_SECONDS (20) is killed and counted as slow,
# not as a failure: a valid flag may ask for a long run (a million
# requests); each slow command is printed.
#
# The draws come from bash's RANDOM seeded with SEED, so a seed gives the
# same runs (each program's nth run is the same); each failure prints its
# command whole. Runs are started until SECONDS have passed.
#
#   tests/fuzz/chapters.sh SANITIZED_BUILD_DIR [SECONDS [SEED]]
#   VERBOSE=1 tests/fuzz/chapters.sh ...   also prints every run's drawn flags and stderr
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$(cd "${1:?usage: chapters.sh SANITIZED_BUILD_DIR [SECONDS [SEED]]}" && pwd)" || exit 1
budget="${2:-60}"
seed="${3:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}"
run_seconds="${RUN_SECONDS:-20}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# allocator_may_return_null: a huge allocation throws std::bad_alloc, as in
# the release build, instead of stopping the run; exitcode: a report is
# never mistaken for exit status 2.
export ASAN_OPTIONS="allocator_may_return_null=1:exitcode=99:detect_leaks=${DETECT_LEAKS:-1}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=99"

programs=()
for f in "$BIN"/ch[0-9][0-9]; do [ -x "$f" ] && programs+=("$(basename "$f")"); done
[ ${#programs[@]} -gt 0 ] || { echo "chapter fuzz: no programs in $BIN"; exit 1; }

# ------------------------------------------------------------ fixtures
# A model and its tokenizer (chapter 02 writes them), chapter 06's results
# folder, a file of random bytes, a folder.
F="$TMP/fixtures"
mkdir -p "$F/results-a" "$F/folder"
tiny=(--layers 1 --dim 8 --heads 2 --kv-heads 1 --ffn 8 --max-seq 64 --prompt-len 2 --answer-len 3 --repeats 1)
fixture() { "$@" --plot-dir "$TMP/fixture-plots" >/dev/null 2>"$TMP/fixture.err" ||
                { echo "chapter fuzz: a fixture's run failed: $*"; cat "$TMP/fixture.err"; exit 1; }; }
fixture "$BIN/ch02" "${tiny[@]}" --vocab 259 --seed 7 --save-checkpoint "$F/model.bin" \
    --save-tokenizer "$F/tokenizer.bin"
fixture "$BIN/ch02" "${tiny[@]}" --vocab 16 --save-json "$F/results-a/ch02.json"
fixture "$BIN/ch03" --measure-tokens 16 --save-json "$F/results-a/ch03.json"
fixture "$BIN/ch05" --layers 1 --dim 8 --heads 2 --kv-heads 1 --ffn 8 --vocab 16 --max-seq 64 \
    --requests 4 --prompt-min 2 --prompt-max 4 --answer-len 2 --answer-max 4 \
    --cost-model analytic --save-json "$F/results-a/ch05.json"
LC_ALL=C awk -v seed="$seed" 'BEGIN { srand(seed); for (i = 0; i < 3000; i++) printf "%c", int(rand() * 256) }' \
    >"$F/noise.bin"

# ------------------------------------------------------------ the draws
# Each sets $value. No draw runs in a subshell: bash seeds a subshell's
# RANDOM afresh, and the seed would then not give the same runs.
pick() { shift $((RANDOM % $#)); value="$1"; }  # pick WORDS...: one of them

# A whole number for a flag of range LO..HI.
whole_number() {
    local lo="$1" hi="$2"
    case $((RANDOM % 32)) in
        [0-9] | 1[0-9])  # small and valid
            value=$((lo + RANDOM % 16))
            [ ${#hi} -lt 18 ] && [ "$value" -gt "$hi" ] && value="$hi" ;;
        2[01]) pick 2 4 8 16 32 64 ;;
        22) value="$lo" ;;
        23) value="$hi" ;;
        24) value=$((lo - 1)) ;;
        25) if [ ${#hi} -lt 18 ]; then value=$((hi + 1)); else value=18446744073709551616; fi ;;
        26) pick 0 1 -1 ;;
        27) pick 18446744073709551616 99999999999999999999999 -9223372036854775809 ;;
        28) value="" ;;
        29) pick abc 1.5 0x10 +5 1e3 " 5" "5 " ;;
        *) pick 1 2 3 ;;
    esac
}

# A number with a point for a flag of range LO..HI.
real_number() {
    local lo="$1" hi="$2"
    case $((RANDOM % 20)) in
        [0-9] | 1[01]) pick 0.01 0.05 0.1 0.25 0.3 0.5 0.75 1 2 3 5 10 ;;
        12) value="$lo" ;;
        13) value="$hi" ;;
        14) pick 0 1 -1 ;;
        15) pick 1e-310 4.9e-324 1e308 1e309 -0 ;;
        16) pick nan inf -inf NaN ;;
        17) value="" ;;
        18) pick abc .5 5. 0x1p3 "1 " ;;
        *) pick 0.2 0.4 4 ;;
    esac
}

# A file a flag reads. $work/model.bin is a copy an output may name too.
input_file() {
    case $((RANDOM % 12)) in
        [0-4]) pick "$F/model.bin" "$F/tokenizer.bin" "$F/results-a" "$work/model.bin" ;;
        5) pick "$F/results-a/ch02.json" "$F/results-a/ch05.json" ;;
        6) value="" ;;
        7) pick /nonexistent/model.bin "$F/missing" ;;
        8) pick /dev/null /dev/zero / "$F/folder" ;;
        9) value="$F/noise.bin" ;;
        10) value="$F/two"$'\n'"lines" ;;
        *) value="$work/a-file" ;;
    esac
}

# A file or folder a flag writes: in the run's own folder $work, or a device.
output_file() {
    case $((RANDOM % 12)) in
        [0-5]) pick "$work/out.json" "$work/out.bin" "$work/sub/dir/out" "$work/plots" ;;
        6) value="" ;;
        7) pick /dev/null /dev/full /dev/stdout /dev/stderr ;;
        8) pick / "$work" ;;
        9) value="$work/a-file/below" ;;  # a-file is a file: nothing can be made below it
        10) value="$work/two"$'\n'"lines" ;;
        *) value="$work/model.bin" ;;  # which an input may name too
    esac
}

# Prompt text.
prompt_text() {
    case $((RANDOM % 8)) in
        [0-2]) pick hello "Once upon a time" a ;;
        3) value="" ;;
        4) printf -v value '%3000s' x ;;
        5) value=$'bytes \xff\xfe not UTF-8' ;;
        6) value=$'two\nlines' ;;
        *) value=$'\xf0\x9f\x99\x82 and \xc3\xa9' ;;
    esac
}

# flag_words NAME KIND LO HI CHOICES: appends to $words what sets the flag.
flag_words() {
    local name="$1" kind="$2" lo="$3" hi="$4" choices="$5"
    case "$kind" in
        switch)
            if [ $((RANDOM % 10)) = 0 ]; then words+=("--$name=1"); else words+=("--$name"); fi
            return ;;
        whole) whole_number "$lo" "$hi" ;;
        real) real_number "$lo" "$hi" ;;
        choice)
            # shellcheck disable=SC2086
            case $((RANDOM % 12)) in 10) value="" ;; 11) value="bogus" ;; *) pick $choices ;; esac ;;
        input) input_file ;;
        output) output_file ;;
        text) prompt_text ;;
    esac
    # Mostly "--name value", sometimes "--name=value".
    if [ $((RANDOM % 4)) = 0 ]; then words+=("--$name=$value"); else words+=("--$name" "$value"); fi
}

# ------------------------------------------------------------ the flags
# flags_of PROGRAM: one line per flag --help lists: NAME KIND LO HI CHOICES.
flags_of() {
    local line name default range lo hi
    "$BIN/$1" --help | while IFS= read -r line; do
        [[ "$line" =~ ^\ \ --([a-z0-9-]+)\ +.*\(default\ (.*)\)$ ]] || continue
        name="${BASH_REMATCH[1]}" default="${BASH_REMATCH[2]}"
        [ "$name" = help ] && continue
        range=""; [[ "$default" == *"; "* ]] && range="${default#*; }" default="${default%%; *}"
        if [[ "$range" == *".."* ]]; then
            lo="${range%%..*}" hi="${range#*..}"
            if [[ "$default$lo$hi" == *[.e]* ]]; then echo "$name real $lo $hi -"
            else echo "$name whole $lo $hi -"; fi
        elif [[ "$range" == *" | "* ]]; then
            echo "$name choice - - ${range// | / }"
        elif [ "$default" = off ]; then
            echo "$name switch - - -"
        elif [[ "$name" == save-* || "$name" == plot-dir ]]; then
            echo "$name output - - -"
        elif [ "$name" = prompt ]; then
            echo "$name text - - -"
        else
            echo "$name input - - -"
        fi
    done
}

declare -A flags base
for ch in "${programs[@]}"; do
    flags[$ch]="$(flags_of "$ch")"
    b="$(sed -n 's/^base: //p' "$here/flag_cases/$ch.txt" 2>/dev/null)"
    base[$ch]="${b//\{fixtures\}/$F}"
done

# ------------------------------------------------------------ the runs
runs=0 failures=0 slow=0 exit0=0 exit2=0
report() {  # report WHAT: a failure, with its command and stderr
    failures=$((failures + 1))
    [ "$failures" -le 10 ] || return
    echo "FUZZ FAILED: $1"
    printf '  command:'; printf ' %q' "$prog" "${args[@]}"; echo
    sed 's/^/  | /' "$work.err" | head -n 40
}

# Each program gets the same share of the time, not the same number of runs
# (chapter 04 measures the machine on every run; chapter 05 simulates a
# dozen requests in milliseconds): the next run is the program that has
# run for the shortest time so far. The nth run of a program draws from
# RANDOM seeded by the seed, the program and n, so that it is the same run
# whatever ran before it.
declare -A used done_runs
for ch in "${programs[@]}"; do used[$ch]=0 done_runs[$ch]=0; done
micros() { local t="${EPOCHREALTIME/./}"; echo "${t#0}"; }
SECONDS=0
while [ "$SECONDS" -lt "$budget" ]; do
    ch="${programs[0]}"
    for c in "${programs[@]}"; do [ "${used[$c]}" -lt "${used[$ch]}" ] && ch="$c"; done
    RANDOM=$(((seed * 7919 + 10#${ch#ch} * 104729 + done_runs[$ch]) % 2147483647))
    done_runs[$ch]=$((done_runs[$ch] + 1))
    prog="$BIN/$ch"
    work="$TMP/run"
    rm -rf "$work" "$work.out" "$work.err"
    mkdir -p "$work"
    : >"$work/a-file"
    cp "$F/model.bin" "$work/model.bin"
    read -ra args <<<"${base[$ch]}"
    base_words=("${args[@]}")
    # One to three flags, each drawn with its value.
    mapfile -t lines <<<"${flags[$ch]}"
    n=$((1 + RANDOM % 3))
    for ((k = 0; k < n; k++)); do
        read -r name kind lo hi choices <<<"${lines[$((RANDOM % ${#lines[@]}))]}"
        words=()
        flag_words "$name" "$kind" "$lo" "$hi" "$choices"
        args+=("${words[@]}")
    done
    [ $((RANDOM % 3)) = 0 ] && args+=(--json)
    runs=$((runs + 1))
    start="$(micros)"
    (cd "$work" && exec timeout -k 5 "$run_seconds" "$prog" "${args[@]}") >"$work.out" 2>"$work.err"
    status=$?
    used[$ch]=$((used[$ch] + $(micros) - start))
    if [ -n "${VERBOSE:-}" ]; then
        printf 'exit %s:' "$status"; printf ' %q' "$ch" "${args[@]:${#base_words[@]}}"
        printf '\n  %s\n' "$(head -c 200 "$work.err")"
    fi
    if [ "$status" = 124 ] || [ "$status" = 137 ]; then
        slow=$((slow + 1))
        printf 'slow (over %s s):' "$run_seconds"; printf ' %q' "$prog" "${args[@]}"; echo
    elif grep -qE 'Sanitizer|runtime error:' "$work.err"; then
        report "$ch: a sanitizer reported (exit status $status)"
    elif [ "$status" = 2 ]; then
        lines_err="$(grep -c '' "$work.err")"
        if [ "$lines_err" = 1 ]; then exit2=$((exit2 + 1))
        else report "$ch: exit status 2 with $lines_err lines on stderr"; fi
    elif [ "$status" = 0 ]; then
        if [ -s "$work.out" ]; then exit0=$((exit0 + 1))
        else report "$ch: exit status 0 with nothing on stdout"; fi
    else
        report "$ch: exit status $status"
    fi
done

each=""
for ch in "${programs[@]}"; do each+=" $ch ${done_runs[$ch]},"; done
echo "chapter fuzz: $runs runs of ${#programs[@]} programs in $SECONDS s, seed $seed:" \
    "$exit0 exited 0 with a report, $exit2 exited 2 with one line, $slow slow, $failures failures" \
    "(runs:${each%,})"
[ "$failures" = 0 ]
