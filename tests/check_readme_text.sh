#!/bin/bash
# Checks the book's teaching text for what a lesson leaves to git (issue 30):
# no lab notebook, and chapters of a chapter's length.
#
# The text: the front page (README.md), each chapter's README.md and
# EXERCISES.md, its solutions/*.md, the course kit (chapters/course/*.md)
# and tests/bench/README.md if there is one. Each fault is named FILE:LINE.
#
#   - A commit hash: a word of 7 to 40 lowercase hex digits with at least one
#     digit and one letter a-f, standing alone (no letter, digit or _ on
#     either side). Not a hash:
#       * a number: all digits, or digits, one e and digits (1e10000);
#       * a digest the programs print: exactly 16 hex digits (FNV-1a, 64
#         bits) inside a ```text or ```json block, where pasted output
#         goes; the same word in prose, or 7 to 15 or 17 to 40 digits in
#         such a block, is taken for a hash.
#     No text names a commit, not even the one the pasted runs come from:
#     the notes on the issues carry that.
#   - A history mark: "load average", "UTC", a time of day (18:16, 9:05,
#     18:16:02), "in an earlier run", "last session" (any case but UTC's).
#   - Length, by `wc -w` (issue 39: a chapter stops when its idea is told):
#       * a chapter README (chapters/NN_name/README.md) of fewer than 1,200
#         or more than 2,200 words (chapter 05: 3,000; chapter 11: 2,000);
#       * the chapter READMEs' median (the lower middle one) above 1,800;
#       * the front page above 2,000 words outside its pasted run (the
#         block after its `<!-- pasted run: ... -->` line);
#       * the course kit (chapters/course/README.md) above 8,000.
#
#   tests/check_readme_text.sh              the book's files, from anywhere
#   tests/check_readme_text.sh DIR          the files under DIR (same layout)
#   tests/check_readme_text.sh --self-test  a small book that passes, and each
#                                           fault planted in a copy of it fails
set -u
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--self-test" ]; then
    source tests/self_test.sh  # $tmp, removed at the end, and $book in it
    # words N: N words of filler, ten to a line.
    words() { python3 -c "import sys; n = int(sys.argv[1]); print('\n'.join(' '.join(['word'] * min(10, n - i)) for i in range(0, n, 10)))" "$1"; }
    # The small book: every exemption used once, every budget met. It is
    # built here, not copied, so that the self-test bites whether or not
    # the book itself passes today.
    mkdir -p "$book/chapters/01_one/solutions" "$book/chapters/05_five" "$book/chapters/course" \
        "$book/tests/bench"
    {
        echo "# The book"
        echo
        echo "Every pasted run in this book comes from one build on one machine."
        echo "A million is 1000000, a large float 1e10000; deadbeef has no digit."
        echo
        echo "<!-- pasted run: ./build/ch06 -->"
        echo '```text'
        words 2500  # a long pasted run: not counted against the front page
        echo '```'
    } >"$book/README.md"
    {
        echo "# Chapter 01"
        words 1300
        echo
        echo '```text'
        echo "logits digest: af63dc4c8601ec8c"
        echo '```'
    } >"$book/chapters/01_one/README.md"
    { echo "# Chapter 05"; words 1500; } >"$book/chapters/05_five/README.md"
    echo "1. Run it at 16 MiB; count the blocks." >"$book/chapters/01_one/EXERCISES.md"
    echo "## 1. The answer: 5,424 - 4,977 = 447." >"$book/chapters/01_one/solutions/SOLUTIONS.md"
    echo "Meeting 1: chapter 01, about 3 s." >"$book/chapters/course/README.md"
    echo "make bench prints each target and the plan." >"$book/tests/bench/README.md"
    book_passes
    # planted WHAT FILE NAMED LINE: a copy of the small book with LINE added
    # to FILE must fail, naming NAMED (FILE:N, or FILE for a word count).
    planted() {
        fresh_copy
        printf '%s\n' "$4" >>"$copy/$2"
        caught "$1" "$3"
    }
    # The line a fault appended to FILE is its last.
    last() { echo "$1:$(($(grep -c '' "$book/$1") + 1))"; }
    ch=chapters/01_one/README.md
    planted "a commit hash in a chapter README" $ch "$(last $ch)" "Measured at commit a11c0de."
    planted "a full commit hash in a chapter README" $ch "$(last $ch)" \
        "See 0084b783bcda6d7ee15c337b1062cbee9985c954."
    planted "a commit hash in an exercise" chapters/01_one/EXERCISES.md \
        "$(last chapters/01_one/EXERCISES.md)" "2. Check out b0a7f00 and run it."
    planted "a commit hash in a solution" chapters/01_one/solutions/SOLUTIONS.md \
        "$(last chapters/01_one/solutions/SOLUTIONS.md)" "(the run at c0ffee1)"
    planted "a commit hash in the course kit" chapters/course/README.md \
        "$(last chapters/course/README.md)" "Meeting 2 runs d00dad5's make run."
    planted "a commit hash in the bench's README" tests/bench/README.md \
        "$(last tests/bench/README.md)" "At abc1234 the plan was another."
    planted "a commit hash on the front page" README.md "$(last README.md)" \
        "The table comes from 3358107a."
    planted "a commit on the front page's pasted-runs line" README.md "$(last README.md)" \
        "Every pasted run in this book comes from commit f00d123."
    planted "a digest in prose" $ch "$(last $ch)" "Its digest is af63dc4c8601ec8c."
    five=chapters/05_five/README.md
    planted "a short hash inside a text block" $five "$five:$(($(grep -c '' "$book/$five") + 2))" \
        "$(printf '```text\nbuilt from 0ddba11\n```')"
    planted "a load average" chapters/01_one/EXERCISES.md \
        "$(last chapters/01_one/EXERCISES.md)" "3. Note the load average first."
    planted "UTC" chapters/01_one/solutions/SOLUTIONS.md \
        "$(last chapters/01_one/solutions/SOLUTIONS.md)" "Run on 2 December, in UTC."
    planted "a time of day" chapters/course/README.md "$(last chapters/course/README.md)" \
        "Three pairs of runs at 18:16."
    planted "'in an earlier run'" $ch "$(last $ch)" "In an earlier run it printed 7.0 x."
    planted "'last session'" README.md "$(last README.md)" "As the last session found, ..."
    planted "a chapter README over 2,200 words" $ch "$ch: " "$(words 1000)"
    planted "chapter 05's README over 3,000 words" chapters/05_five/README.md \
        "chapters/05_five/README.md: " "$(words 1600)"
    planted "the front page over 2,000 words outside its pasted run" README.md "README.md: " \
        "$(words 2000)"
    planted "the course kit over 8,000 words" chapters/course/README.md \
        "chapters/course/README.md: " "$(words 8000)"
    # Every chapter within its own cap, but the median over 1,800.
    rm -rf "$tmp/copy"
    cp -r "$book" "$tmp/copy"
    words 600 >>"$tmp/copy/$ch"
    words 400 >>"$tmp/copy/$five"
    if out="$(bash "$self" "$tmp/copy")" || ! grep -qF "median" <<<"$out"; then
        echo "self-test FAILED: a median chapter README over 1,800 words was not caught"
        exit 1
    fi
    rm -rf "$tmp/copy"
    cp -r "$book" "$tmp/copy"
    printf '# Chapter 01\n\nToo short.\n' >"$tmp/copy/$ch"
    if out="$(bash "$self" "$tmp/copy")" || ! grep -qF "$ch: " <<<"$out"; then
        echo "self-test FAILED: a chapter README under 1,200 words was not caught"
        exit 1
    fi
    echo "README text self-test: the small book passes (a digest in a" \
        "text block, numbers, a pasted run on the front page); each planted fault fails, named (a" \
        "commit hash in a chapter README, an exercise, a solution, the course kit, the bench's" \
        "README and the front page, its pasted-runs line included; a digest in prose; a short hash" \
        "in a text block; a load average, UTC, a time of day, 'in an earlier run', 'last session';" \
        "a chapter README over 2,200 words, chapter 05's over 3,000, one under 1,200, a median" \
        "over 1,800, the front page over 2,000 outside its pasted run, the course kit over 8,000)"
    exit 0
fi

root="${1:-.}"
cd "$root" || exit 1
python3 - <<'PY'
import glob
import os
import re
import subprocess
import sys

files = ["README.md"] + sorted(glob.glob("chapters/*/README.md")) \
    + sorted(glob.glob("chapters/*/EXERCISES.md")) \
    + sorted(glob.glob("chapters/*/solutions/*.md")) + sorted(glob.glob("chapters/course/*.md")) \
    + sorted(glob.glob("chapters/*/*.md"))
if os.path.isfile("tests/bench/README.md"):
    files.append("tests/bench/README.md")
files = [f for i, f in enumerate(files) if os.path.isfile(f) and f not in files[:i]]

hex_word = re.compile(r"(?<![0-9A-Za-z_])[0-9a-f]{7,40}(?![0-9A-Za-z_])")
number = re.compile(r"[0-9]+(e[0-9]+)?")
marks = [
    ("a load average", re.compile(r"load average", re.I)),
    ("UTC", re.compile(r"\bUTC\b")),
    ("a time of day", re.compile(r"(?<![\w:.])(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?![\w:])")),
    ("'in an earlier run'", re.compile(r"in an earlier run", re.I)),
    ("'last session'", re.compile(r"last session", re.I)),
]
budgets = {"05": 3000, "11": 2000}  # the rest: 2,200
most_median = 1800
front_page_most = 2000  # outside its pasted run
course_kit_most = 8000
shortest = 1200

failures = []
def fail(where, what):
    failures.append(f"FAILED: {where}: {what}")

for path in files:
    fence = None  # the open block's info string ("" for a bare ```), or None
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    for number_of_line, line in enumerate(lines, 1):
        where = f"{path}:{number_of_line}"
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = stripped[3:].strip().lower() if fence is None else None
            continue
        for what, pattern in marks:
            if pattern.search(line):
                fail(where, f"{what} (history belongs to git): {line.strip()}")
        for m in hex_word.finditer(line):
            word = m.group(0)
            if not (re.search(r"[0-9]", word) and re.search(r"[a-f]", word)):
                continue
            if number.fullmatch(word):
                continue
            if len(word) == 16 and fence in ("text", "json"):
                continue  # a 64-bit digest in a program's pasted output
            fail(where, f"a commit hash? '{word}' (history belongs to git and the issues' notes)")

def wc_words(text):
    return int(subprocess.run(["wc", "-w"], input=text.encode(), capture_output=True,
                              check=True).stdout.split()[0])

chapter_words = []
for path in files:
    m = re.fullmatch(r"chapters/([0-9][0-9])_[^/]+/README\.md", path)
    if not m:
        continue
    words = wc_words(open(path, encoding="utf-8", errors="replace").read())
    chapter_words.append(words)
    most = budgets.get(m.group(1), 2200)
    if words > most:
        fail(path, f"{words:,} words by wc -w, over the chapter's budget of {most:,}")
    elif words < shortest:
        fail(path, f"{words:,} words by wc -w, under a chapter's {shortest:,}")
if chapter_words:
    middle = sorted(chapter_words)[(len(chapter_words) - 1) // 2]  # the lower middle
    if middle > most_median:
        fail("chapters/*/README.md", f"median {middle:,} words by wc -w, over {most_median:,}")

# The front page without its pasted run: the fenced block after the marker.
if os.path.isfile("README.md"):
    kept, state = [], "prose"  # "prose", "marked" (after the marker) or "pasted"
    for line in open("README.md", encoding="utf-8", errors="replace").read().split("\n"):
        fence = line.strip().startswith("```")
        if state == "pasted":
            state = "prose" if fence else state
            continue
        if state == "marked" and fence:
            state = "pasted"
            continue
        if line.strip().startswith("<!-- pasted run:"):
            state = "marked"
        kept.append(line)
    words = wc_words("\n".join(kept))
    if words > front_page_most:
        fail("README.md", f"{words:,} words by wc -w outside its pasted run, over {front_page_most:,}")

kit = "chapters/course/README.md"
if os.path.isfile(kit):
    words = wc_words(open(kit, encoding="utf-8", errors="replace").read())
    if words > course_kit_most:
        fail(kit, f"{words:,} words by wc -w, over the course kit's {course_kit_most:,}")

for line in failures:
    print(line)
print(f"README text: {len(files)} files, {len(failures)} faults")
sys.exit(1 if failures else 0)
PY
