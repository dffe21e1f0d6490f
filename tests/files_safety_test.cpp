// What a run writes is never lost and never replaces what it should not
// (common/kit/files.h): a standard stream named as an output is written
// where the stream is; an output that is also an input, another output or
// this program's standard output is refused; a signal or a file-size limit
// during a write leaves no file behind and the old files as they were; a
// run's files replace the old ones only after every check has passed; a
// replaced file keeps its
// permissions; a link planted in a shared sticky folder is not followed.
//
// Signals and limits are tried on real child processes (fork): each child
// tells the parent through a pipe when its file is half written, and then
// waits; nothing here waits on a clock.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "../chapters/02_kv_cache/experiment.h"
#include "../chapters/02_kv_cache/report.h"
#include "../chapters/06_closing_table/experiment.h"
#include "../chapters/06_closing_table/report.h"
#include "../common/kit/files.h"
#include "../common/kit/program.h"
#include "../common/real_weights/checkpoint.h"
#include "run_captured.h"
#include "test_files.h"

using namespace kv;
using kv::test::TempDir;
using kv::test::write_bytes;

namespace {

// The names in `dir` of files left beside a target (".kv-part-XXXXXX").
std::vector<std::string> files_beside(const TempDir& dir) {
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind(".kv-part-", 0) == 0) found.push_back(name);
    }
    return found;
}

std::string contents(const std::string& path) {
    return read_file(path, "", 1 << 24);
}

// A child process running `body`, stopped where body calls `ready`: the
// parent then finds the child's files half written, and may signal it.
class Child {
  public:
    // body(ready) runs in the child; ready() tells the parent and then waits
    // for a signal. If body returns, the child exits with its value.
    explicit Child(const std::function<int(const std::function<void()>& ready)>& body) {
        std::cout.flush();
        std::cerr.flush();
        std::fflush(nullptr);
        int fds[2];
        REQUIRE(pipe(fds) == 0);
        pid_ = fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            close(fds[0]);
            int code = 99;
            try {
                code = body([&] {
                    const char r = 'r';
                    if (::write(fds[1], &r, 1) != 1) _exit(97);
                    for (;;) pause();
                });
            } catch (const std::exception& e) {
                std::fprintf(stderr, "child: %s\n", e.what());
                code = 98;
            }
            _exit(code);
        }
        close(fds[1]);
        ready_ = fds[0];
    }
    ~Child() {
        if (ready_ >= 0) close(ready_);
        if (!waited_) {
            kill(pid_, SIGKILL);
            int status = 0;
            waitpid(pid_, &status, 0);
        }
    }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    // Whether the child said it is ready (false: it ended first).
    bool wait_ready() {
        char r = 0;
        return ::read(ready_, &r, 1) == 1;
    }
    // Its wait status, once it has ended.
    int wait() {
        int status = 0;
        REQUIRE(waitpid(pid_, &status, 0) == pid_);
        waited_ = true;
        return status;
    }
    pid_t pid() const { return pid_; }

  private:
    pid_t pid_ = -1;
    int ready_ = -1;
    bool waited_ = false;
};

// A file opened for appending, `text` already in it; its descriptor.
int appending(const std::string& path, const std::string& text) {
    write_bytes(path, text);
    const int fd = open(path.c_str(), O_WRONLY | O_APPEND);
    REQUIRE(fd >= 0);
    return fd;
}

ino_t inode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(stat(path.c_str(), &st) == 0);
    return st.st_ino;
}

// A tiny model's checkpoint, written by the book's own writer.
Config tiny_checkpoint_config() {
    return Config{.n_layers = 1,
                  .dim = 16,
                  .n_heads = 2,
                  .n_kv_heads = 1,
                  .ffn_dim = 32,
                  .vocab_size = 300,
                  .max_seq = 32};
}

const std::vector<std::string> kQuickCh02 = {"--prompt-len", "3", "--answer-len", "3",
                                             "--repeats",    "1"};

test::Ran run_ch02(std::vector<std::string> args) {
    args.insert(args.end(), kQuickCh02.begin(), kQuickCh02.end());
    ch02::Experiment experiment;
    return test::run_captured("02_kv_cache", args, experiment, ch02::report);
}

int lines(const std::string& text) {
    return int(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

// ------------------------------------------------ streams and files that are also inputs

TEST_CASE("a standard stream named as an output is written where the stream is") {
    const TempDir dir;
    const std::string log = dir.file("run.log"), err = dir.file("err.log");
    const ino_t log_inode = [&] {
        write_bytes(log, "");
        return inode_of(log);
    }();
    Child child([&](const std::function<void()>&) {
        // `program --save-json /dev/stdout >> run.log`, and the same for stderr.
        dup2(appending(log, "an earlier line\n"), STDOUT_FILENO);
        dup2(appending(err, "an earlier error\n"), STDERR_FILENO);
        write_file("/dev/stdout", "{\"a\": 1}\n", "--save-json");
        write_file("/dev/fd/1", "{\"b\": 2}\n", "--save-json");
        write_file("/proc/self/fd/1", "{\"c\": 3}\n", "--save-json");
        write_file("/dev/stderr", "{\"d\": 4}\n", "--save-json");
        return 0;
    });
    const int status = child.wait();
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(contents(log) == "an earlier line\n{\"a\": 1}\n{\"b\": 2}\n{\"c\": 3}\n");
    CHECK(inode_of(log) == log_inode);  // the same file, appended to, not replaced
    CHECK(contents(err) == "an earlier error\n{\"d\": 4}\n");
    CHECK(files_beside(dir).empty());
}

TEST_CASE("a regular file that is standard output under another name is refused") {
    const TempDir dir;
    const std::string log = dir.file("run.log");
    Child child([&](const std::function<void()>&) {
        dup2(appending(log, "the report\n"),
             STDOUT_FILENO);  // `program --save-json run.log > run.log`
        try {
            write_file(log, "{}\n", "--save-json");
        } catch (const FileError& e) {
            const std::string said = e.what();
            return said.find("--save-json " + log +
                             ": the same file as this program's standard output") == 0
                       ? 0
                       : 3;
        }
        return 4;  // written
    });
    const int status = child.wait();
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(contents(log) == "the report\n");
}

TEST_CASE("an output that is also an input or another output is refused before the run") {
    const TempDir dir;
    const Config c = tiny_checkpoint_config();
    const std::string model = dir.file("m.bin");
    write_checkpoint(model, c, random_weights(c, 1), "--save-checkpoint");
    const std::string before = contents(model);
    std::filesystem::create_symlink(model, dir.file("link.bin"));
    const std::string plots = "--plot-dir=" + dir.file("plots");

    // The model named again as the JSON's file, directly or through a link.
    for (const std::string& out : {model, dir.file("link.bin"), dir.file("./m.bin")}) {
        CAPTURE(out);
        const test::Ran ran = run_ch02({"--checkpoint", model, "--save-json", out, plots});
        CHECK(ran.status == 2);
        CHECK(lines(ran.err) == 1);
        CHECK(ran.err.find("the same file as --checkpoint") != std::string::npos);
        CHECK(ran.err.find("an output may not replace an input") != std::string::npos);
        CHECK(contents(model) == before);
    }
    // Two outputs, one file: only one of them would be left.
    for (const auto& flags : {std::pair{"--save-checkpoint", "--save-tokenizer"},
                              std::pair{"--save-json", "--save-checkpoint"}}) {
        const std::string first = flags.first, second = flags.second;
        CAPTURE(first);
        const std::string shared = dir.file("s.bin");
        const test::Ran ran = run_ch02({"--vocab", "300", first, shared, second, shared, plots});
        CHECK(ran.status == 2);
        CHECK(lines(ran.err) == 1);
        CHECK(ran.err.find("each output needs a file of its own") != std::string::npos);
        CHECK_FALSE(std::filesystem::exists(shared));
    }
}

TEST_CASE("the JSON named as one of the run's own plots is refused and the plot kept") {
    const TempDir dir;
    const std::string plot = dir.file("plots/02_step_time.svg");
    write_file(plot, "<svg>an earlier run</svg>");
    const test::Ran ran =
        run_ch02({"--vocab", "300", "--plot-dir", dir.file("plots"), "--save-json", plot});
    CHECK(ran.status == 2);
    CHECK(lines(ran.err) == 1);
    CHECK(ran.err.find("each output needs a file of its own") != std::string::npos);
    CHECK(contents(plot) == "<svg>an earlier run</svg>");
    CHECK(files_beside(dir).empty());
}

TEST_CASE("chapter 06 refuses to write its results over a file it reads") {
    const TempDir dir;
    write_file(dir.file("ch02.json"), R"({"results_format": 1, "chapter": "02_kv_cache", )"
                                      R"("naive_answer_ms": 400, "cached_answer_ms": 50})");
    write_file(dir.file("ch03.json"),
               R"({"results_format": 1, "chapter": "03_memory_arithmetic", )"
               R"("bytes_per_token": 131072, "bytes_per_conversation": 536870912})");
    write_file(dir.file("ch05.json"),
               R"({"results_format": 1, "chapter": "05_queue_simulation", )"
               R"("median_ttft_no_cache_s": 300, "median_ttft_cache_s": 20, )"
               R"("median_ttft_continuous_s": 10})");
    const std::string before = contents(dir.file("ch03.json"));
    ch06::Experiment experiment;
    const test::Ran ran = test::run_captured(
        "06_closing_table",
        {"--results-dir", dir.path.string(), "--save-json", dir.file("ch03.json")}, experiment,
        ch06::report);
    CHECK(ran.status == 2);
    CHECK(lines(ran.err) == 1);
    CHECK(ran.err.find("this run reads; an output may not replace an input") != std::string::npos);
    CHECK(contents(dir.file("ch03.json")) == before);
}

// ------------------------------------------------------------- signals and limits

TEST_CASE("SIGINT or SIGTERM or SIGHUP during a write removes the file beside its target") {
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
        CAPTURE(sig);
        const TempDir dir;
        const std::string target = dir.file("model.bin");
        write_bytes(target, "the old model\n");
        Child child([&](const std::function<void()>& ready) {
            signal(sig, SIG_DFL);  // as a program starts (doctest has its own handlers)
            OutputFile out(target, "--save-checkpoint");
            out.write(std::string(1 << 20, 'x'));  // half of a large file
            ready();
            return 0;
        });
        REQUIRE(child.wait_ready());
        CHECK(files_beside(dir).size() == 1);  // the file beside the target is there
        REQUIRE(kill(child.pid(), sig) == 0);
        const int status = child.wait();
        // Ended by the signal itself, as without the cleanup.
        CHECK(WIFSIGNALED(status));
        CHECK(WTERMSIG(status) == sig);
        CHECK(files_beside(dir).empty());
        CHECK(contents(target) == "the old model\n");
    }
}

TEST_CASE("a run that fails before its end replaces none of its old files") {
    // Chapter 02 writes its two plots, then its JSON, which fails (its folder
    // cannot be made under a file): the plots of the earlier run stay.
    const TempDir dir;
    write_file(dir.file("plots/02_step_time.svg"), "<svg>earlier</svg>");
    write_file(dir.file("plots/02_timeline.svg"), "<svg>earlier too</svg>");
    write_bytes(dir.file("file"), "x");
    const test::Ran ran = run_ch02(
        {"--plot-dir", dir.file("plots"), "--save-json", dir.file("file/results/ch02.json")});
    CHECK(ran.status == 2);
    CHECK(lines(ran.err) == 1);
    CHECK(contents(dir.file("plots/02_step_time.svg")) == "<svg>earlier</svg>");
    CHECK(contents(dir.file("plots/02_timeline.svg")) == "<svg>earlier too</svg>");
    CHECK(files_beside(dir).empty());
}

// `./build/ch02 --save-json results.json >&-` (or `> /dev/full`): the
// report cannot be printed, so the run fails, and it fails before it
// replaces the JSON or the plots an earlier run left.
TEST_CASE("a run whose standard output is closed or full replaces none of its old files") {
    for (const bool closed : {true, false}) {
        CAPTURE(closed);
        const TempDir dir;
        const std::string json = dir.file("results.json"), err = dir.file("err.txt");
        write_bytes(json, "old json");
        write_file(dir.file("plots/02_step_time.svg"), "<svg>earlier</svg>");
        write_bytes(err, "");
        Child child([&](const std::function<void()>&) {
            const int to_err = open(err.c_str(), O_WRONLY | O_APPEND),
                      full = open("/dev/full", O_WRONLY);
            dup2(to_err, STDERR_FILENO);
            if (closed)
                close(STDOUT_FILENO);
            else
                dup2(full, STDOUT_FILENO);
            close(to_err);
            close(full);
            std::vector<std::string> args = {"--save-json", json, "--plot-dir", dir.file("plots")};
            args.insert(args.end(), kQuickCh02.begin(), kQuickCh02.end());
            std::vector<const char*> argv = {"ch02"};
            for (const std::string& a : args) argv.push_back(a.c_str());
            ch02::Experiment experiment;
            return run_chapter(int(argv.size()), argv.data(), "ch02", "a test run", experiment,
                               ch02::report);
        });
        const int status = child.wait();
        REQUIRE(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 2);
        const std::string said = contents(err);
        CHECK(lines(said) == 1);
        CHECK(said.find(closed ? "ch02: standard output is closed"
                               : "ch02: cannot write standard output") == 0);
        CHECK(contents(json) == "old json");
        CHECK(contents(dir.file("plots/02_step_time.svg")) == "<svg>earlier</svg>");
        CHECK(files_beside(dir).empty());
    }
}

// SIGKILL leaves no chance to clean up: the file beside the target stays,
// named with its writer's pid, until the next write to that folder finds
// that pid gone. Files of a live writer, and names not of that pattern, stay.
TEST_CASE("a killed writer's file beside its target is removed by the next write to the folder") {
    const TempDir dir;
    const std::string target = dir.file("model.bin");
    write_bytes(target, "the old model\n");
    Child child([&](const std::function<void()>& ready) {
        OutputFile out(target, "--save-checkpoint");
        out.write(std::string(1 << 20, 'x'));
        ready();
        return 0;
    });
    REQUIRE(child.wait_ready());
    REQUIRE(kill(child.pid(), SIGKILL) == 0);
    child.wait();
    const std::vector<std::string> left = files_beside(dir);
    REQUIRE(left.size() == 1);
    CHECK(left[0].rfind(".kv-part-" + std::to_string(child.pid()) + "-", 0) == 0);
    const std::vector<std::string> kept = {".kv-part-" + std::to_string(getpid()) + "-abcdef",
                                           ".kv-part-abcdef", ".kv-part-1-abcdef",
                                           ".kv-part-" + std::to_string(child.pid()) + "-abc"};
    for (const std::string& name : kept) write_bytes(dir.file(name), "not a leftover");
    write_file(dir.file("results.json"), "{}\n", "--save-json");
    std::vector<std::string> now = files_beside(dir), want = kept;
    std::sort(now.begin(), now.end());
    std::sort(want.begin(), want.end());
    CHECK(now == want);
    CHECK(contents(target) == "the old model\n");
}

TEST_CASE("a signal before a run's end leaves every old file and removes every new one") {
    const TempDir dir;
    const std::string plot = dir.file("plot.svg"), json = dir.file("results.json");
    write_bytes(plot, "old plot");
    write_bytes(json, "old json");
    {
        Child child([&](const std::function<void()>& ready) {
            signal(SIGTERM, SIG_DFL);
            RunFiles files;
            write_file(plot, "new plot");
            write_file(json, "new json");
            ready();  // both written, neither renamed yet
            return 0;
        });
        REQUIRE(child.wait_ready());
        CHECK(files_beside(dir).size() == 2);
        REQUIRE(kill(child.pid(), SIGTERM) == 0);
        const int status = child.wait();
        CHECK(WIFSIGNALED(status));
        CHECK(contents(plot) == "old plot");
        CHECK(contents(json) == "old json");
        CHECK(files_beside(dir).empty());
    }
    // Dropped without commit (an error on the way): the same.
    {
        RunFiles files;
        write_file(plot, "new plot");
        write_file(json, "new json");
    }
    CHECK(contents(plot) == "old plot");
    CHECK(files_beside(dir).empty());
    // Committed: both at once.
    {
        RunFiles files;
        write_file(plot, "new plot");
        write_file(json, "new json");
        CHECK(contents(plot) == "old plot");  // nothing replaced before the commit
        files.commit();
    }
    CHECK(contents(plot) == "new plot");
    CHECK(contents(json) == "new json");
    CHECK(files_beside(dir).empty());
}

TEST_CASE("a write past the file-size limit is one line naming the file and the limit") {
    const TempDir dir;
    const std::string target = dir.file("results.json"), err = dir.file("err.txt");
    write_bytes(err, "");
    Child child([&](const std::function<void()>&) {
        signal(SIGXFSZ, SIG_DFL);  // as a program starts: the signal would kill it
        struct rlimit limit {
            64 << 10, 64 << 10
        };
        if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return 96;
        dup2(open(err.c_str(), O_WRONLY | O_APPEND), STDERR_FILENO);
        return run_program("t", [&] {
            write_file(target, std::string(200 << 10, 'x'), "--save-json");
            return 0;
        });
    });
    const int status = child.wait();
    REQUIRE(WIFEXITED(status));  // not killed by SIGXFSZ
    CHECK(WEXITSTATUS(status) == 2);
    const std::string said = contents(err);
    INFO(said);
    CHECK(said == "t: --save-json " + target +
                      ": cannot write: File too large (this program may write files of at most "
                      "64 KiB: ulimit -f)\n");
    CHECK_FALSE(std::filesystem::exists(target));
    CHECK(files_beside(dir).empty());
}

// ------------------------------------------------------------ permissions and links

TEST_CASE("a file replaced keeps its permissions") {
    const TempDir dir;
    const std::string path = dir.file("secret.json");
    for (const mode_t mode : {0600, 0640, 0604}) {
        CAPTURE(mode);
        write_file(path, "first", "--save-json");
        REQUIRE(chmod(path.c_str(), mode) == 0);
        write_file(path, "second", "--save-json");
        struct stat st {};
        REQUIRE(stat(path.c_str(), &st) == 0);
        CHECK((st.st_mode & 07777) == mode);
        CHECK(contents(path) == "second");
    }
    // The checkpoint writer replaces through the same file.
    const Config c = tiny_checkpoint_config();
    write_bytes(dir.file("m.bin"), "x");
    REQUIRE(chmod(dir.file("m.bin").c_str(), 0600) == 0);
    write_checkpoint(dir.file("m.bin"), c, random_weights(c, 1), "--save-checkpoint");
    struct stat st {};
    REQUIRE(stat(dir.file("m.bin").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
}

TEST_CASE("a link another user planted in a shared sticky folder is not followed") {
    if (geteuid() != 0) {
        MESSAGE("skipped: planting a link owned by another user needs root");
        return;
    }
    const TempDir dir;
    const std::string shared = dir.file("shared"), victim = dir.file("victim.txt");
    std::filesystem::create_directory(shared);
    REQUIRE(chmod(shared.c_str(), 01777) == 0);  // as /tmp
    write_bytes(victim, "mine\n");
    const std::string planted = shared + "/out.json";
    std::filesystem::create_symlink(victim, planted);
    REQUIRE(lchown(planted.c_str(), 65534, 65534) == 0);  // nobody's
    try {
        write_file(planted, "overwritten\n", "--save-json");
        FAIL("the planted link was followed");
    } catch (const FileError& e) {
        CHECK(std::string(e.what()).find("--save-json " + planted +
                                         ": a symbolic link owned by another user (uid 65534)") ==
              0);
    }
    CHECK(contents(victim) == "mine\n");
    CHECK(std::filesystem::is_symlink(planted));
    // The same through a chapter's flag: refused before the run.
    const test::Ran ran = run_ch02({"--save-json", planted, "--plot-dir", dir.file("plots")});
    CHECK(ran.status == 2);
    CHECK(lines(ran.err) == 1);
    CHECK(contents(victim) == "mine\n");

    // A link of one's own there is followed, as anywhere.
    const std::string own = shared + "/own.json";
    std::filesystem::create_symlink(victim, own);
    write_file(own, "through my link\n", "--save-json");
    CHECK(contents(victim) == "through my link\n");
    // And outside a sticky folder, anyone's link is followed.
    REQUIRE(chmod(shared.c_str(), 0777) == 0);
    write_file(planted, "not shared now\n", "--save-json");
    CHECK(contents(victim) == "not shared now\n");
}
