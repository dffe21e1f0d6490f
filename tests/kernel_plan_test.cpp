// The planner that chooses the matrix-product kernels by measurement. Its
// timer is injected here, so no test depends on how fast anything runs:
// the "times" are made up, and the planner must pick by them alone.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>

#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../common/core/block_pool.h"
#include "../common/core/kv_cache.h"
#include "../common/core/paged_kv_cache.h"
#include "../common/core/transformer.h"
#include "../common/fast/kernel_plan.h"
#include "test_files.h"
#include "tiny_models.h"

using namespace kv;

TEST_CASE("the planner picks the fastest candidate even when a slow one is listed first") {
    // Candidate 0 is slow, 3 is the fastest, the rest in between.
    const std::vector<double> seconds = {9.0, 4.0, 5.0, 1.0, 2.0};
    std::vector<int> runs(seconds.size(), 0);
    auto time = [&](int k) {
        ++runs[std::size_t(k)];
        return seconds[std::size_t(k)];
    };
    CHECK(fastest_candidate(5, time) == 3);
    // Every candidate had the same number of turns.
    for (int r : runs) CHECK(r == runs[0]);
    // The same answer every time: nothing but the timer decides.
    for (int i = 0; i < 3; ++i) CHECK(fastest_candidate(5, time) == 3);
}

TEST_CASE("the planner keeps each candidate's fastest run and breaks ties to the earlier") {
    // Candidate 0 is slow on its first run only (a cold cache, a busy
    // neighbour): its best run is the fastest of all.
    int calls0 = 0;
    auto time = [&](int k) {
        if (k == 0) return ++calls0 == 1 ? 100.0 : 0.5;
        return 1.0;
    };
    CHECK(fastest_candidate(3, time) == 0);
    auto tie = [](int k) { return k == 0 ? 2.0 : 1.0; };  // 1 and 2 tie
    CHECK(fastest_candidate(3, tie) == 1);
    CHECK(fastest_candidate(1, tie) == 0);
}

TEST_CASE("the planner's rounds: at least min_rounds, at most max_rounds, first turn rotates") {
    std::vector<int> order;
    auto time = [&](int k) {
        order.push_back(k);
        return 1.0;
    };
    PlanBudget budget;
    budget.min_rounds = 2;
    budget.max_rounds = 10;
    budget.seconds = 0;  // spent after the first run: stops at min_rounds
    fastest_candidate(3, time, budget);
    CHECK(order == std::vector<int>{0, 1, 2, 1, 2, 0});
    order.clear();
    budget.seconds = 1e9;  // never spent: stops at max_rounds
    fastest_candidate(3, time, budget);
    CHECK(order.size() == 30);
}

TEST_CASE("choose_matmul picks the fastest for one row and many, and a few rows run one row's") {
    // The first candidate of each class is made slowest, the last fastest;
    // a few rows' timer would pick the first, and is never asked.
    int few_runs = 0;
    auto time = [&](RowClass c, int k) {
        const int n = static_cast<int>(matmul_kernels(c).size());
        if (c == RowClass::few) return ++few_runs, k == 0 ? 1.0 : 50.0;
        return k == 0 ? 50.0 : k == n - 1 ? 1.0 : 10.0 + k;
    };
    const MatmulChoice choice = choose_matmul(time);
    for (RowClass c : {RowClass::one, RowClass::few, RowClass::many}) {
        const std::span<const MatmulKernel> kernels = matmul_kernels(c);
        CHECK(&choice.for_class(c) == &kernels.back());
    }
    CHECK(few_runs == 0);
}

TEST_CASE("one row and a few rows have the same candidates in the same order") {
    // So a few rows run the one-row kernel itself: the same weights
    // streamed past with more rows of work, never a shorter step.
    const std::span<const MatmulKernel> one = matmul_kernels(RowClass::one);
    const std::span<const MatmulKernel> few = matmul_kernels(RowClass::few);
    REQUIRE(one.size() == few.size());
    for (std::size_t k = 0; k < one.size(); ++k) {
        CHECK(std::string(one[k].name) == few[k].name);
        CHECK((one[k].run == few[k].run));
    }
}

namespace {

MatmulChoice last_of_each() {
    MatmulChoice choice;
    for (RowClass c : {RowClass::one, RowClass::few, RowClass::many})
        choice.of(c) = &matmul_kernels(c).back();
    return choice;
}

const MachineIdentity here{"Some CPU, family 25, model 17", "avx2 fma avx sse2, gcc 12.2.0"};

}  // namespace

TEST_CASE("a plan file reads back what was written") {
    KernelPlan a, b;
    a.key = plan_key(test::tiny_config());
    b.key = plan_key(Config{});
    b.matmul = last_of_each();
    const std::string text = plan_file_text(here, {a, b});
    INFO(text);
    const std::vector<KernelPlan> back = read_plan_text(text, here);
    REQUIRE(back.size() == 2);
    CHECK(back[0].key == a.key);
    CHECK(back[1].key == "layers 6 dim 256 kv_dim 64 ffn 768 vocab 4096");
    for (RowClass c : {RowClass::one, RowClass::few, RowClass::many}) {
        CHECK(&back[0].matmul.for_class(c) == &a.matmul.for_class(c));
        CHECK(&back[1].matmul.for_class(c) == &b.matmul.for_class(c));
    }
}

TEST_CASE("this build's identity names its optimization level and its sanitizers") {
    // The Makefile and CMake tell kernel_plan.cpp its -O level and any
    // -fsanitize (GCC has no macro for either): an -O0 or sanitized build
    // must not reuse an -O3 build's plan or prices.
    const std::string build = this_machine().build;
    INFO(build);
    CHECK(build.find(", -O") != std::string::npos);
#if defined(__SANITIZE_ADDRESS__)
    CHECK(build.find("-fsanitize=") != std::string::npos);
    CHECK(build.find("address") != std::string::npos);
#endif
}

TEST_CASE("a plan made on another machine or by another build is ignored") {
    KernelPlan p;
    p.key = plan_key(Config{});
    const std::string text = plan_file_text(here, {p});
    MachineIdentity other_cpu = here, other_build = here;
    other_cpu.cpu = "Some CPU, family 25, model 97";
    other_build.build = "sse2, gcc 12.2.0";
    CHECK(read_plan_text(text, other_cpu).empty());
    CHECK(read_plan_text(text, other_build).empty());
    CHECK(read_plan_text("", here).empty());
    CHECK(read_plan_text("not a plan\n", here).empty());
    // A line naming a kernel this build does not have is skipped, the rest kept.
    const std::string unknown = text +
                                "plan layers 1 dim 8 kv_dim 8 ffn 8 vocab 8: one nonsense "
                                "few stream8 many tile4x4\n";
    CHECK(read_plan_text(unknown, here).size() == 1);
}

TEST_CASE("a CPU is named by its model name and its family and model or implementer and part") {
    CHECK(cpu_identity("processor\t: 0\ncpu family\t: 6\nmodel\t\t: 167\n"
                       "model name\t: Intel(R) Xeon(R) Processor\n") ==
          "Intel(R) Xeon(R) Processor, family 6, model 167");
    CHECK(
        cpu_identity("model name\t: Some ARM core\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n") ==
        "Some ARM core, implementer 0x41, part 0xd0c");
    CHECK(cpu_identity("CPU implementer\t: 0x41\nCPU part\t: 0xd0c\n") ==
          "implementer 0x41, part 0xd0c");
    CHECK(cpu_identity("") == "unknown");
}

TEST_CASE("this machine has an identity and a plan file lives beside the program") {
    const MachineIdentity me = this_machine();
    CHECK(!me.cpu.empty());
    CHECK(!me.build.empty());
    // Where the program is, whatever the folder it runs in or its argv[0].
    const std::filesystem::path self = std::filesystem::canonical("/proc/self/exe");
    CHECK(kernel_plan_file_beside_this_program() ==
          (self.parent_path() / "kernel_plan.txt").string());
}

TEST_CASE("a model shape is planned once per process and kept in memory") {
    const Config c = test::tiny_config();
    Transformer first(c, 1), second(c, 2);  // the second finds the first's plan
    for (RowClass k : {RowClass::one, RowClass::few, RowClass::many})
        CHECK(&first.matmul_kernels.for_class(k) == &second.matmul_kernels.for_class(k));
    int found = 0;
    for (const KernelPlan& p : kernel_plans_used()) found += p.key == plan_key(c);
    CHECK(found == 1);
}

TEST_CASE("a new plan is saved whole and a plan that cannot be saved leaves no file behind") {
    const test::TempDir dir;
    Config c = test::tiny_config();
    c.vocab_size = 89;  // shapes no other test plans, so each is measured here
    keep_kernel_plans_in(dir.file("kernel_plan.txt"));
    const Transformer model(c, 1);
    // A folder where the file should be (the rename fails) and a folder
    // that is not there: planned all the same, kept in memory only.
    std::filesystem::create_directory(dir.file("a_folder"));
    for (const std::string& path : {dir.file("a_folder"), dir.file("missing/kernel_plan.txt")}) {
        keep_kernel_plans_in(path);
        c.vocab_size -= 2;
        const Transformer unsaved(c, 1);
    }
    keep_kernel_plans_in("");
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path))
        names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    CHECK(names == std::vector<std::string>{"a_folder", "kernel_plan.txt"});
    std::ifstream in(dir.file("kernel_plan.txt"));
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::vector<KernelPlan> back = read_plan_text(text, this_machine());
    REQUIRE(back.size() == 1);
    CHECK(back[0].key == plan_key(model.config()));
    for (RowClass k : {RowClass::one, RowClass::few, RowClass::many})
        CHECK(&back[0].matmul.for_class(k) == &model.matmul_kernels.for_class(k));
}

namespace {

// Every logit of a prefill, two decode steps, a short prefill and a batched
// step on paged caches, as bits.
std::vector<std::uint32_t> logit_bits(Transformer& model) {
    const Config& c = model.config();
    std::vector<std::uint32_t> bits;
    auto keep = [&](std::span<const float> logits) {
        for (float f : logits) bits.push_back(std::bit_cast<std::uint32_t>(f));
    };
    KVCache cache(c);
    const std::vector<int> prompt = {3, 1, 4, 1, 5, 9, 2};
    keep(model.forward(prompt, cache));
    for (int t : {6, 5}) keep(model.forward(std::vector<int>{t}, cache));
    KVCache short_prompt(c);
    keep(model.forward(std::vector<int>{2, 7, 1}, short_prompt));
    BlockPool pool(c, 4, 64);
    std::vector<PagedKVCache> paged;
    for (int i = 0; i < 6; ++i) paged.emplace_back(pool, c.max_seq);
    const std::vector<std::vector<int>> tokens = {{1, 2, 3}, {4}, {5, 6}, {7}, {8}, {9, 10, 11}};
    std::vector<SequenceInput> inputs;
    for (int i = 0; i < 6; ++i) inputs.push_back({tokens[std::size_t(i)], &paged[std::size_t(i)]});
    const Matrix& out = model.forward(inputs);
    for (int i = 0; i < out.rows; ++i) keep(out.row_span(i));
    return bits;
}

}  // namespace

TEST_CASE("every kernel the planner may choose gives the same logits to the last bit") {
    // One row (decode), 2 to 4 rows (a prefill of 3) and many (a prefill of
    // 7, a batch of 6 sequences in 11 rows): each candidate of each class in
    // turn, the others left at their first.
    for (const Config& c : test::shapes_to_check()) {
        Transformer model(c, 11);
        model.matmul_kernels = MatmulChoice();
        const std::vector<std::uint32_t> first = logit_bits(model);
        for (RowClass k : {RowClass::one, RowClass::few, RowClass::many})
            for (const MatmulKernel& kernel : matmul_kernels(k)) {
                model.matmul_kernels = MatmulChoice();
                model.matmul_kernels.of(k) = &kernel;
                INFO(c.describe() << ": " << kernel.name);
                CHECK(logit_bits(model) == first);
            }
    }
}

TEST_CASE("a plan file that is not a small regular file is not read: measured again, no hang") {
    const test::TempDir dir;
    Config c = test::tiny_config();
    c.vocab_size = 83;  // a shape no other test plans
    const std::string fifo = dir.file("fifo_plan.txt");
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);  // opening it to read would wait for a writer
    keep_kernel_plans_in(fifo);
    const Transformer through_fifo(c, 1);  // returns: the FIFO is never opened
    // A plan file over 1 MiB that opens with this machine's plan for the
    // shape: not read either. The same lines in a small file are read (the
    // control: a reader that read the huge file would be seen).
    auto write_plan = [&](const std::string& path, int vocab, std::size_t padding) {
        c.vocab_size = vocab;
        KernelPlan plan;
        plan.key = plan_key(c);
        std::ofstream(path) << plan_file_text(this_machine(), {plan}) << std::string(padding, '#')
                            << "\n";
    };
    const std::string huge = dir.file("huge_plan.txt"), small = dir.file("small_plan.txt");
    write_plan(huge, 81, 2u << 20);
    keep_kernel_plans_in(huge);
    const Transformer through_huge(c, 1);
    write_plan(small, 75, 0);
    keep_kernel_plans_in(small);
    const Transformer through_small(c, 1);
    keep_kernel_plans_in("");
    int read_small = 0;
    for (const KernelPlan& p : kernel_plans_used()) {
        if (p.key == plan_key(through_fifo.config()) || p.key == plan_key(through_huge.config()))
            CHECK(p.how.find("read from") == std::string::npos);
        if (p.key == plan_key(through_small.config())) read_small += p.how == "read from " + small;
    }
    CHECK(read_small == 1);
}

TEST_CASE(
    "a plan is saved through a new file of its own: a link planted beside it is not followed") {
    const test::TempDir dir;
    Config c = test::tiny_config();
    c.vocab_size = 79;
    const std::string path = dir.file("kernel_plan.txt");
    const std::string target = dir.file("victim.txt");
    { std::ofstream(target) << "keep me\n"; }
    // The name the old code wrote to: path + ".tmp." + this process's id.
    std::filesystem::create_symlink(target, path + ".tmp." + std::to_string(getpid()));
    keep_kernel_plans_in(path);
    const Transformer model(c, 1);
    keep_kernel_plans_in("");
    std::ifstream in(target);
    std::string line;
    std::getline(in, line);
    CHECK(line == "keep me");
    CHECK(std::filesystem::is_regular_file(path));
}

// A planner killed outright (SIGKILL) while saving leaves its file beside
// the plan, named with its pid: the next save, through the kit's one write
// path, finds that pid gone and removes it.
TEST_CASE("a killed planner's file beside the plan is removed by the next save") {
    const test::TempDir dir;
    const pid_t gone = fork();
    REQUIRE(gone >= 0);
    if (gone == 0) _exit(0);
    int status = 0;
    REQUIRE(waitpid(gone, &status, 0) == gone);
    const std::string leftover = dir.file(".kv-part-" + std::to_string(gone) + "-a1b2c3");
    { std::ofstream(leftover) << "half a plan"; }
    Config c = test::tiny_config();
    c.vocab_size = 77;  // a shape no other test plans: measured, then saved
    keep_kernel_plans_in(dir.file("kernel_plan.txt"));
    const Transformer model(c, 1);
    keep_kernel_plans_in("");
    CHECK_FALSE(std::filesystem::exists(leftover));
    CHECK(std::filesystem::is_regular_file(dir.file("kernel_plan.txt")));
}
