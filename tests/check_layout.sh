#!/bin/bash
# Checks the shape every chapter keeps (README.md, the section "How a chapter reads"):
#   - main.cpp only wires the experiment and the report: under 40 lines;
#   - experiment.h and report.h are there (chapter 06, which only reads
#     the others' results, has no lesson, so it needs no lesson header);
#   - a lesson header (any other .h but exercises.h) holds the idea only:
#     it names no flag, prints nothing, shows no progress, reads or writes
#     no file, and includes nothing from the program kit but timing.
#   - common/core/ includes nothing from common/kit/ or common/real_weights/.
#
#   tests/check_layout.sh        (from anywhere)
set -u
cd "$(dirname "$0")/.."
passed=0
failed=0
ok()   { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAILED: $*"; }

# What a lesson header may not contain: a flag's name in a string ("--batch"),
# printing, progress lines, file input and output, and the kit's
# flags/output/program.
forbidden='"--[a-z]|read_file|kit/files\.h|std::cout|std::cerr|printf|Progress|ofstream|ifstream|fstream|fopen|write_file|kit/flags\.h|kit/output\.h|kit/program\.h|kit/report\.h|kit/svg_plot\.h|kit/model_flags\.h|UsageError'

for dir in chapters/*/; do
    dir="${dir%/}"
    main="$dir/main.cpp"
    [ -f "$main" ] || continue
    lines=$(grep -c '' "$main")
    if [ "$lines" -lt 40 ]; then ok; else fail "$main has $lines lines (40 or more)"; fi
    for part in experiment.h report.h; do
        if [ -f "$dir/$part" ]; then ok; else fail "$dir has no $part"; fi
    done
    for header in "$dir"/*.h; do
        case "$(basename "$header")" in
            experiment.h|report.h|exercises.h) continue ;;
        esac
        # Comments may speak of flags; only code counts.
        hits="$(sed -e 's://.*$::' "$header" | grep -nE "$forbidden")"
        if [ -z "$hits" ]; then ok; else fail "lesson header $header: $hits"; fi
    done
done

hits="$(grep -nE '#include "\.\./(kit|real_weights)/' common/core/*.h common/core/*.cpp)"
if [ -z "$hits" ]; then ok; else fail "common/core includes the kit: $hits"; fi

echo "layout: $passed passed, $failed failed"
[ "$failed" = 0 ]
