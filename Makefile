# The KV-cache book: the plain build.
#
#   make run        build every chapter and run them in order, the closing table last
#   make test       build and run the tests (finds or installs doctest)
#   make ch01 ...   build one chapter; its program is build/ch01
#   make sanitize   the tests again under AddressSanitizer and UBSan
#   make bench      the engine against this machine's limits (tests/bench/)
#   make validate   the simulator against the real engine, every queue chapter (tests/validate/)
#   make format     clang-format the C++ sources (never the Markdown)
#   make clean

# Compile on every core this machine has.
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)

CXX      ?= g++
# -ffp-contract=off: no fused multiply-adds behind our back, so every machine
# rounds exactly as the source says (see common/core/kernels.h).
# -Wno-psabi: GCC notes that 64-byte vectors are passed differently with and
# without AVX-512; ours never cross a library boundary, so the note is moot.
CXXFLAGS ?= -std=c++20 -O3 -ffp-contract=off -Wall -Wextra -Wpedantic -Werror -Wno-psabi
# Use every instruction this CPU has, if the compiler can target it.
NATIVE   := $(shell $(CXX) -march=native -x c++ -E /dev/null >/dev/null 2>&1 && echo -march=native)
ARCH     ?= $(NATIVE)
BUILD    ?= build

ALL_FLAGS = $(CXXFLAGS) $(ARCH) $(EXTRA) -MMD -MP

# Every folder chapters/NN_name/ with a main.cpp is a chapter; its program
# is build/chNN and `make chNN` builds it.
CHAPTER_DIRS = $(sort $(patsubst %/main.cpp,%,$(wildcard chapters/*/main.cpp)))
CHAPTERS     = $(foreach d,$(CHAPTER_DIRS),ch$(firstword $(subst _, ,$(notdir $(d)))))

COMMON_OBJ = $(patsubst %.cpp,$(BUILD)/%.o,$(wildcard common/*/*.cpp))
TEST_FILES = $(filter-out tests/main.cpp,$(wildcard tests/*.cpp))
TEST_OBJ   = $(BUILD)/tests/main.o $(BUILD)/tests/one_unit.o

.PHONY: all run test sanitize bench validate fuzz format format-check clean doctest FORCE $(CHAPTERS)
.SECONDARY:
all: $(CHAPTERS)

# ------------------------------------------------------------ chapters
$(CHAPTERS): %: $(BUILD)/%

$(CHAPTERS:%=$(BUILD)/%): $(BUILD)/ch%: $(BUILD)/chapters/ch%.o $(COMMON_OBJ)
	$(CXX) $(ALL_FLAGS) -o $@ $^

.SECONDEXPANSION:
$(CHAPTERS:%=$(BUILD)/chapters/%.o): $(BUILD)/chapters/ch%.o: $$(wildcard chapters/$$*_*/main.cpp)
	@mkdir -p $(dir $@)
	$(CXX) $(ALL_FLAGS) -c -o $@ $<

$(BUILD)/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(ALL_FLAGS) -c -o $@ $<

# A kernel plan is kept for the build it was measured in, and GCC has no
# macro for the -O level or UBSan: this one file is told them.
$(BUILD)/common/fast/kernel_plan.o: ALL_FLAGS += -DKV_BUILD_FLAGS='"$(filter -O% -fsanitize=%,$(CXXFLAGS) $(EXTRA))"'

# Each chapter also saves its numbers as JSON; the last one, the closing
# table, reads them back.
# The closing table (chapter 06) reads every other chapter's results, so it
# runs last, after Part II's chapters too, from this build's results folder.
CLOSING   = ch06
RUN_ORDER = $(filter-out $(CLOSING),$(CHAPTERS)) $(CLOSING)

run: $(CHAPTERS)
	@mkdir -p $(BUILD)/results
	@for ch in $(RUN_ORDER); do \
	    echo; echo "==> $(BUILD)/$$ch"; \
	    read_from=; [ $$ch = $(CLOSING) ] && read_from="--results-dir $(BUILD)/results"; \
	    ./$(BUILD)/$$ch --save-json $(BUILD)/results/$$ch.json $$read_from || exit 1; \
	done

# --------------------------------------------------------------- tests
doctest:
	@sh tests/require_doctest.sh $(CXX)

# The tests' own files are compiled at -O0: they are read by the compiler
# once and run for seconds, and -O0 compiles them in less than half the
# time -O3 takes (the seconds they then run longer are fewer than the
# seconds saved). What they test (common/, the chapters' headers inlined
# into them) computes the same bits at any level: -ffp-contract=off, no
# -ffast-math. common/ itself is built once, at -O3, for the chapters and
# the tests alike.
$(TEST_OBJ): ALL_FLAGS += -O0

# The test files compiled as one (tests/one_unit.sh says why).
$(BUILD)/tests/one_unit.cpp: FORCE
	@mkdir -p $(@D)
	@sh tests/one_unit.sh $@ $(TEST_FILES)
FORCE:
$(BUILD)/tests/one_unit.o: $(BUILD)/tests/one_unit.cpp
	@mkdir -p $(@D)
	$(CXX) $(ALL_FLAGS) -c -o $@ $<

# book_tests checks make bench's accounting too (tests/bench_workloads_test.cpp).
$(BUILD)/book_tests: $(TEST_OBJ) $(COMMON_OBJ) $(BUILD)/tests/bench/workloads.o
	$(CXX) $(ALL_FLAGS) -o $@ $^

test: doctest
	@$(MAKE) --no-print-directory $(BUILD)/book_tests $(CHAPTERS)
	./$(BUILD)/book_tests
	bash tests/check_programs.sh $(BUILD)
	bash tests/check_flags_matter.sh $(BUILD)
	bash tests/check_layout.sh
	bash tests/check_readme_text.sh
	bash tests/check_readme_quotes.sh

# The same tests, built apart, with the sanitizers watching every access.
# (make fuzz builds the chapters' programs the same way, beside them.)
SANITIZE = $(MAKE) --no-print-directory BUILD=build/sanitize \
    CXXFLAGS="-std=c++20 -O1 -g -ffp-contract=off -Wall -Wextra -Wpedantic -Werror -Wno-psabi" \
    EXTRA="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"

sanitize: doctest
	@$(SANITIZE) build/sanitize/book_tests
	./build/sanitize/book_tests

# ---------------------------------------------------------- benchmark
# How close the engine runs to this machine's limits (not a test: it times).
# The machine's limits are measured by common/fast/machine_probes.cpp, built
# like everything else (its fused multiply-adds are written as instructions).
# make bench runs two builds, each headed by its flags: this one, then the
# baseline (ARCH empty: no -march=native, SSE2 on x86-64), built apart in
# $(BUILD)/generic. The targets are the native build's; the baseline's
# fractions are there to compare. Each keeps its kernel plan beside its
# program ($(BUILD)/kernel_plan.txt, $(BUILD)/generic/kernel_plan.txt).
BENCH_OBJ = $(patsubst %.cpp,$(BUILD)/%.o,$(wildcard tests/bench/*.cpp))

# The bench's plain peer (tests/bench/plain_peer.cpp) is compiled the way a
# simple C implementation usually is: -Ofast, which lets the compiler
# reorder additions and fuse multiply-adds. That one file only: the program
# is linked without it, because linking with -Ofast would also make the whole
# program flush subnormal numbers to zero, and the book's rounding with it.
$(BUILD)/tests/bench/plain_peer.o: ALL_FLAGS += -Ofast -ffp-contract=fast

$(BUILD)/bench: $(BENCH_OBJ) $(COMMON_OBJ)
	$(CXX) $(ALL_FLAGS) -o $@ $^

bench: $(BUILD)/bench
	@$(MAKE) --no-print-directory ARCH= BUILD=$(BUILD)/generic $(BUILD)/generic/bench
	@echo "==> $(BUILD)/bench: $(strip $(CXX) $(CXXFLAGS) $(ARCH) $(EXTRA))"
	./$(BUILD)/bench
	@echo
	@echo "==> $(BUILD)/generic/bench, the baseline: $(strip $(CXX) $(CXXFLAGS) $(EXTRA)) (no -march)"
	./$(BUILD)/generic/bench

# ----------------------------------------------------------- validation
# The simulator against the real engine (not a test: it times, for minutes):
# every queue chapter's checked queues (tests/validate/chNN_queues.h), each
# run kRealRuns times on the engine, and one report of the errors. Flags
# after VALIDATE=, e.g. make validate VALIDATE="--requests 32 --runs 2".
$(BUILD)/validate: $(BUILD)/tests/validate/main.o $(COMMON_OBJ)
	$(CXX) $(ALL_FLAGS) -o $@ $^

validate: $(BUILD)/validate
	./$(BUILD)/validate $(VALIDATE)

# ------------------------------------------------------------- fuzzing
# make fuzz: libFuzzer (Clang: Debian's clang and libclang-rt-dev) on the
# readers of untrusted input, one harness each in tests/fuzz/: the llama2.c
# checkpoint reader, the tokenizer reader, chapter 06's JSON reader and the
# flag parser. Each is built apart in build/fuzz/ with AddressSanitizer and
# UBSan and runs for FUZZ_SECONDS seconds (20 by default: make fuzz
# FUZZ_SECONDS=5), one after another, growing its corpus in
# build/fuzz/NAME.corpus/, which starts from a few valid inputs: the seeds
# in tests/fuzz/corpus/NAME/ (tests/fuzz/seed_corpus.sh; chapter 02's
# program writes the checkpoint and tokenizer seeds). The first crash, hang,
# leak or sanitizer report stops it with a non-zero status; the input is
# saved as build/fuzz/NAME-crash-... and the end of the log is printed.
# Then tests/fuzz/chapters.sh runs every chapter's program, built with the
# same sanitizers in build/sanitize/ (as make sanitize builds the tests),
# with random small flag combinations drawn from its --help for
# CHAPTER_FUZZ_SECONDS seconds (60 by default), seeded by CHAPTER_FUZZ_SEED
# (empty: a fresh seed, printed); a sanitizer report, a crash, or an exit
# that breaks the book's promises (status 2 with one line on stderr, 0 with
# a report on stdout) fails it, each failure printed with its command.
FUZZ_CXX     ?= clang++
FUZZ_SECONDS ?= 20
CHAPTER_FUZZ_SECONDS ?= 60
CHAPTER_FUZZ_SEED    ?=
FUZZ_FLAGS    = -std=c++20 -O1 -g -ffp-contract=off -fno-omit-frame-pointer -Wno-psabi \
                -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_NAMES    = $(patsubst tests/fuzz/%.cpp,%,$(wildcard tests/fuzz/*.cpp))
FUZZ_COMMON   = $(patsubst %.cpp,build/fuzz/%.o,$(wildcard common/*/*.cpp))

$(FUZZ_COMMON): build/fuzz/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_NAMES:%=build/fuzz/%): build/fuzz/%: tests/fuzz/%.cpp $(FUZZ_COMMON)
	$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_COMMON)

fuzz: $(FUZZ_NAMES:%=build/fuzz/%) $(BUILD)/ch02
	@for name in $(FUZZ_NAMES); do \
	    f=build/fuzz/$$name; \
	    bash tests/fuzz/seed_corpus.sh $$name $$f.corpus $(BUILD)/ch02 || exit 1; \
	    echo "==> $$f for $(FUZZ_SECONDS) s"; \
	    $$f -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
	        -artifact_prefix=$$f- $$f.corpus >$$f.log 2>&1 \
	        || { tail -n 40 $$f.log; echo "FUZZ FAILED: $$name (log: $$f.log)"; exit 1; }; \
	    grep -E "^Done|^#[0-9]+.*DONE" $$f.log | tail -n 1; \
	done
	@$(SANITIZE) $(CHAPTERS:%=build/sanitize/%)
	bash tests/fuzz/chapters.sh build/sanitize $(CHAPTER_FUZZ_SECONDS) $(CHAPTER_FUZZ_SEED)

# ------------------------------------------------------------- format
# clang-format with the project's .clang-format, on the C++ sources only:
# clang-format takes any file it is given for C++, and would rewrite a
# Markdown page ("- ffp - contract = fast"), so the Markdown is never
# handed to it. format-check changes nothing and fails if a file would move;
# it names the clang-format it used (CI installs Debian's, 14 on Debian 12:
# another major version may place a few lines differently).
FORMATTED = $(sort $(wildcard common/*/*.h common/*/*.cpp chapters/*/*.h chapters/*/main.cpp \
                              tests/*.h tests/*.cpp tests/*/*.h tests/*/*.cpp))

format:
	clang-format -i $(FORMATTED)

format-check:
	@clang-format --dry-run -Werror $(FORMATTED)
	@echo "format: $(words $(FORMATTED)) C++ files as $$(clang-format --version | sed 's/^.*clang-format version //') writes them"

clean:
	rm -rf build plots

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
