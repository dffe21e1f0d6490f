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
#include <mutex>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../chapters/08_prefix_caching/experiment.h"
#include "../common/core/generation.h"
#include "../common/core/kv_cache.h"
#include "../common/core/transformer.h"
#include "../common/kit/program.h"
#include "tiny_models.h"

using namespace kv;

namespace {

// tiny_config with room for a pass longer than two signs' worth of rows.
Config long_config() {
    Config c = test::tiny_config();
    c.max_seq = 2 * Transformer::kRowsPerSign + 100;
    return c;
}

std::vector<float> copy(std::span<const float> logits) {
    return {logits.begin(), logits.end()};
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("the pass observer is told after each layer in order and changes no logit") {
    const Config c = test::tiny_config();
    Transformer watched(c, 5), plain(c, 5);
    std::vector<PassProgress> seen;
    watched.on_progress = [&](const PassProgress& p) { seen.push_back(p); };
    const std::vector<int> prompt = fixed_prompt(9, c.vocab_size, 3);
    KVCache a(c), b(c);
    CHECK(same_bits(copy(watched.forward(prompt, a)), copy(plain.forward(prompt, b))));
    REQUIRE(seen.size() == std::size_t(c.n_layers));
    for (int l = 0; l < c.n_layers; ++l) {
        CHECK(seen[std::size_t(l)].layer == l);
        CHECK(seen[std::size_t(l)].layers == c.n_layers);
        CHECK(seen[std::size_t(l)].rows_done == 9);
        CHECK(seen[std::size_t(l)].rows == 9);
    }
    // A decode step: one row, again once per layer.
    seen.clear();
    const int token = 7;
    CHECK(same_bits(copy(watched.forward(std::span(&token, 1), a)),
                    copy(plain.forward(std::span(&token, 1), b))));
    REQUIRE(seen.size() == std::size_t(c.n_layers));
    CHECK(seen.back().rows == 1);
}

TEST_CASE("a long pass tells how far each layer's attention has got; all sequences together") {
    const Config c = long_config();
    const int sign = Transformer::kRowsPerSign;
    Transformer watched(c, 8), plain(c, 8);
    std::vector<PassProgress> seen;
    watched.on_progress = [&](const PassProgress& p) { seen.push_back(p); };
    // Two sequences in one pass: 2 sign + 30 rows, the first sign inside the
    // first sequence, the second inside the second.
    const std::vector<std::vector<int>> tokens = {fixed_prompt(sign + 10, c.vocab_size, 1),
                                                  fixed_prompt(sign + 20, c.vocab_size, 2)};
    std::vector<KVCache> with(2, KVCache(c)), without(2, KVCache(c));
    const Matrix& x = watched.forward(tokens, with);
    const std::vector<float> first(x.data.begin(), x.data.end());
    const Matrix& y = plain.forward(tokens, without);
    CHECK(same_bits(first, std::vector<float>(y.data.begin(), y.data.end())));
    const int rows = 2 * sign + 30;
    REQUIRE(seen.size() == std::size_t(3 * c.n_layers));
    for (int l = 0; l < c.n_layers; ++l)
        for (int k = 0; k < 3; ++k) {
            const PassProgress& p = seen[std::size_t(3 * l + k)];
            CAPTURE(l);
            CAPTURE(k);
            CHECK(p.layer == l);
            CHECK(p.rows == rows);
            CHECK(p.rows_done == (k < 2 ? (k + 1) * sign : rows));
        }
}

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

// Chapter 08's engine work (a long system prompt prefilled, then parallel
// samples) shows on a terminal that it runs, though no pass reports from
// inside: a child process runs it with a pseudo-terminal as its stderr.
TEST_CASE("chapter 08 on a terminal shows its engine work while it runs") {
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
        ch08::Experiment e;
        e.queue.cost_model = "analytic";
        e.queue.workload.requests = 20;
        e.model.max_seq = 1024;
        e.sharing.system_prompt = 500;
        e.engine_requests = 2;
        e.check();
        e.run();
        _exit(0);
    }
    std::string shown;
    char bytes[4096];
    for (ssize_t got; (got = read(terminal, bytes, sizeof bytes)) > 0;) shown.append(bytes, got);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    close(terminal);
    CHECK(WIFEXITED(status));
    const auto took = std::chrono::steady_clock::now() - start;
    if (took < std::chrono::seconds(2)) {
        MESSAGE("not asked: the run ended within the quiet second progress waits out");
        return;
    }
    CHECK(shown.find("chapter 08: 4/4 parallel samples on the engine, ") != std::string::npos);
}
