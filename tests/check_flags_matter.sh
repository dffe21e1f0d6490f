#!/bin/bash
# Every flag a program lists in --help does something: run once with a
# small base configuration and once with the flag changed, the program must
# show a difference. What is compared is what a reader can see and that a
# clock does not move:
#   - the exit status;
#   - the --json output, split into one line per key, with the keys whose
#     values differ between two runs of the same command (times) masked;
#   - the files the run leaves in its (fresh) working folder, by name, and
#     whether each is empty.
# The keys that merely echo the flag being checked (--foo-bar: "foo_bar" and
# "foo-bar", at any depth) are masked too, so a flag saved in the JSON and
# otherwise ignored fails.
#
# timing only: observed by count of samples. A flag whose only effect is on
# timing (the number of timed repeats whose median is reported) has no other
# observable: its case says "timing-only" before CHANGED, which the check
# accepts only for a flag whose --help line says "timed"; for such a case the
# echoed key stays, as the count of samples the JSON records. The flags
# marked so: ch01, ch02 and ch04's --repeats, ch07's --indirection-batch.
#
# The cases for build/chNN are in tests/flag_cases/chNN.txt, one a line:
#
#   base: ARGS                  the base run (every run adds --json, except --json's own)
#   --flag: CHANGED             the base run with CHANGED added (the last value given wins)
#   --flag: CHANGED vs OTHER    ... compared with the base run with OTHER added
#   --flag: timing-only CHANGED a timing-only flag (see above)
#
# A side written "= ARGS" replaces the base instead of adding to it. CHANGED
# must name its flag. {fixtures} is a folder filled first: model.bin and
# tokenizer.bin (a 259-token byte-level model saved by chapter 02), results-a/
# and results-b/ (chapters 02, 03 and 05's saved JSON, twice, differing in
# chapter 03's --context). --json (left out) and --help are checked here for
# every program. Every flag --help lists needs a case, and every case a flag
# --help lists. Each run ends within 60 s or fails.
#
#   tests/check_flags_matter.sh BUILD_DIR
#   tests/check_flags_matter.sh --self-test BUILD_DIR
#       shows that a flag made to do nothing fails the check: a few
#       programs are each replaced by a wrapper that drops one flag (and
#       its value) before running the program, so that --help lists the
#       flag and it does nothing; and one program by a wrapper that drops
#       a flag but writes its value into the JSON key named like it, so the
#       flag is echoed and otherwise ignored; the check must name those
#       flags, and no other, as doing nothing
set -u
here="$(cd "$(dirname "$0")" && pwd)"
if [ "${1:-}" = "--drop-flag" ]; then
    # --drop-flag FLAG PROGRAM ARGS...: the self-test's wrapper.
    flag="$2" program="$3" args=() drop=""
    shift 3
    for arg in "$@"; do
        if [ -n "$drop" ]; then drop=""; continue; fi
        case "$arg" in "$flag") drop=1; continue ;; "$flag="*) continue ;; esac
        args+=("$arg")
    done
    exec "$program" "${args[@]}"
fi
if [ "${1:-}" = "--echo-flag" ]; then
    # --echo-flag FLAG PROGRAM ARGS...: the self-test's other wrapper. It
    # drops FLAG like --drop-flag, then writes the value FLAG was given into
    # the JSON key named like it, so the flag is echoed and otherwise ignored.
    flag="$2" program="$3" args=() drop="" value=""
    name="${flag#--}"
    name="${name//-/_}"
    shift 3
    for arg in "$@"; do
        if [ -n "$drop" ]; then drop="" value="$arg"; continue; fi
        case "$arg" in "$flag") drop=1; continue ;; "$flag="*) value="${arg#*=}"; continue ;; esac
        args+=("$arg")
    done
    "$program" "${args[@]}" >"${TMPDIR:-/tmp}/echo-flag.$$"
    status=$?
    [[ "$value" =~ ^[0-9.]+$ ]] || value="\"$value\""
    if [ "$value" != '""' ]; then sed -E "s/\"$name\": [^,}]*/\"$name\": $value/g" "${TMPDIR:-/tmp}/echo-flag.$$"
    else cat "${TMPDIR:-/tmp}/echo-flag.$$"; fi
    rm -f "${TMPDIR:-/tmp}/echo-flag.$$"
    exit $status
fi
if [ "${1:-}" = "--self-test" ]; then
    BIN="$(cd "${2:-build}" && pwd)" || exit 1
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/bin" "$tmp/cases"
    # One flag per program, of each kind: a number, a choice, a file written;
    # in programs whose output does not move by chance between two runs
    # (chapter 03's page count does, and chapter 10's line for a step that
    # missed its target: a false "changed" would hide a drop).
    dropped=(ch06:--save-json ch07:--answer-dist ch08:--seed ch09:--chunk)
    # And one flag whose value the JSON echoes while the program ignores it,
    # in a program whose JSON holds no rounded times (which two runs can
    # print alike by chance, and so leave unmasked).
    echoed=(ch05:--reserve)
    # The fixtures' programs, as they are.
    ln -s "$BIN/ch02" "$BIN/ch03" "$BIN/ch05" "$tmp/bin/"
    # wrap KIND CHAPTER:FLAG: the chapter's program replaced by this script's
    # --KIND-flag wrapper around it, with its flag cases beside.
    wrap() {
        local ch="${2%%:*}" flag="${2#*:}"
        cp "$here/flag_cases/$ch.txt" "$tmp/cases/"
        rm -f "$tmp/bin/$ch"
        printf '#!/bin/bash\nexec bash "%s" --%s-flag %s "%s" "$@"\n' "$here/$(basename "$0")" \
            "$1" "$flag" "$BIN/$ch" >"$tmp/bin/$ch"
        chmod +x "$tmp/bin/$ch"
    }
    for pair in "${dropped[@]}"; do wrap drop "$pair"; done
    for pair in "${echoed[@]}"; do wrap echo "$pair"; done
    FLAG_CASES="$tmp/cases" bash "$0" "$tmp/bin" >"$tmp/out" 2>&1
    status=$?
    expected="$(for pair in "${dropped[@]}" "${echoed[@]}"; do echo "FAILED: ${pair%%:*} ${pair#*:} does nothing"; done | sort)"
    found="$(grep '^FAILED' "$tmp/out" | sed 's/ does nothing:.*/ does nothing/' | sort)"
    if [ "$status" = 0 ] || [ "$found" != "$expected" ]; then
        echo "flags self-test FAILED: expected exactly:"; echo "$expected"; echo "got:"; cat "$tmp/out"
        exit 1
    fi
    echo "flags self-test: each flag made to do nothing is caught (${dropped[*]}; echoed: ${echoed[*]})"
    exit 0
fi
BIN="$(cd "${1:-build}" && pwd)" || exit 1
CASES="${FLAG_CASES:-$here/flag_cases}"
TMP="$(mktemp -d)"
FIXTURES="$TMP/fixtures"
trap 'rm -rf "$TMP"' EXIT
passed=0
failed=0
runs=0
ok()   { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAILED: $*"; }

# The walk is planned first, then run, then judged. Planning queues every
# run (run) and lists every verdict to give, in the walk's order (later);
# run_queued runs the queue on every core; the verdicts are then given in
# order, so the output reads as one run after another would print it.
JOBS="$(nproc 2>/dev/null || echo 2)"
QUEUE="$TMP/queue"
mkdir -p "$QUEUE"
verdicts=()
later() { verdicts+=("$(printf '%q ' "$@")"); }

# run DIR PROGRAM ARGS...: queues PROGRAM to run in the fresh folder
# DIR/work, its stdout in DIR/stdout, stderr in DIR/stderr, exit status in
# DIR/status. Each run is a job of its own, except that the runs with a
# measured cost model share the prices saved beside the program (one may
# calibrate and save them, the next reuse them), so they are one job that
# runs them one after another, in the walk's order.
run() {
    local dir="$1" job; shift
    mkdir -p "$dir/work"
    runs=$((runs + 1))
    printf -v job 'cd %q && timeout 60 %s>%q 2>%q; echo $? >%q\n' \
        "$dir/work" "$(printf '%q ' "$@")" "$dir/stdout" "$dir/stderr" "$dir/status"
    if [[ " $* " == *" measured "* ]]; then printf '%s' "$job" >>"$QUEUE/0.measured"
    else printf '%s' "$job" >"$QUEUE/$runs"; fi
}

# run_queued: every queued job, $JOBS at a time, the longest (the measured
# runs) first; then the queue is empty.
run_queued() {
    (cd "$QUEUE" && ls | sort -n | xargs -r -n 1 -P "$JOBS" bash)
    rm -f "$QUEUE"/*
}

# The key of a line: what comes before its first '": ', or the whole line.
KEY='function key(l,  i) { i = index(l, "\": "); return i ? substr(l, 1, i) : l }'

# flat FILE: the output with one key of JSON a line ("key": value), so that
# a key can be masked; a text output stays as it is. A key is masked
# wherever it comes: a table's column of times is then masked whole, even
# where two runs printed the same value in one of its rows.
flat() { awk '{ gsub(/, "/, "\n\""); gsub(/\{"/, "{\n\""); print }' "$1"; }

# noisy A B: the keys whose lines differ between two runs of one command.
noisy() {
    awk "$KEY"'
        FNR == NR { a[$0]++; next } { b[$0]++ }
        END { for (l in a) if (a[l] != b[l]) print key(l)
              for (l in b) if (a[l] != b[l]) print key(l) }' <(flat "$1") <(flat "$2") | sort -u
}

# signature DIR NOISY [FLAG]: what the run in DIR showed, its noisy keys'
# values masked, and so are the keys that merely echo FLAG (--foo-bar:
# "foo_bar" and "foo-bar", at any depth): a flag whose value is saved in the
# JSON but otherwise ignored must not pass by that echo.
signature() {
    local echoed="" name="${3:-}"
    name="${name#--}"
    [ -n "$name" ] && echoed="\"${name//-/_}\" \"$name\""
    echo "exit status $(cat "$1/status")"
    flat "$1/stdout" | awk -v noisy="$2" -v echoed="$echoed" "$KEY"'
        BEGIN { while ((getline line < noisy) > 0) masked[line] = 1
                n = split(echoed, e, " "); for (i = 1; i <= n; i++) masked[e[i]] = 1 }
        { k = key($0)
          if (k in masked) { match($0, /[]}]*$/); print k "\": *" substr($0, RSTART) }
          else print }'
    (cd "$1/work" && find . -type f -size +0 | sort | sed 's/^/file /'
     find . -type f -size 0 | sort | sed 's/^/empty file /')
}

# base_runs NAME ARGS...: queues the command twice, into $TMP/NAME.1 and
# $TMP/NAME.2 (judge_case compares them). A measured cost model's first run
# may calibrate and save the prices later runs reuse, so such a command runs
# once more before. Done once per command.
base_runs() {
    local name="$1"; shift
    [ -d "$TMP/$name.1" ] && return
    [[ " $* " == *" measured "* ]] && run "$TMP/$name.0" "$@"
    run "$TMP/$name.1" "$@"
    run "$TMP/$name.2" "$@"
}

# args_of SIDE: the words of a case's side on top of the base ("= ARGS": instead of it).
args_of() {
    local side="$1"
    side="${side//\{fixtures\}/$FIXTURES}"
    if [[ "$side" == "= "* ]]; then echo "${side#= }"; else echo "$base $side"; fi
}

# check_case FLAG CHANGED OTHER JSON [TIMING]: the program with CHANGED against
# the program with OTHER (each on top of the base), JSON the flag that asks for
# JSON ("" for --json's own case, which leaves it out); TIMING set for a
# timing-only flag, whose echoed key is its observable and stays unmasked.
# Queues the runs; judge_case gives the verdict once they have run.
count=0
check_case() {
    local flag="$1" changed other json="$4" key dir echo_of="$1"
    [ -n "${5:-}" ] && echo_of=""
    read -ra changed <<<"$(args_of "$2")"
    read -ra other <<<"$(args_of "$3")"
    count=$((count + 1))
    key="$ch.$(printf '%s\n' "${other[@]}" | md5sum | cut -c1-16)"
    base_runs "$key" "$prog" "${other[@]}" --json
    dir="$TMP/$ch.case$count"
    if [ -n "$json" ]; then run "$dir" "$prog" "${changed[@]}" "$json"
    else run "$dir" "$prog" "${changed[@]}"; fi
    later judge_case "$ch" "$flag" "$key" "$dir" "$echo_of" "${2:-nothing}" "${3:-nothing}" "${other[*]}"
}

# judge_case CHAPTER FLAG KEY DIR ECHO_OF CHANGED OTHER OTHER_ARGS: check_case's verdict.
judge_case() {
    local ch="$1" flag="$2" key="$3" dir="$4" echo_of="$5"
    [ -e "$TMP/$key.noisy" ] || noisy "$TMP/$key.1/stdout" "$TMP/$key.2/stdout" >"$TMP/$key.noisy"
    [ "$(cat "$TMP/$key.1/status")" = 0 ] ||
        { fail "$ch: the base of $flag failed: $8: $(head -c 300 "$TMP/$key.1/stderr")"; return; }
    if [ "$(cat "$dir/status")" != 0 ]; then
        fail "$ch $flag: the changed run exited $(cat "$dir/status"): $(head -c 300 "$dir/stderr")"
        return
    fi
    if cmp -s <(signature "$TMP/$key.2" "$TMP/$key.noisy" "$echo_of") \
        <(signature "$dir" "$TMP/$key.noisy" "$echo_of")
    then fail "$ch $flag does nothing: the base with $6 added shows what it shows with $7 added"
    else ok; fi
}

# The fixtures: a model and its tokenizer, two folders of saved results.
mkdir -p "$FIXTURES/results-a" "$FIXTURES/results-b"
tiny=(--layers 1 --dim 8 --heads 2 --kv-heads 1 --ffn 8 --max-seq 64 --prompt-len 2 --answer-len 3 --repeats 1)
run "$TMP/fixtures.model" "$BIN/ch02" "${tiny[@]}" --vocab 259 --seed 7 \
    --save-checkpoint "$FIXTURES/model.bin" --save-tokenizer "$FIXTURES/tokenizer.bin"
for set in a b; do
    context=4096; [ $set = b ] && context=2048
    run "$TMP/fixtures.$set.02" "$BIN/ch02" "${tiny[@]}" --vocab 16 --save-json "$FIXTURES/results-$set/ch02.json"
    run "$TMP/fixtures.$set.03" "$BIN/ch03" --measure-tokens 16 --context $context \
        --save-json "$FIXTURES/results-$set/ch03.json"
    run "$TMP/fixtures.$set.05" "$BIN/ch05" --layers 1 --dim 8 --heads 2 --kv-heads 1 --ffn 8 \
        --vocab 16 --max-seq 64 --requests 4 --prompt-min 2 --prompt-max 4 --answer-len 2 \
        --answer-max 4 --cost-model analytic --save-json "$FIXTURES/results-$set/ch05.json"
done
run_queued
for f in "$TMP"/fixtures.*/status; do
    [ "$(cat "$f")" = 0 ] || { echo "FAILED: a fixture's run: $(cat "${f%status}stderr")"; exit 1; }
done

for cases in "$CASES"/ch*.txt; do
    ch="$(basename "$cases" .txt)"
    prog="$BIN/$ch"
    [ -x "$prog" ] || { later fail "$prog is not built"; continue; }
    base="$(sed -n 's/^base: //p' "$cases")"
    base="${base//\{fixtures\}/$FIXTURES}"
    help="$("$prog" --help)"
    listed="$(grep -oE '^  --[a-z0-9-]+' <<<"$help" | sed 's/^ *//')"
    [ -n "$listed" ] || { later fail "$ch --help lists no flags"; continue; }
    # Every listed flag has a case; every case names a listed flag.
    for flag in $listed; do
        case "$flag" in --json | --help) continue ;; esac
        grep -q -- "^$flag: " "$cases" || later fail "$ch lists $flag, which has no case in $cases"
    done
    while IFS= read -r line; do
        flag="${line%%: *}"
        grep -qx -- "$flag" <<<"$listed" || later fail "$ch: $cases has a case for $flag, which --help does not list"
    done < <(grep -E '^--[a-z0-9-]+: ' "$cases")

    # --json (left out) and --help, for every program.
    check_case --json "" "" ""
    check_case --help "--help" "" --json
    while IFS= read -r line; do
        flag="${line%%: *}"
        rest="${line#*: }"
        timing=""
        if [[ "$rest" == "timing-only "* ]]; then
            rest="${rest#timing-only }"
            timing=1
            grep -E -- "^  $flag " <<<"$help" | grep -q timed ||
                { later fail "$ch: $flag is marked timing-only, but its --help line says nothing is timed"; continue; }
        fi
        changed="${rest%% vs *}"
        other=""; [[ "$rest" == *" vs "* ]] && other="${rest#* vs }"
        [[ " $changed " == *" $flag "* || " $changed " == *" $flag="* ]] ||
            { later fail "$ch: the case for $flag does not change $flag: $changed"; continue; }
        check_case "$flag" "$changed" "$other" --json "$timing"
    done < <(grep -E '^--[a-z0-9-]+: ' "$cases")
done

run_queued
for verdict in "${verdicts[@]}"; do eval "$verdict"; done

echo "flags: $passed passed, $failed failed ($runs runs)"
[ "$failed" = 0 ]
