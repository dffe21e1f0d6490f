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
# The state the book keeps beside a program (the kernel plan, step-cost
# calibrations) is input too: the programs run from links in a folder of
# the harness's own, and before one run in three that state is damaged
# (empty, huge, a folder, a FIFO, random bytes; a calibration's prices not
# finite, below zero or absurd, the run then pricing by them), and put back
# after. Only what the run reads is damaged, and only runs that read it
# count as planted.
#
# Each run's standard error is a terminal (script(1) gives it one), so its
# progress shows as it would to a reader.
#
# A run fails the harness when
#   - a sanitizer reports anything (the run then stops, exit status 99);
#   - it exits with a status other than 0 or 2 (a crash, an abort);
#   - it exits 2 without exactly one line on stderr (progress lines aside);
#   - it exits 0 with nothing on stdout, or with inf or nan in its report
#     or its plots, or with the prices of a damaged calibration reused;
#   - it shows nothing on its terminal for QUIET_SECONDS (20): no progress,
#     unless the --help line of a flag drawn for it says its value may be
#     slow; such a run is killed and counted as quiet, its command printed.
# A run still going after MOST_SECONDS (40), its progress showing, is
# killed and counted as slow, not as a failure: a valid flag may ask for a
# long run (a million requests).
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
quiet_seconds="${QUIET_SECONDS:-20}"
most_seconds="${MOST_SECONDS:-40}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
command -v script >/dev/null || { echo "chapter fuzz: needs script(1) (util-linux)"; exit 1; }
# allocator_may_return_null: a huge allocation throws std::bad_alloc, as in
# the release build, instead of stopping the run; exitcode: a report is
# never mistaken for exit status 2.
export ASAN_OPTIONS="allocator_may_return_null=1:exitcode=99:detect_leaks=${DETECT_LEAKS:-1}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=99"

# The programs, linked (or copied) into a folder of the harness's own, so
# that the state they keep beside themselves is the harness's to damage.
programs=()
mkdir -p "$TMP/bin"
for f in "$BIN"/ch[0-9][0-9]; do
    [ -x "$f" ] || continue
    programs+=("$(basename "$f")")
    ln "$f" "$TMP/bin/" 2>/dev/null || cp "$f" "$TMP/bin/"
done
[ ${#programs[@]} -gt 0 ] || { echo "chapter fuzz: no programs in $BIN"; exit 1; }
BIN="$TMP/bin"

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
# The state, good: the kernel plan the runs above saved, and the tiny
# model's step cost measured (other shapes' calibrations join as runs make them).
fixture "$BIN/ch05" --layers 1 --dim 8 --heads 2 --kv-heads 1 --ffn 8 --vocab 16 --max-seq 64 \
    --requests 4 --prompt-min 2 --prompt-max 4 --answer-len 2 --answer-max 4 --cost-model measured
[ -f "$BIN/kernel_plan.txt" ] && ls "$BIN"/calibration/* >/dev/null 2>&1 ||
    { echo "chapter fuzz: the fixtures saved no kernel plan or calibration in $BIN"; exit 1; }

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

# slow_flags PROGRAM: " name name " of the flags whose --help line says their value may be slow.
slow_flags() {
    local names=" "
    while IFS= read -r line; do
        [[ "$line" =~ ^\ \ --([a-z0-9-]+)\  && "$line" == *slow* ]] && names+="${BASH_REMATCH[1]} "
    done < <("$BIN/$1" --help)
    echo "$names"
}

declare -A flags base slow
for ch in "${programs[@]}"; do
    flags[$ch]="$(flags_of "$ch")"
    slow[$ch]="$(slow_flags "$ch")"
    b="$(sed -n 's/^base: //p' "$here/flag_cases/$ch.txt" 2>/dev/null)"
    base[$ch]="${b//\{fixtures\}/$F}"
done

# ------------------------------------------------------------ the state
# The good state, kept aside; damage_state draws a damage to the kernel plan
# or to every calibration, only of what the run reads (a program with no
# model flags reads neither, one with no --cost-model no calibration),
# setting $damage ("" if nothing was damaged) and $priced when the run must
# price by the calibration; restore_state puts the good state back.
cp "$BIN/kernel_plan.txt" "$TMP/good-plan"
restore_state() {
    rm -rf "$BIN/kernel_plan.txt" "$BIN/calibration"
    cp "$TMP/good-plan" "$BIN/kernel_plan.txt"
    cp -r "$TMP/good-calibration" "$BIN/calibration"
}
damage_file() {  # damage_file PATH KIND
    rm -rf "$1"
    case "$2" in
        empty) : >"$1" ;;
        huge) : >"$1"; truncate -s 1G "$1" ;;
        folder) mkdir "$1" ;;
        fifo) mkfifo "$1" ;;
        garbage) cp "$F/noise.bin" "$1" ;;
    esac
}
damage_state() {
    local kind target files f
    damage="" priced=""
    [[ " ${flags[$ch]//$'\n'/ } " == *" layers "* ]] || return 0
    [[ " ${flags[$ch]//$'\n'/ } " == *" cost-model "* ]] && priced=1
    target=plan
    if [ -n "$priced" ]; then pick plan calibration; target="$value"; fi
    if [ "$target" = calibration ]; then
        pick empty huge folder fifo garbage infinite nan negative absurd; kind="$value"
    else
        pick empty huge folder fifo garbage; kind="$value"
    fi
    damage="$target:$kind"
    if [ "$target" = plan ]; then priced=""; damage_file "$BIN/kernel_plan.txt" "$kind"; return; fi
    files=("$TMP/good-calibration"/*)
    for f in "${files[@]}"; do
        f="$BIN/calibration/$(basename "$f")"
        case "$kind" in
            infinite) sed -i 's/^prices [^ ]*/prices 1e999/' "$f" ;;
            nan) sed -i 's/^prices [^ ]* [^ ]*/prices nan nan/' "$f" ;;
            negative) sed -i 's/^prices [^ ]*/prices -1/' "$f" ;;
            absurd) sed -i 's/^prices [^ ]* [^ ]*/prices 1e300 1e300/' "$f" ;;
            *) damage_file "$f" "$kind" ;;
        esac
    done
}

# ------------------------------------------------------------ the runs
runs=0 failures=0 slow=0 quiet=0 said_slow=0 exit0=0 exit2=0 planted=0
declare -A damages
report() {  # report WHAT: a failure, with its command and stderr
    failures=$((failures + 1))
    [ "$failures" -le 10 ] || return
    echo "FUZZ FAILED: $1"
    [ -n "$damage" ] && echo "  with the state damaged: $damage"
    printf '  command:'; printf ' %q' "$prog" "${args[@]}"; echo
    sed 's/^/  | /' "$work.lines" | head -n 40
}

# run_on_a_terminal: $prog with $args in $work, its stdout in $work.out, its
# terminal's bytes in $work.err; sets $status, and $ended to "quiet" (no new
# byte for $quiet_seconds) or "slow" (past $most_seconds) if it was killed.
run_on_a_terminal() {
    local command quoted started last_change size last_size=0 now pause=0.005
    printf -v command 'cd %q && exec %q' "$work" "$prog"
    printf -v quoted ' %q' "${args[@]}"
    command+="$quoted >$(printf %q "$work.out")"
    ended=""
    SHELL=/bin/bash script -qfec "$command" /dev/null >"$work.err" </dev/null 2>/dev/null &
    local watched=$!
    started="$(micros)" last_change="$started"
    while kill -0 "$watched" 2>/dev/null; do
        sleep "$pause"
        [ "$pause" = 0.5 ] || pause="$(awk -v p="$pause" 'BEGIN { print (p * 2 > 0.5) ? 0.5 : p * 2 }')"
        now="$(micros)" size="$(stat -c %s "$work.err")"
        [ "$size" != "$last_size" ] && last_size="$size" last_change="$now"
        if [ $((now - last_change)) -ge $((quiet_seconds * 1000000)) ]; then ended=quiet
        elif [ $((now - started)) -ge $((most_seconds * 1000000)) ]; then ended=slow; fi
        if [ -n "$ended" ]; then
            kill -TERM "$watched" 2>/dev/null  # the terminal closes: the run gets SIGHUP
            break
        fi
    done
    wait "$watched"
    status=$?
    # What a reader would have read: each line's last rewrite (a progress
    # line is redrawn after \r), without the terminal's \r before \n.
    sed 's/\r$//; s/.*\r//' "$work.err" >"$work.lines"
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
cp -r "$BIN/calibration" "$TMP/good-calibration"
SECONDS=0
while [ "$SECONDS" -lt "$budget" ]; do
    ch="${programs[0]}"
    for c in "${programs[@]}"; do [ "${used[$c]}" -lt "${used[$ch]}" ] && ch="$c"; done
    RANDOM=$(((seed * 7919 + 10#${ch#ch} * 104729 + done_runs[$ch]) % 2147483647))
    done_runs[$ch]=$((done_runs[$ch] + 1))
    prog="$BIN/$ch"
    work="$TMP/run"
    rm -rf "$work" "$work.out" "$work.err" "$work.lines"
    mkdir -p "$work"
    : >"$work/a-file"
    cp "$F/model.bin" "$work/model.bin"
    read -ra args <<<"${base[$ch]}"
    base_words=("${args[@]}")
    # One to three flags, each drawn with its value.
    mapfile -t lines <<<"${flags[$ch]}"
    n=$((1 + RANDOM % 3))
    said=""
    for ((k = 0; k < n; k++)); do
        read -r name kind lo hi choices <<<"${lines[$((RANDOM % ${#lines[@]}))]}"
        [[ "${slow[$ch]}" == *" $name "* ]] && said=1
        words=()
        flag_words "$name" "$kind" "$lo" "$hi" "$choices"
        args+=("${words[@]}")
    done
    [ $((RANDOM % 3)) = 0 ] && args+=(--json)
    damage="" priced=""
    [ $((RANDOM % 3)) = 0 ] && damage_state
    [ -n "$priced" ] && args+=(--cost-model measured)
    runs=$((runs + 1))
    start="$(micros)"
    run_on_a_terminal
    used[$ch]=$((used[$ch] + $(micros) - start))
    [ -n "$damage" ] && restore_state
    # Planted: the plan is read by every program with a model; a calibration
    # only if one was saved for the run's model (drawn flags may change it),
    # which its step cost then shows: refused ("not used") or used ("reused").
    if [ -n "$damage" ] && { [ -z "$priced" ] ||
        grep -qE 'the saved prices were not used|reused from' "$work.out"; }; then
        planted=$((planted + 1))
        damages[$damage]=$((${damages[$damage]:-0} + 1))
    fi
    if [ -n "${VERBOSE:-}" ]; then
        printf 'exit %s%s:' "$status" "${damage:+ (state: $damage)}"
        printf ' %q' "$ch" "${args[@]:${#base_words[@]}}"
        printf '\n  %s\n' "$(head -c 200 "$work.lines")"
    fi
    if [ "$ended" = quiet ] && [ -n "$said" ]; then
        said_slow=$((said_slow + 1))
        printf 'slow, as its --help says (nothing shown for %s s):' "$quiet_seconds"
        printf ' %q' "$prog" "${args[@]}"; echo
    elif [ "$ended" = quiet ]; then
        quiet=$((quiet + 1))
        report "$ch: nothing shown for $quiet_seconds s (no progress), and no flag's --help says slow"
    elif [ "$ended" = slow ]; then
        slow=$((slow + 1))
        printf 'slow (over %s s, its progress showing):' "$most_seconds"
        printf ' %q' "$prog" "${args[@]}"; echo
    elif grep -qE 'Sanitizer|runtime error:' "$work.lines"; then
        report "$ch: a sanitizer reported (exit status $status)"
    elif [ "$status" = 2 ]; then
        lines_err="$(grep -c '[^ ]' "$work.lines")"
        if [ "$lines_err" = 1 ]; then exit2=$((exit2 + 1))
        else report "$ch: exit status 2 with $lines_err lines on stderr"; fi
    elif [ "$status" = 0 ]; then
        if [ ! -s "$work.out" ]; then report "$ch: exit status 0 with nothing on stdout"
        elif [ -n "$priced" ] && grep -q 'reused from' "$work.out"; then
            # Every saved calibration was damaged: none may be reused.
            report "$ch: priced by a damaged calibration ($damage): its prices were reused"
        elif cat "$work.out" "$work"/plots/*.svg 2>/dev/null | grep -qiwE -- '-?(inf|nan)'; then
            report "$ch: a number that is not finite in its report or plots"
        else exit0=$((exit0 + 1)); fi
    else
        report "$ch: exit status $status"
    fi
done

each="" kinds=""
for ch in "${programs[@]}"; do each+=" $ch ${done_runs[$ch]},"; done
for d in $(printf '%s\n' "${!damages[@]}" | sort); do kinds+=" $d ${damages[$d]},"; done
echo "chapter fuzz: $runs runs of ${#programs[@]} programs in $SECONDS s, seed $seed:" \
    "$exit0 exited 0 with a report, $exit2 exited 2 with one line, $slow slow with progress," \
    "$said_slow slow as --help says, $quiet quiet (failures), $failures failures" \
    "(runs:${each%,})"
kinds="${kinds%,}"
echo "chapter fuzz: state damaged before $planted runs (${kinds# }), each put back after"
[ "$failures" = 0 ]
