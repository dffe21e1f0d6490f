#!/bin/bash
# Pastes every run the book's pages show from one run of this build, so that
# a figure quoted on two pages is one number (tests/check_readme_quotes.sh
# holds it). Each chapter runs once, as `make run` runs it, saving the JSON
# the closing table reads; every other command a page pastes runs once. A
# page's block after `<!-- pasted run: COMMAND -->` becomes COMMAND's output,
# and the "Run on ..." sentence just before it names this machine. The
# bench's page (tests/bench/README.md) pastes a short run of build/bench.
#
#   tests/paste_runs.sh            build, run, rewrite the pages in place
#   tests/paste_runs.sh --check    the same runs, pages untouched: the rewritten
#                                  pages go under build/pastes/pages to compare
# Either way the runs' saved results replace build/results, as make run's do.
set -eu
cd "$(dirname "$0")/.."
check=no
[ "${1:-}" = "--check" ] && check=yes

pages=(README.md chapters/[0-9]*/README.md chapters/course/*.md tests/bench/README.md)
make all build/bench >/dev/null
out=build/pastes
rm -rf "$out" build/results
mkdir -p "$out" build/results

# The file that holds one command's output.
output_of() { echo "$out/$(printf '%s' "$1" | md5sum | cut -c1-16).txt"; }

# Every chapter once, in make run's order, the closing table last: the bare
# command's paste is the run whose JSON the closing table reads.
for program in $(ls build/ch?? | sort); do
    ch="$(basename "$program")"
    [ "$ch" = ch06 ] && continue
    echo "==> ./build/$ch" >&2
    "./build/$ch" --save-json "build/results/$ch.json" >"$(output_of "./build/$ch")"
done
./build/ch06 --results-dir build/results >"$(output_of "./build/ch06")"
cp "$(output_of "./build/ch06")" "$(output_of "./build/ch06 --results-dir build/results")"

# Every other command a page pastes, once.
grep -ho '<!-- pasted run: .* -->' "${pages[@]}" | sed 's/<!-- pasted run: \(.*\) -->/\1/' | sort -u |
    while read -r command; do
        [ -f "$(output_of "$command")" ] && continue
        echo "==> $command" >&2
        bash -c "$command" >"$(output_of "$command")"
    done

# The machine, as a reader would name theirs.
cpu="$(grep -m1 '^model name' /proc/cpuinfo | sed 's/.*: //; s/ *$//')"
family="$(grep -m1 '^cpu family' /proc/cpuinfo | sed 's/.*: //')"
model="$(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | sed 's/.*: //')"
cpus="$(nproc)-core"
grep -qw hypervisor /proc/cpuinfo && cpus="$(nproc)-vCPU" && cpu="$cpu guest"
machine="Run on a $cpus $cpu (CPU family $family, model $model), ${CXX:-g++} $(${CXX:-g++} -dumpfullversion), \`-O3 -march=native\`:"

changed=0
for page in "${pages[@]}"; do
    grep -q '<!-- pasted run: ' "$page" || continue
    new="$(mktemp)"
    # Held lines: a "Run on ..." sentence is replaced only where a paste follows it.
    awk -v dir="$out" -v machine="$machine" '
        function flush() { for (i = 1; i <= n; i++) print held[i]; n = 0 }
        function file_of(command,   cmd, f) {
            cmd = "printf %s \"" command "\" | md5sum | cut -c1-16"
            cmd | getline f; close(cmd)
            return dir "/" f ".txt"
        }
        /^Run on / && n == 0 { held[++n] = $0; in_sentence = ($0 !~ /:$/); next }
        n > 0 && in_sentence && n < 4 { held[++n] = $0; in_sentence = ($0 !~ /:$/); next }
        n > 0 && in_sentence { flush(); in_sentence = 0 }
        n > 0 && /^$/ { held[++n] = $0; next }
        /<!-- pasted run: / {
            if (n > 0) { print machine; print ""; n = 0 }
            command = $0
            sub(/.*<!-- pasted run: /, "", command); sub(/ -->.*/, "", command)
            print; getline; print   # the marker, then the opening fence
            file = file_of(command)
            while ((getline line < file) > 0) print line
            close(file)
            while ((getline line) > 0 && line != "```") {}
            print "```"
            next
        }
        { flush(); print }
        END { flush() }
    ' "$page" >"$new"
    if ! cmp -s "$page" "$new"; then
        changed=$((changed + 1))
        echo "$page: pasted run rewritten"
        if [ "$check" = no ]; then
            cat "$new" >"$page"
        else
            mkdir -p "$out/pages/$(dirname "$page")" && cp "$new" "$out/pages/$page"
        fi
    fi
    rm -f "$new"
done
echo "pasted runs: $changed pages changed$([ "$check" = yes ] && echo ' (not written: --check)')"
