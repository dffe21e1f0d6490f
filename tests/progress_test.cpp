// Signs of life from long work: the forward pass's observer (core) and the
// progress line (kit), drawn from outside the work.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../chapters/07_paged_kv_cache/experiment.h"
#include "../chapters/08_prefix_caching/experiment.h"
#include "../chapters/09_chunked_prefill/experiment.h"
#include "../common/core/generation.h"
#include "../common/core/kv_cache.h"
#include "../common/core/transformer.h"
#include "../common/kit/program.h"
#include "tiny_models.h"

using namespace kv;

namespace {

// A stream's buffer that the progress thread and the test may use at once.
class SharedText : public std::streambuf {
  public:
    std::string text() {
        const std::lock_guard lock(mutex_);
        return text_;
    }
    // Waits until `part` has been written (true), or 60 s have passed.
    bool shows(const std::string& part) {
        for (int i = 0; i < 6000 && text().find(part) == std::string::npos; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return text().find(part) != std::string::npos;
    }

  private:
    int overflow(int c) override {
        const std::lock_guard lock(mutex_);
        text_ += char(c);
        return c;
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
        const std::lock_guard lock(mutex_);
        text_.append(s, std::size_t(n));
        return n;
    }
    std::mutex mutex_;
    std::string text_;
};

}  // namespace

TEST_CASE("progress writes nothing when stderr is not a terminal") {
    std::ostringstream out;
    {
        Progress progress("working", out, false, std::chrono::milliseconds(0));
        progress.update(1, 3, "a note");
    }
    CHECK(out.str().empty());
}

TEST_CASE("progress on a terminal: a new count at once and the seconds since the start") {
    SharedText text;
    std::ostream out(&text);
    {
        Progress progress("working", out, true, std::chrono::milliseconds(0));
        progress.update(1, 3);
        CHECK(text.shows("\rworking 1/3, "));
        progress.update(2, 3, "(a warm-up)");
        CHECK(text.shows("\rworking 2/3 (a warm-up), "));
    }
    // Leaving, it blanks the longest line it showed and goes back.
    const std::string all = text.text();
    REQUIRE(all.ends_with("\r"));
    const std::size_t blank = all.find_last_of('\r', all.size() - 2) + 1;
    CHECK(all.find_first_not_of(' ', blank) == all.size() - 1);
    CHECK(all.size() - 1 - blank >= std::string("working 2/3 (a warm-up), 0 s").size());
}

// A call that cannot report, one long prefill, still shows that it runs:
// the line is drawn by the progress's own thread, from outside.
TEST_CASE("progress on a terminal shows a note given in its quiet time without another update") {
    SharedText text;
    std::ostream out(&text);
    Progress progress("prefilling", out, true, std::chrono::milliseconds(20));
    progress.update(1, 2, "60,000 tokens");
    CHECK(text.shows("\rprefilling 1/2 60,000 tokens, "));
}

TEST_CASE("progress on a terminal waits out its quiet time; so quick runs show nothing") {
    std::ostringstream out;
    {
        Progress progress("working", out, true, std::chrono::seconds(60));
        progress.update(1, 2);
        progress.update(2, 2, "note");
    }
    CHECK(out.str().empty());
}

namespace {

// What `work`, run in a child process with a pseudo-terminal as its
// stderr, shows on that terminal; `seconds`: how long it ran. The child's
// own stdout is the test's.
std::string shown_on_a_terminal(const std::function<void()>& work, double& seconds) {
    const int terminal = posix_openpt(O_RDWR | O_NOCTTY);
    REQUIRE(terminal >= 0);
    REQUIRE(grantpt(terminal) == 0);
    REQUIRE(unlockpt(terminal) == 0);
    const std::string name = ptsname(terminal);
    std::fflush(nullptr);
    const auto start = std::chrono::steady_clock::now();
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const int err = open(name.c_str(), O_RDWR | O_NOCTTY);
        if (err < 0 || dup2(err, STDERR_FILENO) < 0) _exit(97);
        close(err);
        try {
            work();
        } catch (...) {
            _exit(98);
        }
        _exit(0);
    }
    std::string shown;
    char bytes[4096];
    for (ssize_t got; (got = read(terminal, bytes, sizeof bytes)) > 0;) shown.append(bytes, got);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    close(terminal);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return shown;
}

// What `work(scale)` shows on a terminal, run at scale 1, 4, 16, 64 until
// it runs past two seconds (progress waits out one quiet second first): a
// run too short for progress to be seen fails rather than passes.
std::string shown_past_two_seconds(const std::function<void(int scale)>& work) {
    for (int scale = 1; scale <= 64; scale *= 4) {
        double seconds = 0;
        const std::string shown = shown_on_a_terminal([&] { work(scale); }, seconds);
        if (seconds >= 2) return shown;
    }
    FAIL("the work ended within two seconds even at 64 times its size: no progress to see");
    return "";
}

}  // namespace

// Chapter 08's engine work (a long system prompt prefilled, then parallel
// samples) shows on a terminal that it runs, though no pass reports from
// inside.
TEST_CASE("chapter 08 on a terminal shows its engine work while it runs") {
    const std::string shown = shown_past_two_seconds([](int scale) {
        ch08::Experiment e;
        e.queue.cost_model = "analytic";
        e.queue.workload.requests = 20;
        e.model.max_seq = 1024 * scale;
        e.sharing.system_prompt = 500 * scale;
        e.engine_requests = 2;
        e.check();
        e.run();
    });
    CHECK(shown.find("chapter 08: 4/4 parallel samples on the engine, ") != std::string::npos);
}

// Chapter 07's simulations of a long queue (each way of managing memory in
// turn) show on a terminal that they run, and which one runs.
TEST_CASE("chapter 07 on a terminal shows its simulations of a long queue while they run") {
    const std::string shown = shown_past_two_seconds([](int scale) {
        ch07::Experiment e;
        e.queue.cost_model = "analytic";
        e.queue.workload.requests = 15'000 * scale;
        e.engine_requests = 0;
        e.check();
        e.run();
    });
    CHECK(shown.find("chapter 07: 8/8 the queue in the simulator: paged, swap, ") !=
          std::string::npos);
}

// Chapter 09's simulations (each step rule, short prompts then long) show
// on a terminal which one runs.
TEST_CASE("chapter 09 on a terminal shows its simulations while they run") {
    const std::string shown = shown_past_two_seconds([](int scale) {
        ch09::Experiment e;
        e.queue.cost_model = "analytic";
        e.queue.workload.requests = 5'000 * scale;
        e.check();
        e.run();
    });
    CHECK(shown.find("chapter 09: ") != std::string::npos);
    CHECK(shown.find(" the queue in the simulator: ") != std::string::npos);
}
