# The KV-cache book: the plain build.
#
#   make run        build every chapter and run them in order, the closing table last
#   make test       build and run the tests (finds or installs doctest)
#   make ch01 ...   build one chapter; its program is build/ch01
#   make sanitize   the tests again under AddressSanitizer and UBSan
#   make bench      the engine against this machine's limits (tests/bench/)
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
TEST_OBJ   = $(patsubst %.cpp,$(BUILD)/%.o,$(wildcard tests/*.cpp))

.PHONY: all run test sanitize bench clean doctest $(CHAPTERS)
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

# Each chapter also saves its numbers as JSON; the last one, the closing
# table, reads them back.
# The closing table (chapter 06) reads every other chapter's results, so it
# runs last, after Part II's chapters too.
CLOSING   = ch06
RUN_ORDER = $(filter-out $(CLOSING),$(CHAPTERS)) $(CLOSING)

run: $(CHAPTERS)
	@mkdir -p $(BUILD)/results
	@for ch in $(RUN_ORDER); do \
	    echo; echo "==> $(BUILD)/$$ch"; \
	    ./$(BUILD)/$$ch --save-json $(BUILD)/results/$$ch.json || exit 1; \
	done

# --------------------------------------------------------------- tests
doctest:
	@sh tests/require_doctest.sh $(CXX)

$(BUILD)/book_tests: $(TEST_OBJ) $(COMMON_OBJ)
	$(CXX) $(ALL_FLAGS) -o $@ $^

test: doctest
	@$(MAKE) --no-print-directory $(BUILD)/book_tests $(CHAPTERS)
	./$(BUILD)/book_tests
	bash tests/check_programs.sh $(BUILD)
	bash tests/check_layout.sh

# The same tests, built apart, with the sanitizers watching every access.
sanitize: doctest
	@$(MAKE) --no-print-directory BUILD=build/sanitize \
	    CXXFLAGS="-std=c++20 -O1 -g -ffp-contract=off -Wall -Wextra -Wpedantic -Werror -Wno-psabi" \
	    EXTRA="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	    build/sanitize/book_tests
	./build/sanitize/book_tests

# ---------------------------------------------------------- benchmark
# How close the engine runs to this machine's limits (not a test: it times).
# The machine's limits are measured by common/kit/machine_probes.cpp, built
# like everything else (its fused multiply-adds are written as instructions).
BENCH_OBJ = $(patsubst %.cpp,$(BUILD)/%.o,$(wildcard tests/bench/*.cpp))

$(BUILD)/bench: $(BENCH_OBJ) $(COMMON_OBJ)
	$(CXX) $(ALL_FLAGS) -o $@ $^

bench: $(BUILD)/bench
	./$(BUILD)/bench

clean:
	rm -rf build plots

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
