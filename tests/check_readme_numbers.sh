#!/bin/bash
# Checks that the deterministic lines the book quotes are what the programs
# print now: token and position counts, parameter counts, memory figures,
# FLOPs per byte, the models' shapes, and chapter 05's queue under
# `--cost-model analytic`. Timings are left out: they belong to the
# reader's machine.
#
# How it reads a file: every ```text block is taken as the output of the
# last `./build/chNN ...` command written before it in that file (in a ```sh
# block or in `inline code`), or of the command on a `$ ./build/...` line
# inside the block; a chapter's text block with no command before it is
# taken as the output of `./build/chNN`. Where that guess is wrong, the
# file says so just before the block: `<!-- output of: COMMAND -->` (or
# `<!-- pasted run: COMMAND -->`, which marks a README's one whole run), or
# `<!-- not checked -->`. A block that shows commands (a line with
# ./build/, make or vllm) or JSON is not an output and is skipped, and so
# is chapter 06's table (it reads the other chapters' saved runs); on the
# front page only a marked block is checked. Each command runs once, and every
# line of the block that is deterministic must appear in its output,
# word for word (spacing aside). A line is deterministic unless it holds a
# time, a rate, a percentage, a plot path or a machine's own figure (its
# caches, its resident memory). Two rules check what such lines still
# hold: a line that varies only after its first " (" must begin an output
# line up to there ("dim 256, ffn 768: 5,570,560 multiplied weights, 21.25
# MiB read per step (fit in..."), and in a table whose rows mix timings
# with counts, the counted columns (batch, step, sequence length, GFLOP
# per step, FLOPs/byte) of every row must be a row of an output table with
# the same header. Chapters 05, 07, 08 and 09 are checked in full only where
# the command has `--cost-model analytic` (their other costs are measured);
# in their measured runs, the lines that describe the model, the workload and
# the memory are checked against the same command under the counted model.
#
#   tests/check_readme_numbers.sh              the book's files, against ./build
#   tests/check_readme_numbers.sh DIR          the files under DIR (same layout)
#   tests/check_readme_numbers.sh --self-test  shows that a changed number fails
set -u
cd "$(dirname "$0")/.."
repo="$(pwd)"

if [ "${1:-}" = "--self-test" ]; then
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    # mutant DIR README WHAT EDIT...: a copy of README under DIR passes; the
    # same copy after EDIT (given the copy's path) must fail.
    mutant() {
        local dir="$1" readme="$2" what="$3"
        shift 3
        mkdir -p "$dir/$(dirname "$readme")"
        cp "$readme" "$dir/$readme"
        if ! bash "$0" "$dir" >/dev/null; then
            echo "self-test FAILED: the unchanged copy of $readme does not pass"
            exit 1
        fi
        "$@" "$dir/$readme"
        if cmp -s "$readme" "$dir/$readme"; then
            echo "self-test FAILED: the $what to change was not found in $readme"
            exit 1
        fi
        if bash "$0" "$dir" >/dev/null; then
            echo "self-test FAILED: a changed $what in $readme was not caught"
            exit 1
        fi
    }
    # A quoted count: 1,896 token-positions -> 1,897 in chapter 01's README.
    mutant "$tmp/ch01" chapters/01_naive_decoding/README.md "count" sed -i \
        's/^token-positions processed: 1,896$/token-positions processed: 1,897/'
    # A counted column of a timing table, in a row of bare numbers: the
    # FLOPs per byte of chapter 04's first batch-1 row (its 6th column), 0.5 -> 0.6.
    mutant "$tmp/ch04" chapters/04_batched_decoding/README.md "FLOPs per byte" \
        sed -i -E '0,/^( +1( +[^ ]+){4} +)0\.5 /s//\10.6 /'
    # The beginning of a line that varies after it: chapter 04's count of
    # multiplied weights, 5,570,560 -> 5,570,561.
    mutant "$tmp/ch04-weights" chapters/04_batched_decoding/README.md "count of weights" \
        sed -i 's/^dim 256, ffn 768: 5,570,560 multiplied weights/dim 256, ffn 768: 5,570,561 multiplied weights/'
    # A measured run's memory line, checked under the counted model: chapter
    # 09's 1365 blocks -> 1366.
    mutant "$tmp/ch09" chapters/09_chunked_prefill/README.md "count of blocks" \
        sed -i 's/^memory: 64 MiB of KV cache in 1365 blocks/memory: 64 MiB of KV cache in 1366 blocks/'
    echo "README numbers self-test: a changed number fails (a line, a table's counted column, the beginning of a varying line, a measured run's memory line), the unchanged files pass"
    exit 0
fi

root="${1:-$repo}"
exec python3 - "$root" "$repo" <<'PYTHON'
import glob, hashlib, os, re, subprocess, sys

root, repo = sys.argv[1], sys.argv[2]
files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "chapters/*/*.md"))) \
    + sorted(glob.glob(os.path.join(root, "chapters/*/solutions/*.md")))
files = [f for f in files if os.path.isfile(f)]

command_re = re.compile(r"(\./build/ch\d\d(?: [^`#]*)?)")
# Lines that hold what varies with the machine or the moment.
varies = re.compile(
    r"\d(?: ?)(?:ms|us|ns|µs|s)\b|GB/s|GFLOP|tokens/s|tok/s|\d x\b|%|plot|"
    r"CPU cache|roof|ridge|attain|below it a step|resident|difference:|expected:|grew|"
    r"pages? of|measured|calibrat|seconds|fit error|warning|per second|meets")
shows_commands = re.compile(r"\./build/|^\s*make |vllm |^\s*[{\[]")
marker = re.compile(r"<!--\s*((?:output of|pasted run):\s*(.*?)|not checked)\s*-->")
numbers_only = re.compile(r"^[\s\d.,+-]+$")
# What a queue chapter's measured run prints as under the counted cost model.
described = re.compile(r"^\s*(model:|workload:|memory:|and the same queue)")

def normal(line):
    return " ".join(line.split())

# The columns of a table that are counted, not timed: the same on every machine.
counted_columns = {"batch", "step", "sequence length", "GFLOP per step", "FLOPs/byte"}

def table_rows(lines):
    """(header, counted cells) for every row of every table in `lines`: a
    table is a header line over a line of dashes, its columns the runs of
    dashes; only the counted columns are kept."""
    rows = []
    for i in range(1, len(lines)):
        dashes = lines[i]
        if not re.fullmatch(r"\s*-+(?:\s+-+)*\s*", dashes) or not lines[i - 1].strip():
            continue
        spans = [m.span() for m in re.finditer(r"-+", dashes)]
        def cells(text):
            out, start = [], 0
            for k, (a, b) in enumerate(spans):
                end = spans[k + 1][0] if k + 1 < len(spans) else len(text)
                out.append(text[start:end].strip())
                start = end
            return out
        header = cells(lines[i - 1])
        keep = [k for k, name in enumerate(header) if name in counted_columns]
        if not keep:
            continue
        for text in lines[i + 1:]:
            if not text.strip() or re.fullmatch(r"\s*-+(?:\s+-+)*\s*", text):
                break
            # A row leaves the space before each column blank; a line of
            # prose after the table does not.
            if any(a - 1 < len(text) and text[a - 1] != " " for a, _ in spans[1:]):
                break
            row = cells(text)
            rows.append((tuple(header), tuple((header[k], row[k]) for k in keep)))
    return rows

outputs = {}
# What tests/check_readme_commands.sh kept of each command it ran (its
# stdout, then its stderr, in a file named by the command's SHA-1), so
# that no command runs twice; any other command runs here.
kept = os.environ.get("README_OUTPUTS", "")

def run(command):
    if command not in outputs:
        path = os.path.join(kept, hashlib.sha1(command.encode()).hexdigest()) if kept else ""
        if path and os.path.isfile(path):
            text = open(path, encoding="utf-8", errors="replace").read()
        else:
            result = subprocess.run(["bash", "-c", command], cwd=repo, capture_output=True,
                                    text=True, timeout=600)
            text = result.stdout + result.stderr
        printed = text.splitlines()
        outputs[command] = ({normal(l) for l in printed}, set(table_rows(printed)),
                            [normal(l) for l in printed])
    return outputs[command]

checked = failed = 0
for path in files:
    rel = os.path.relpath(path, root)
    chapter = re.match(r"chapters/(\d\d)_", rel)
    default = "./build/ch" + chapter.group(1) if chapter else None
    if chapter and chapter.group(1) == "06":
        continue  # its table is built from the other chapters' saved runs
    last_command = None
    override = None  # from a marker comment just before a block
    block = None  # lines of the text block being read
    in_other = False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if block is None and not in_other:
            if line.startswith("```text"):
                block, block_start = [], number
                block_override, override = override, None
                continue
            found_marker = marker.search(line)
            if found_marker:
                override = "skip" if found_marker.group(2) is None else found_marker.group(2).strip()
                continue
            if line.strip():
                override = None
            if line.startswith("```"):
                in_other = True
            for found in command_re.findall(line):
                last_command = found.strip()
            continue
        if in_other:
            if line.startswith("```"):
                in_other = False
            else:
                for found in command_re.findall(line):
                    last_command = found.strip()
            continue
        if not line.startswith("```"):
            block.append((number, line))
            continue
        # The end of a text block: check it.
        command = last_command or default
        if not chapter:
            command = None  # the front page: only blocks it marks are outputs
        if block_override:
            command = block_override
        if command == "skip" or any(shows_commands.search(t) for _, t in block if not t.startswith("$ ")):
            block = None
            continue
        lines, prefixes = [], []
        for n, text in block:
            if text.startswith("$ "):
                command = text[2:].strip()
                continue
            if not text.strip() or numbers_only.match(text):
                continue
            if not varies.search(text):
                lines.append((n, text))
            elif " (" in text and len(text.split(" (")[0].strip()) >= 20 \
                    and not varies.search(text.split(" (")[0]):
                prefixes.append((n, text.split(" (")[0]))
        rows = table_rows([t for n, t in block if not t.startswith("$ ")])
        block_lines = [(n, t) for n, t in block if not t.startswith("$ ")]
        block = None
        if not command or not (lines or prefixes or rows) or "--help" in command:
            continue
        if re.match(r"\./build/ch0[5789]", command) and "--cost-model analytic" not in command:
            # A measured run: only the lines that describe the model, the
            # workload and the memory are the same under the counted cost
            # model, so they are checked against that (without the engine).
            lines = [(n, t) for n, t in block_lines if described.match(t)]
            prefixes, rows = [], []
            command += " --cost-model analytic"
            # ... and without the engine's queues where the program runs any.
            if "--engine-requests" in " ".join(run(command.split()[0] + " --help")[2]):
                command += " --engine-requests 0"
            if not lines:
                continue
        printed, printed_rows, printed_lines = run(command)
        print(f"==> {rel}:{block_start}: {len(lines)} lines, {len(prefixes)} beginnings, "
              f"{len(rows)} table rows against `{command}`")
        def fail(n, text, what):
            global failed
            failed += 1
            print(f"FAILED: {rel}:{n} (block at line {block_start}, from `{command}`) quotes")
            print(f"    {text.strip()}")
            print(f"  {what}")
        for n, text in lines:
            checked += 1
            if normal(text) not in printed:
                fail(n, text, "which the program no longer prints")
        for n, text in prefixes:
            checked += 1
            if not any(p.startswith(normal(text) + " (") for p in printed_lines):
                fail(n, text + " (...", "which begins no line the program prints")
        for header, cells in rows:
            checked += 1
            if (header, cells) not in printed_rows:
                fail(block_start, ", ".join(f"{h} {v}" for h, v in cells),
                     "a table row whose counted columns no row the program prints has")

print(f"README numbers: {checked} lines checked against {len(outputs)} commands, {failed} differ")
sys.exit(1 if failed else 0)
PYTHON
