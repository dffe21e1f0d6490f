#!/bin/bash
# Checks the layout the book keeps (DESIGN.md, "Layout"): dependencies point
# one way, and a chapter's program only wires its parts.
#   - no chapter includes another chapter's files;
#   - a lesson header (a chapter's .h other than experiment.h, report.h and
#     exercises.h) includes only common/core/, common/serving/, its own
#     chapter's lesson headers and standard headers, and holds the idea only:
#     it names no flag, prints nothing, shows no progress, reads or writes
#     no file;
#   - common/serving/ and common/kit/ include only common/core/ and
#     themselves; common/fast/ only common/core/, common/kit/ and itself;
#     common/core/ includes nothing else of common/; nothing in common/
#     includes a chapter;
#   - no main.cpp is included by anything;
#   - a chapter's main.cpp only wires the experiment and the report: under
#     40 lines, with experiment.h and report.h beside it.
#
#   tests/check_layout.sh              the book, from anywhere
#   tests/check_layout.sh DIR          the chapters/, common/ and tests/ under DIR
#   tests/check_layout.sh --self-test  shows that a layout that breaks each rule fails
set -u
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--self-test" ]; then
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    # broken WHAT FILE LINE: a copy of the book passes; the same copy with
    # LINE added to FILE (created if need be) must fail.
    broken() {
        local what="$1" file="$2" line="$3" dir="$tmp/copy"
        rm -rf "$dir"
        mkdir -p "$dir"
        cp -r chapters common tests "$dir"/
        if ! bash "$0" "$dir" >/dev/null; then
            echo "self-test FAILED: the unchanged copy does not pass"
            exit 1
        fi
        mkdir -p "$dir/$(dirname "$file")"
        printf '%s\n' "$line" >>"$dir/$file"
        if bash "$0" "$dir" >/dev/null; then
            echo "self-test FAILED: $what was not caught"
            exit 1
        fi
    }
    broken "a chapter including another chapter's experiment" \
        chapters/07_paged_kv_cache/experiment.h '#include "../05_queue_simulation/experiment.h"'
    broken "a lesson header including the kit" \
        chapters/99_test/lesson.h '#include "../../common/kit/report.h"'
    broken "a lesson header including the lab" \
        chapters/99_test/lesson.h '#include "../../common/lab/calibration.h"'
    broken "a lesson header printing" chapters/99_test/lesson.h 'void f() { std::cout << 1; }'
    broken "the serving lesson including the kit" \
        common/serving/workload.h '#include "../kit/report.h"'
    broken "the core including the serving lesson" \
        common/core/config.h '#include "../serving/workload.h"'
    broken "common/ including a chapter" \
        common/kit/report.h '#include "../../chapters/05_queue_simulation/report.h"'
    broken "a main.cpp included" tests/some_test.cpp '#include "../chapters/05_queue_simulation/main.cpp"'
    broken "a main.cpp of 40 lines" chapters/05_queue_simulation/main.cpp \
        "$(printf '//\n%.0s' $(seq 40))"
    echo "layout self-test: each broken rule fails (another chapter included, a lesson header" \
        "including the kit or the lab or printing, serving including the kit, core including" \
        "serving, common including a chapter, a main.cpp included, a main.cpp of 40 lines or more)"
    exit 0
fi

root="${1:-.}"
cd "$root" || exit 1
passed=0
failed=0
ok()   { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAILED: $*"; }
# check WHAT HITS: no hits is a pass.
check() { if [ -z "$2" ]; then ok; else fail "$1: $2"; fi; }

# The #include "..." lines of the files given, as FILE:LINE:#include "PATH";
# including PATHS: those whose PATH matches the pattern PATHS.
includes() { grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$@" /dev/null; }
including() { grep -E "#[[:space:]]*include[[:space:]]*\"($1)"; }

# What a lesson header may not contain: a flag's name in a string ("--batch"),
# printing, progress lines, file input and output.
forbidden='"--[a-z]|std::cout|std::cerr|printf|Progress|ofstream|ifstream|fstream|fopen|read_file|write_file|UsageError'

chapter_files=$(ls chapters/*/*.h chapters/*/*.cpp 2>/dev/null)
for dir in chapters/*/; do
    dir="${dir%/}"
    main="$dir/main.cpp"
    [ -f "$main" ] || continue
    lines=$(grep -c '' "$main")
    if [ "$lines" -lt 40 ]; then ok; else fail "$main has $lines lines (40 or more)"; fi
    for part in experiment.h report.h; do
        if [ -f "$dir/$part" ]; then ok; else fail "$dir has no $part"; fi
    done
done

# A chapter's files include no other chapter's: no "../NN_...", no
# "chapters/" path.
[ -n "$chapter_files" ] && for file in $chapter_files; do
    chapter="$(basename "$(dirname "$file")")"
    hits="$(includes "$file" | including '(\.\./)+[0-9][0-9]_|[^"]*chapters/' |
        grep -vE "\"\.\./$chapter/")"
    check "$file includes another chapter" "$hits"
done

# Lesson headers: only the core, the serving lesson, their own chapter's
# lesson headers, and the idea only.
for header in chapters/*/*.h; do
    [ -f "$header" ] || continue
    case "$(basename "$header")" in
        experiment.h|report.h|exercises.h) continue ;;
    esac
    hits="$(includes "$header" | including '\.\.|experiment\.h|report\.h|exercises\.h' |
        grep -vE '"\.\./\.\./common/(core|serving)/[a-z_0-9]+\.h"')"
    check "lesson header $header includes more than common/core and common/serving" "$hits"
    # Comments may speak of flags; only code counts.
    hits="$(sed -e 's://.*$::' "$header" | grep -nE "$forbidden")"
    check "lesson header $header holds more than the idea" "$hits"
done

check "common/serving includes more than common/core" \
    "$(includes common/serving/* | including '\.\./' | grep -vE '"\.\./core/')"
check "common/core includes the rest of common" "$(includes common/core/* | including '\.\./')"
check "common/kit includes more than common/core" \
    "$(includes common/kit/* | including '\.\./' | grep -vE '"\.\./core/')"
check "common/fast includes more than common/core and common/kit" \
    "$(includes common/fast/* | including '\.\./' | grep -vE '"\.\./(core|kit)/')"
check "common includes a chapter" "$(includes common/*/* | including '[^"]*chapters/')"
check "a main.cpp is included" \
    "$(includes $(find chapters common tests -name '*.h' -o -name '*.cpp') |
        including '[^"]*main\.cpp"')"

echo "layout: $passed passed, $failed failed"
[ "$failed" = 0 ]
