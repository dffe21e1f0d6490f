#!/bin/bash
# Checks that the book quotes each measured figure from one run (issue 39):
# what tests/check_readme_numbers.sh cannot, since it leaves timings out.
# It reads the pages a reader reads: the front page (README.md), each
# chapter's README.md and the course kit (chapters/course/*.md). A page's
# pasted runs are its ```text blocks right after a `<!-- pasted run: COMMAND
# -->` or `<!-- output of: COMMAND -->` line; its prose is every other line
# outside fenced blocks, without HTML comments and `inline code`, read a
# paragraph at a time (so a figure wrapped across two lines is one figure).
# Each fault is named FILE:LINE.
#
# 1. One quantity, one number. QUANTITIES below names the figures that
#    several pages quote and the pattern that finds each where a program
#    prints it (the patterns read a block or a paragraph as one line, spaces
#    collapsed). Every place a pattern finds a quantity, in a pasted run or
#    in prose, must give the same number as every other, on any page. Two
#    quotes agree when they are the same number at the precision each is
#    printed to (22.93 and 22.9, 6.31 and 6.3; 22.93 and 22.94 do not).
#    A quantity is held per run: a paste's run is its command's flags, less
#    those that change none of these figures (--engine-requests, --save-json,
#    --results-dir, --plot-dir), so `--cost-model analytic` runs are held to
#    each other and default runs to each other; prose takes the run of the
#    page's nearest pasted run above it (the first on the page if none is).
#
# 2. A figure in prose is a figure in a paste. A number with a unit a run
#    measures in (ms, us, µs, ns, s, GB/s, GFLOP/s, %, or x as a ratio: "2.6
#    x less", not "4 x dim x layers" or "43.5 x C") must appear on the same
#    page in a pasted run: the same number with the same unit, or, for a
#    number with a decimal point, the same number alone (a table's cell,
#    whose column names the unit). So must a count without a unit that
#    only a run gives, found by the words beside it (COUNTS below: "703
#    preemptions", "preempts 942 times", and means, which have a decimal
#    point: "a batch of 5.4", "22.3 requests per decode step", "6.3 times
#    fewer"), as the same number alone; so must a bare number with a
#    decimal point read against a run ("4.17 above", "k = 4.17"). Chapter
#    numbers, years, flags' values and whole numbers of requests or blocks
#    are not read as counts.
#    Not measured here, so exempt:
#    - the article's figures and the ratios of them that chapter 06 prints
#      (ARTICLE below);
#    - a figure in a sentence that names its paper ("et al." or "arXiv:");
#    - worked arithmetic written out: a figure right after "=" (or "≈")
#      whose left side is an operation on numbers ("557 + 226 + 52 + 13 =
#      849 us"; not "F = 557 us");
#    - a figure named by a comment on its own line just before the lines
#      it covers (up to the next blank line or comment: a paragraph, a
#      table, or the rest of a list, the comment then indented as the list
#      items' text): `<!-- worked: FIGURES, and from what -->` for
#      arithmetic worked from the page's figures that the text does not
#      write out, or `<!-- given: FIGURES, and whose -->` for a figure the
#      book states but does not measure (a vendor's rating, a server's or
#      the code's setting, a target or an error a question supposes, the
#      rough time a whole command takes). Every figure in the comment is
#      named, and each must appear in the lines it covers: a comment that
#      names a figure they no longer quote fails.
#
#   tests/check_readme_quotes.sh              the book's pages, from anywhere
#   tests/check_readme_quotes.sh DIR          the pages under DIR (same layout)
#   tests/check_readme_quotes.sh --self-test  a small book that passes, and each
#                                             fault planted in a copy of it fails
set -u
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--self-test" ]; then
    source tests/self_test.sh  # $tmp, removed at the end, and $book in it
    # The small book: two pages that quote one answer and one queue, every
    # exemption used once. It is built here, not copied, so that the
    # self-test bites whether or not the book itself passes today.
    mkdir -p "$book/chapters/02_two" "$book/chapters/05_five" "$book/chapters/course"
    {
        echo "# The book"
        echo
        echo "The article's answer (4 x dim x layers a token) took 567 ms, and 39 ms with the cache."
        echo
        echo "<!-- pasted run: ./build/ch06 --results-dir build/results -->"
        echo '```text'
        echo "  48-token answer without the cache                                  567 ms     305.4 ms                  0.54"
        echo "  48-token answer with the cache                                     39 ms      57.6 ms                   1.48"
        echo "  median time to first token, continuous batching                    14 s       6.84 s                    0.49"
        echo "  cache speed-up on one answer              14.5 x     5.3 x"
        echo '```'
    } >"$book/README.md"
    {
        echo "# Chapter 02"
        echo
        echo "Here the cache made the answer 5.3 x faster, and a decode step"
        echo "took 1.05 ms. KIVI (Liu et al., ICML 2024) reports 2.6 x less memory."
        echo
        echo "<!-- pasted run: ./build/ch02 -->"
        echo '```text'
        echo "a decode step within the answer (the median step): 1.05 ms"
        echo "48-token answer: 305.4 ms without the cache -> 57.6 ms with it (5.3 x faster; 5.9 x predicted)"
        echo '```'
        echo
        echo "<!-- pasted run: ./build/ch07 --watermark 0 -->"
        echo '```text'
        echo "  4 MiB, watermark 0     942 preemptions     mean decode batch 5.4"
        echo '```'
        echo
        echo "Without the watermark chapter 07's queue of 1,000 requests makes 942 preemptions"
        echo "in a decode batch of 5.4, and 3 of 16 blocks stay free (2024, --rate 30)."
        echo
        echo "<!-- pasted run: ./build/ch02 --answer-len 8 -->"
        echo '```text'
        echo "the one-row step, in rows of a naive pass: 3.25 x"
        echo '```'
        echo
        echo "A one-row step costs k of those rows (3.25 above), so k = 3.25 here."
    } >"$book/chapters/02_two/README.md"
    {
        echo "# Chapter 05"
        echo
        echo "<!-- pasted run: ./build/ch05 --cost-model analytic -->"
        echo '```text'
        echo "model: 6 layers, dim 256, max-seq 512"
        echo "step cost: analytic (operation counts at 40 GFLOP/s and 40 GB/s)"
        echo "  a step = 557 us + 226 us x rows + 52.4 us x sequences + 230 ns x pairs + 0 x positions"
        echo "  serial, cache            22.93     41.51"
        echo "  continuous, cache        11.10     20.21"
        echo "padding (answered requests' rows still computed): static, cache: 72.1% of rows"
        echo "median time to first token, 1,000 requests: 424 s without the cache -> 22.9 s with it -> 11.1 s with continuous batching"
        echo '```'
        echo
        echo "Serial service waits 22.93 s, continuous batching 11.10"
        echo "s (the analytic prices), and 72.1% of a static batch is padding."
        echo "One step costs 557 + 226 = 783 us; F = 557 us is not worked."
        echo
        echo "<!-- worked: 46 ms, from the step prices -->"
        echo "One request alone takes about 46 ms."
        echo
        echo "<!-- given: 25%, the warning's threshold in calibration.h -->"
        echo "A fit error above 25% prints a warning."
    } >"$book/chapters/05_five/README.md"
    {
        echo "# The course"
        echo
        echo "The measured queue (the closing table) waited 6.8 s with continuous batching:"
        echo
        echo "<!-- pasted run: ./build/ch07 -->"
        echo '```text'
        echo "The queue at 16 MiB, blocks of 16 positions, watermark 5% (times in s):"
        echo "  reserve the whole context  simulator      1000      6.84     15.21"
        echo "paged KV cache: 58 conversations fit in 16 MiB where reserving the whole context fit 23; median time to"
        echo "             first token 6.8 s -> 6.5 s"
        echo '```'
    } >"$book/chapters/course/README.md"
    book_passes
    # planted WHAT NAMED FILE SED: a copy of the small book whose FILE is
    # changed by the sed script SED must fail, naming NAMED.
    planted() {
        local what="$1" named="$2" file="$3" script="$4"
        fresh_copy
        sed -i "$script" "$copy/$file"
        if cmp -s "$book/$file" "$copy/$file"; then
            echo "self-test FAILED: the text to change for $what was not found in $file"
            exit 1
        fi
        caught "$what" "$named"
    }
    front=README.md two=chapters/02_two/README.md five=chapters/05_five/README.md
    course=chapters/course/README.md
    planted "an answer's time that differs between two pages (in their pastes)" \
        "$two:9" $two 's/^48-token answer: 305.4 ms/48-token answer: 278.9 ms/'
    planted "a ratio that differs between two pages" "$front:10" $front \
        's/14.5 x     5.3 x/14.5 x     6.2 x/'
    planted "a queue's wait that differs between two pages (one run's 6.84 s, another's 7.1)" \
        "$course:10" $course 's/first token 6.8 s -> 6.5 s/first token 7.1 s -> 6.5 s/'
    planted "two quotes of one wait at one precision that differ in their last digit" \
        "$course:8" $course 's/simulator      1000      6.84/simulator      1000      6.85/'
    planted "a prose figure that no paste on its page contains" "$two:3" $two \
        's/made the answer 5.3 x faster/made the answer 6.2 x faster/'
    planted "a prose time that no paste on its page contains, wrapped across two lines" \
        "$five:14" $five 's/continuous batching 11.10$/continuous batching 11.20/'
    planted "a prose figure that only another page's paste contains" "$course:3" $course \
        's/waited 6.8 s/waited 57.6 ms/'
    planted "a count in prose that no paste on its page contains" "$two:17" $two \
        's/makes 942 preemptions/makes 943 preemptions/'
    planted "a mean count in prose that no paste on its page contains" "$two:18" $two \
        's/batch of 5.4/batch of 5.6/'
    planted "a bare figure in prose that no paste on its page contains" "$two:25" $two \
        's/(3.25 above)/(4.17 above)/'
    planted "an assignment taken for worked arithmetic" "$five:16" $five 's/F = 557 us/F = 558 us/'
    planted "a worked comment that names a figure its paragraph no longer quotes" "$five:18" \
        $five 's/about 46 ms/about 47 ms/'
    planted "a cited figure whose sentence no longer names its paper" "$two:4" $two \
        's/KIVI (Liu et al., ICML 2024)/KIVI/'
    echo "README quotes self-test: the small book passes (one answer, ratio and wait on" \
        "two pages at two precisions, analytic and default runs kept apart, a prose figure in" \
        "its page's paste, wrapped or in a table's cell; the article's figures, a cited" \
        "paper's, worked arithmetic, a worked and a given comment, a multiplication, counts" \
        "beside chapter and flag numbers, a year and a size); each" \
        "planted fault fails, named (an answer's time, a ratio, a queue's wait differing between" \
        "two pages; one wait's last digit; a prose figure no paste on its page holds, plain," \
        "wrapped, or held only by another page; a count and a mean count without a unit; a bare" \
        "figure read against the run above; an assignment as worked arithmetic; a stale" \
        "worked comment; a cited figure without its paper)"
    exit 0
fi

root="${1:-.}"
cd "$root" || exit 1
exec python3 - <<'PY'
import bisect
import glob
import os
import re
import sys
from decimal import Decimal

pages = ["README.md"] + sorted(glob.glob("chapters/*/README.md")) \
    + sorted(glob.glob("chapters/course/*.md"))
pages = [p for i, p in enumerate(pages) if os.path.isfile(p) and p not in pages[:i]]

NUM = r"(?P<value>\d[\d,]*(?:\.\d+)?)"
# The quantities several pages quote: a name and a pattern that finds it
# where a program prints it (its group `value`; another group fills the
# name). Rows with one name are one quantity printed in several places.
QUANTITIES = [
    # The 48-token answer: chapter 02 measures it (each time the fastest of
    # its answers); chapter 06's closing table (pasted on the front page
    # too) reads it from chapter 02's saved run. Chapter 01's "48-token
    # answer without the cache: ..." is its own run, timed the same way,
    # which its page says; chapter 02 times the answer again beside the
    # cached one, and that run is the one the book compares.
    ("48-token answer without the cache (ms)", rf"48-token answer: {NUM} ms without the cache"),
    ("48-token answer without the cache (ms)", rf"48-token answer without the cache 567 ms {NUM} ms"),
    ("48-token answer with the cache (ms)", rf"ms without the cache -> {NUM} ms with it"),
    ("48-token answer with the cache (ms)", rf"48-token answer with the cache 39 ms {NUM} ms"),
    ("cache speed-up on the 48-token answer (x)", rf"ms with it \({NUM} x faster"),
    ("cache speed-up on the 48-token answer (x)", rf"cache speed-up on one answer 14\.5 x {NUM} x"),
    # The step prices: one calibration per model shape, which every queue
    # chapter of that shape reuses.
    ("step prices, max-seq {shape}",
     r"max-seq (?P<shape>\d+).*? a step = (?P<value>.*? x positions)"),
    # Chapter 05's queue: the median time to first token under each policy,
    # in its table and its headline; the closing table reads three of them;
    # chapter 07's queue at 16 MiB, reserving the whole context, is chapter
    # 05's continuous batching with the cache (its headline's first wait).
    ("median wait, {policy} (s)",
     rf"(?P<policy>(?:serial|static|continuous), (?:no cache|cache)) {NUM} \d"),
    ("median wait, serial, no cache (s)",
     rf"median time to first token, 1,000 requests: {NUM} s without"),
    ("median wait, serial, cache (s)", rf"s without the cache -> {NUM} s with it -> "),
    ("median wait, continuous, cache (s)", rf"-> {NUM} s with continuous batching"),
    ("median wait, serial, no cache (s)", rf"median time to first token, no cache 452 s {NUM} s"),
    ("median wait, serial, cache (s)", rf"median time to first token, with the cache 24 s {NUM} s"),
    ("median wait, continuous, cache (s)",
     rf"median time to first token, continuous batching 14 s {NUM} s"),
    ("median wait, continuous, cache (s)",
     rf"The queue at 16 MiB[^:]*:(?:(?!The queue at).)*? reserve the whole context simulator \d+ {NUM}"),
    ("median wait, continuous, cache (s)",
     rf"paged KV cache: [^;]*; median time to first token {NUM} s ->"),
    ("median wait: no cache / cache (x)", rf"median wait: no cache / cache 18\.8 x {NUM} x"),
    ("median wait: cache / continuous batching (x)",
     rf"median wait: cache / continuous batching 1\.7 x {NUM} x"),
    # Part II's queues, in each chapter's headline and the closing table's.
    ("chapter 07: median wait, paged (s)",
     rf"paged KV cache: [^;]*; median time to first token [\d.]+ s -> {NUM} s"),
    ("chapter 08: median wait, no prefix cache (s)",
     rf"prefix cache: [^;]*; median time to first token {NUM} s ->"),
    ("chapter 08: median wait, prefix cache (s)",
     rf"prefix cache: [^;]*; median time to first token [\d.]+ s -> {NUM} s"),
    ("chapter 09: p99 time between tokens, prefill first (ms)",
     rf"chunked prefill \(chunk 64\): p99 time between tokens {NUM} ms ->"),
    ("chapter 09: p99 time between tokens, chunk 64 (ms)",
     rf"chunked prefill \(chunk 64\): p99 time between tokens [\d.]+ ms -> {NUM} ms"),
    ("chapter 09: median wait, prefill first (s)",
     rf"chunked prefill \(chunk 64\): [^;]*; median time to first token {NUM} s ->"),
    ("chapter 09: median wait, chunk 64 (s)",
     rf"chunked prefill \(chunk 64\): [^;]*; median time to first token [\d.]+ s -> {NUM} s"),
    ("chapter 11: median wait, no second tier (s)",
     rf"second tier: [^;]*; median time to first token {NUM} s ->"),
    ("chapter 11: median wait, second tier (s)",
     rf"second tier: [^;]*; median time to first token [\d.]+ s -> {NUM} s"),
]
QUANTITIES = [(name, re.compile(pattern)) for name, pattern in QUANTITIES]
# Flags that change none of the quantities: a run with them is the run without.
NEUTRAL = {"--engine-requests", "--save-json", "--results-dir", "--plot-dir"}

# The article's figures, and the ratios of them chapter 06 prints as published.
ARTICLE = {"567 ms", "39 ms", "452 s", "24 s", "14 s", "14.5 x", "18.8 x", "1.7 x"}
FIGURE = re.compile(r"(?<![\w.,])(\d[\d,]*(?:\.\d+)?) ?(GFLOP/s|GB/s|ms|us|µs|ns|s|%|x)(?![\w/])")
# After "x", what makes it a multiplication: a number, a bracket, code, a
# one-letter name, or a word multiplied again ("4 x dim x layers").
MULTIPLIES = re.compile(r" ?(?:[\d(`*]|[A-Za-z]\b|[A-Za-z]+ ?[x×] )")
# Counts without a unit that only a run gives, by the words beside them:
# events a run counts ("703 preemptions", "preempts 942 times") and means
# over a run's steps, which have a decimal point ("a batch of 5.4", "22.3
# requests per decode step", "6.3 times fewer"), and a bare decimal read
# against a run ("4.17 above", "k = 4.17"). A whole number of requests,
# blocks or times is left alone: most are a flag's value or arithmetic.
DECIMAL = r"(?<![\w.,])(?P<value>\d[\d,]*\.\d+)"
EVENTS = r"preemptions?|evictions?|copies on write|reloads|recomputations|swaps"
COUNTS = [re.compile(p) for p in (
    rf"(?<![\w.,]){NUM} (?:{EVENTS})\b",
    rf"\b(?:preempt|evict|reload|swap|recompute)(?:s|ed|es|ped)? (?:(?!\d)\w+ ){{0,2}}"
    rf"(?:about )?{NUM} times\b",
    rf"\bbatch (?:of )?(?:about )?{DECIMAL}\b",
    rf"{DECIMAL} (?:requests|sequences|conversations|blocks|rows|tokens|positions|times)\b",
    rf"{DECIMAL},? (?:above|below|here|in (?:the|this) run)\b",
    rf"(?:\b[a-z]|\*[a-z]\*) ?(?:=|is|was) (?:about )?{DECIMAL}",
)]
ESCAPE = re.compile(r"^\s*<!--\s*(worked|given):(.*?)-->\s*$")
MARKER = re.compile(r"^\s*<!--\s*(?:pasted run|output of):\s*(.*?)\s*-->\s*$")

def figures(text):
    """(start, number, unit) of every figure in `text`; unit "" for a count."""
    found = []
    for m in FIGURE.finditer(text):
        if m.group(2) == "x" and MULTIPLIES.match(text, m.end()):
            continue
        found.append((m.start(), m.group(1), m.group(2)))
    taken = {start for start, _, _ in found}
    for pattern in COUNTS:
        for m in pattern.finditer(text):
            if m.start("value") not in taken:
                taken.add(m.start("value"))
                found.append((m.start("value"), m.group("value"), ""))
    return sorted(found)

def name_of(number, unit):
    return number + ("%" if unit == "%" else " " + unit if unit else "")

def run_of(command):
    """The flags that make a run what it is (NEUTRAL ones dropped)."""
    words, kept = command.split()[1:], []
    i = 0
    while i < len(words):
        if words[i] in NEUTRAL:
            i += 2
            continue
        kept.append(words[i])
        i += 1
    return " ".join(kept) or "the default run"

class Text:
    """Lines read as one line (spaces collapsed), each place mapped back to its line."""
    def __init__(self, numbered):
        self.starts, self.lines, parts, at = [], [], [], 0
        for n, line in numbered:
            line = " ".join(line.split())
            self.starts.append(at)
            self.lines.append(n)
            parts.append(line)
            at += len(line) + 1
        self.text = " ".join(parts)
    def line(self, offset):
        return self.lines[bisect.bisect_right(self.starts, offset) - 1]

def read(path):
    """A page's pasted runs [(run, Text)] and its paragraphs [(Text, escapes, nearest run)]."""
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    pastes, paragraphs = [], []
    fence = None  # the open block's lines, or None
    marked = None  # the command of the marker just above
    paragraph, escapes, waiting = [], [], []
    def close():
        nonlocal paragraph, escapes
        if paragraph:
            run = pastes[-1][0] if pastes else None
            paragraphs.append([Text(paragraph), escapes, run])
        elif escapes:
            for n, kind, named in escapes:
                fail(f"{path}:{n}", f"<!-- {kind}: --> stands before no paragraph")
        paragraph, escapes = [], []
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith("```"):
                if fence[0] is not None:
                    pastes.append((run_of(fence[0]), Text(fence[1])))
                fence = None
            else:
                fence[1].append((n, line))
            continue
        if stripped.startswith("```"):
            close()
            fence = (marked if stripped[3:].strip() == "text" else None, [])
            marked = None
            continue
        if not stripped:
            close()
            continue
        m = MARKER.match(line)
        if m:
            close()
            marked = m.group(1)
            continue
        marked = None
        m = ESCAPE.match(line)
        if m:
            close()
            named = {name_of(number, unit) for _, number, unit in figures(m.group(2))}
            if not named:
                fail(f"{path}:{n}", f"<!-- {m.group(1)}: --> names no figure")
            escapes = [(n, m.group(1), named)]
            continue
        if stripped.startswith("<!--"):
            close()
            continue
        paragraph.append((n, line))
    close()
    # Prose before a page's first pasted run takes that run.
    for p in paragraphs:
        if p[2] is None:
            p[2] = pastes[0][0] if pastes else "the default run"
    return pastes, paragraphs

failures = []
def fail(where, what):
    failures.append(f"FAILED: {where}: {what}")

def agree(a, b):
    """Two prints of one number: equal, or equal at the coarser one's precision."""
    a, b = a.replace(",", ""), b.replace(",", "")
    if not re.fullmatch(r"\d+(\.\d+)?", a) or not re.fullmatch(r"\d+(\.\d+)?", b):
        return a == b
    places = lambda s: len(s.split(".")[1]) if "." in s else 0
    if places(a) == places(b):
        return a == b
    unit = lambda s: Decimal(1).scaleb(-places(s))
    return abs(Decimal(a) - Decimal(b)) <= (unit(a) + unit(b)) / 2

def sentence(text, at):
    """The sentence of `text` around offset `at`."""
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s|$)", text)
            if not re.search(r"(?:et al|e\.g|i\.e|vs|cf)$", text[:m.start()])]
    start = max([e for e in ends if e <= at], default=0)
    end = min([e for e in ends if e > at], default=len(text))
    return start, text[start:end]

def written_out(text, at):
    """Whether the figure at `at` ends arithmetic written out on its line: "A op B = figure"."""
    start, _ = sentence(text, at)
    before = text[start:at].rstrip()
    if not before.endswith(("=", "≈")):
        return False
    left = re.split(r"[=≈]", before[:-1])[-1]
    return bool(re.search(r"\d[\d.,e]*\s*[-+x×/*]\s*[\d(]", left))

quotes = {}  # (quantity, run) -> [(value, where)]
checked = 0
for path in pages:
    pastes, paragraphs = read(path)
    pasted = " ".join(t.text for _, t in pastes)
    places = [(run, t) for run, t in pastes] + [(run, t) for t, _, run in paragraphs]
    for run, t in places:
        for name, pattern in QUANTITIES:
            for m in pattern.finditer(t.text):
                key = name.format(**{k: v for k, v in m.groupdict().items() if k != "value"})
                quotes.setdefault((key, run), []).append(
                    (m.group("value"), f"{path}:{t.line(m.start('value'))}"))
    for t, escapes, _ in paragraphs:
        prose = re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), t.text)
        named = {f: (n, kind) for n, kind, fs in escapes for f in fs}
        used = set()
        for at, number, unit in figures(prose):
            checked += 1
            figure = name_of(number, unit)
            if figure in named:
                used.add(figure)
                continue
            if figure in ARTICLE or re.search(r"et al\.|arXiv:", sentence(prose, at)[1]):
                continue
            if written_out(prose, at):
                continue
            same = re.escape(number) + (r" ?%" if unit == "%" else " ?" + re.escape(unit))
            alone = re.escape(number) if "." in number else same
            if re.search(rf"(?<![\w.,])(?:{same}|{alone})(?![\w]|[.,]\d)", pasted):
                continue
            what = figure if unit else f"the count {figure}"
            fail(f"{path}:{t.line(at)}", f"prose quotes {what}, which no pasted run on this page shows "
                 f"(paste it, mark it <!-- worked: --> or <!-- given: -->)")
        for figure, (n, kind) in named.items():
            if figure not in used:
                fail(f"{path}:{n}", f"<!-- {kind}: --> names {figure}, which its paragraph does not quote")

held = 0
for (name, run), found in sorted(quotes.items()):
    files = {where.split(":")[0] for _, where in found}
    if all(agree(found[0][0], value) for value, _ in found):
        if len(files) > 1:
            held += 1
            print(f"held: {name} ({run}): {found[0][0]} on {len(files)} pages")
        continue
    fail(", ".join(where for _, where in found),
         f"{name} ({run}) differs: " + "; ".join(f"{where} quotes {value}" for value, where in found))

for line in failures:
    print(line)
print(f"README quotes: {len(pages)} pages, {checked} figures in prose, {len(quotes)} quantities "
      f"found ({held} on several pages), {len(failures)} faults")
sys.exit(1 if failures else 0)
PY
