#include "kernel_plan.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "../core/timing.h"
#include "../kit/files.h"  // read_file, write_state_file, program_folder, as_typed

namespace kv {

// ------------------------------------------------------ the machine's identity

namespace {

// /proc/cpuinfo, or a saved plan: state under build/ is input too, read
// only if it is a regular file of at most `most` bytes (kit's read_file: a
// FIFO would block every chapter, --help included); anything else reads as
// "", no plan, and the shapes are measured again.
std::string read_small_file(const std::string& path, std::uint64_t most) {
    try {
        return read_file(path, "", most);
    } catch (const FileError&) {
        return "";
    }
}

// The value of the first "name : value" line of /proc/cpuinfo, "" if none.
std::string cpuinfo_field(const std::string& text, const std::string& name) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string key = line.substr(0, colon);
        key.erase(key.find_last_not_of(" \t") + 1);
        if (key != name) continue;
        const std::size_t start = line.find_first_not_of(" \t", colon + 1);
        return start == std::string::npos ? "" : line.substr(start);
    }
    return "";
}

// The vector instructions this build was compiled for, from the compiler's
// own macros: the same for every file of a build.
std::string build_instructions() {
    const char* const names[] = {
#if defined(__AVX512F__)
        " avx512f",
#endif
#if defined(__AVX512BW__)
        " avx512bw",
#endif
#if defined(__AVX512VL__)
        " avx512vl",
#endif
#if defined(__AVX2__)
        " avx2",
#endif
#if defined(__FMA__)
        " fma",
#endif
#if defined(__AVX__)
        " avx",
#endif
#if defined(__SSE2__)
        " sse2",
#endif
#if defined(__ARM_NEON)
        " neon",
#endif
#if defined(__ARM_FEATURE_SVE)
        " sve",
#endif
        ""
    };
    std::string s;
    for (const char* name : names) s += name;
    return s.empty() ? "scalar" : s.substr(1);
}

// The compiler, and what changes the times of the code it built: the
// optimization level and sanitizers (an unoptimized or sanitized build runs
// many times slower than -O3). GCC has no macro for the -O level or UBSan,
// so the Makefile passes its own flags for them (KV_BUILD_FLAGS); without
// them, what the macros tell.
std::string compiler() {
#if defined(__clang__)
    std::string name = "clang " __clang_version__;
#elif defined(__GNUC__)
    std::string name = "gcc " __VERSION__;
#else
    std::string name = "unknown compiler";
#endif
#if defined(KV_BUILD_FLAGS)
    if (sizeof KV_BUILD_FLAGS > 1) name += ", " KV_BUILD_FLAGS;
#else
#if !defined(__OPTIMIZE__)
    name += ", unoptimized";
#endif
#if defined(__SANITIZE_ADDRESS__)
    name += ", AddressSanitizer";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    name += ", AddressSanitizer";
#endif
#endif
#if defined(__has_feature)
#if __has_feature(undefined_behavior_sanitizer)
    name += ", UBSan";
#endif
#endif
#endif
    return name;
}

}  // namespace

std::string cpu_identity(const std::string& cpuinfo) {
    std::string cpu = cpuinfo_field(cpuinfo, "model name");
    auto add = [&cpu](const std::string& part) { cpu += (cpu.empty() ? "" : ", ") + part; };
    if (!cpuinfo_field(cpuinfo, "cpu family").empty())  // x86
        add("family " + cpuinfo_field(cpuinfo, "cpu family") + ", model " +
            cpuinfo_field(cpuinfo, "model"));
    if (!cpuinfo_field(cpuinfo, "CPU implementer").empty())  // ARM
        add("implementer " + cpuinfo_field(cpuinfo, "CPU implementer") + ", part " +
            cpuinfo_field(cpuinfo, "CPU part"));
    return cpu.empty() ? "unknown" : cpu;
}

MachineIdentity this_machine() {
    return {cpu_identity(read_small_file("/proc/cpuinfo", 64 << 20)),
            build_instructions() + ", " + compiler()};
}

std::string plan_key(const Config& c) {
    return "layers " + std::to_string(c.n_layers) + " dim " + std::to_string(c.dim) + " kv_dim " +
           std::to_string(c.kv_dim()) + " ffn " + std::to_string(c.ffn_dim) + " vocab " +
           std::to_string(c.vocab_size);
}

// ------------------------------------------------------------ the planner

int fastest_candidate(int candidates, const std::function<double(int)>& time,
                      const PlanBudget& budget) {
    if (candidates <= 1) return 0;
    std::vector<double> best(std::size_t(candidates), std::numeric_limits<double>::infinity());
    double spent = 0;
    for (int round = 0; round < budget.max_rounds; ++round) {
        if (round >= budget.min_rounds && spent >= budget.seconds) break;
        for (int i = 0; i < candidates; ++i) {
            const int k = (round + i) % candidates;
            const double t = time(k);
            spent += t;
            best[std::size_t(k)] = std::min(best[std::size_t(k)], t);
        }
    }
    return static_cast<int>(std::min_element(best.begin(), best.end()) - best.begin());
}

MatmulChoice choose_matmul(const CandidateTimer& time, const PlanBudget& budget) {
    MatmulChoice choice;
    for (RowClass c : {RowClass::one, RowClass::many}) {
        const std::span<const MatmulKernel> kernels = matmul_kernels(c);
        const int k = fastest_candidate(
            static_cast<int>(kernels.size()), [&](int i) { return time(c, i); }, budget);
        choice.of(c) = &kernels[std::size_t(k)];
        if (c == RowClass::one) choice.few = &matmul_kernels(RowClass::few)[std::size_t(k)];
    }
    return choice;
}

namespace {

// The rows each class is timed at: a decode step's (a batch of 16 for many).
int rows_of(RowClass c) {
    return c == RowClass::one ? 1 : 16;
}

// Weight bytes one timed run reads at most, so that a model larger than
// the cache streams from DRAM as in a decode step.
constexpr std::size_t kStreamBytes = std::size_t(32) << 20;

std::size_t bytes_of(const Matrix& m) {
    return m.data.size() * sizeof(float);
}

}  // namespace

CandidateTimer model_timer(const Weights& weights) {
    // The matrices in a forward pass's order, kPerLayer for each layer.
    constexpr std::size_t kPerLayer = 7;
    const std::size_t layers = weights.layers.size();
    std::vector<const Matrix*> all;
    for (const LayerWeights& l : weights.layers)
        all.insert(all.end(), {&l.wq, &l.wk, &l.wv, &l.wo, &l.w1, &l.w3, &l.w2});
    all.push_back(&weights.output);
    std::size_t model_bytes = 0;
    for (const Matrix* m : all) model_bytes += bytes_of(*m);
    // The matrices of each run, in turn: the whole model, or as many whole
    // layers as kStreamBytes holds (at least one), the next ones at each run.
    std::vector<std::vector<const Matrix*>> runs;
    if (model_bytes <= kStreamBytes || layers == 0) {
        runs.push_back(all);
    } else {
        const std::size_t per_run = std::max<std::size_t>(1, kStreamBytes / (model_bytes / layers));
        for (std::size_t l = 0; l + per_run <= layers; l += per_run)
            runs.emplace_back(all.begin() + std::ptrdiff_t(l * kPerLayer),
                              all.begin() + std::ptrdiff_t((l + per_run) * kPerLayer));
    }
    struct Work {
        std::size_t next = 0;      // the run to time next
        std::vector<Matrix> x, y;  // an input and an output per matrix of a run
    };
    auto works = std::make_shared<std::map<RowClass, Work>>();
    for (RowClass c : {RowClass::one, RowClass::many}) {  // a few rows run one row's kernel
        Work& work = (*works)[c];
        for (const Matrix* m : runs.front()) {  // every run has the first one's shapes
            Matrix x(rows_of(c), m->cols);
            for (std::size_t i = 0; i < x.data.size(); ++i)
                x.data[i] = float(int(i % 7) - 3) * 0.25f;
            work.x.push_back(std::move(x));
            work.y.emplace_back(rows_of(c), m->rows);
        }
    }
    return [works, runs](RowClass c, int k) {
        Work& work = works->at(c);
        const std::vector<const Matrix*>& run = runs[work.next];
        work.next = (work.next + 1) % runs.size();
        const MatmulKernel& kernel = matmul_kernels(c)[std::size_t(k)];
        const double start = thread_cpu_seconds();
        for (std::size_t i = 0; i < run.size(); ++i) kernel.run(work.x[i], *run[i], work.y[i]);
        return thread_cpu_seconds() - start;
    };
}

// ------------------------------------------------------------- plan files

namespace {

const char* class_word(RowClass c) {
    return c == RowClass::one ? "one" : c == RowClass::few ? "few" : "many";
}

const MatmulKernel* kernel_named(RowClass c, const std::string& name) {
    for (const MatmulKernel& k : matmul_kernels(c))
        if (name == k.name) return &k;
    return nullptr;
}

}  // namespace

std::string plan_file_text(const MachineIdentity& machine, const std::vector<KernelPlan>& plans) {
    std::string s =
        "# The matrix-product kernel of each row class that measured fastest on this machine,\n"
        "# for each model shape (common/fast/kernel_plan.h). Delete this file to plan again.\n";
    s += "cpu: " + machine.cpu + "\n";
    s += "build: " + machine.build + "\n";
    for (const KernelPlan& p : plans) {
        s += "plan " + p.key + ":";
        for (RowClass c : {RowClass::one, RowClass::few, RowClass::many})
            s += std::string(" ") + class_word(c) + " " + p.matmul.for_class(c).name;
        s += "\n";
    }
    return s;
}

std::vector<KernelPlan> read_plan_text(const std::string& text, const MachineIdentity& machine) {
    std::istringstream in(text);
    std::string line;
    bool cpu_matches = false, build_matches = false;
    std::vector<KernelPlan> plans;
    while (std::getline(in, line)) {
        if (line.rfind("cpu: ", 0) == 0) cpu_matches = line.substr(5) == machine.cpu;
        if (line.rfind("build: ", 0) == 0) build_matches = line.substr(7) == machine.build;
        if (line.rfind("plan ", 0) != 0) continue;
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        KernelPlan p;
        p.key = line.substr(5, colon - 5);
        std::istringstream words(line.substr(colon + 1));
        std::string word, name;
        int found = 0;
        while (words >> word >> name)
            for (RowClass c : {RowClass::one, RowClass::few, RowClass::many})
                if (word == class_word(c))
                    if (const MatmulKernel* k = kernel_named(c, name)) {
                        p.matmul.of(c) = k;
                        ++found;
                    }
        if (found == 3) plans.push_back(p);
    }
    if (!cpu_matches || !build_matches) return {};
    return plans;
}

// ------------------------------------------------- the plans of this process

namespace {

struct Plans {
    std::mutex mutex;
    bool placed = false;                // path chosen (else: beside the program, when first needed)
    std::string path;                   // "" : memory only
    std::vector<KernelPlan> used;       // in the order first needed
    std::vector<KernelPlan> from_file;  // read when the path was chosen
};

Plans& plans() {
    static Plans p;
    return p;
}

// Replaced whole, through the one safe path every output takes (kit's
// files.h: a fresh file beside it, renamed over it; a killed planner's
// leftover removed by the next write). A failed write keeps the plans in
// memory only.
void save(const std::string& path, const std::vector<KernelPlan>& all) {
    try {
        write_state_file(path, plan_file_text(this_machine(), all), "kernel plan");
    } catch (const FileError&) {
    }
}

}  // namespace

namespace {

void place(Plans& p, const std::string& path) {
    p.placed = true;
    p.path = path;
    p.from_file = path.empty() ? std::vector<KernelPlan>{}
                               : read_plan_text(read_small_file(path, 1 << 20), this_machine());
    for (KernelPlan& plan : p.from_file) plan.how = "read from " + as_typed(path);
}

}  // namespace

void keep_kernel_plans_in(const std::string& path) {
    Plans& p = plans();
    std::lock_guard lock(p.mutex);
    place(p, path);
}

std::string kernel_plan_file_beside_this_program() {
    const std::string folder = program_folder();
    return folder.empty() ? "" : folder + "/kernel_plan.txt";
}

MatmulChoice matmul_plan(const Config& config, const Weights& weights) {
    Plans& p = plans();
    std::lock_guard lock(p.mutex);
    if (!p.placed) place(p, kernel_plan_file_beside_this_program());
    const std::string key = plan_key(config);
    for (const KernelPlan& plan : p.used)
        if (plan.key == key) return plan.matmul;
    for (const KernelPlan& plan : p.from_file)
        if (plan.key == key) {
            p.used.push_back(plan);
            return plan.matmul;
        }
    KernelPlan plan;
    plan.key = key;
    const double start = thread_cpu_seconds();
    plan.matmul = choose_matmul(model_timer(weights));
    plan.seconds = thread_cpu_seconds() - start;
    p.used.push_back(plan);
    if (!p.path.empty()) {
        std::erase_if(p.from_file, [&](const KernelPlan& q) { return q.key == key; });
        p.from_file.push_back(plan);
        save(p.path, p.from_file);
    }
    return plan.matmul;
}

std::vector<KernelPlan> kernel_plans_used() {
    Plans& p = plans();
    std::lock_guard lock(p.mutex);
    return p.used;
}

}  // namespace kv
