// Chapter 11's tier file: a block comes back as it was written, in every
// number format; a torn, truncated, changed or moved slot is refused; a
// folder that cannot be written keeps nothing; the file is private to the
// run and has no name on disk, so nothing is left after SIGTERM or SIGKILL.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "../common/core/block_pool.h"
#include "../common/core/number_format.h"
#include "../common/core/paged_kv_cache.h"
#include "../common/core/transformer.h"
#include "../common/serving/tier_file.h"
#include "test_files.h"
#include "tiny_models.h"

using namespace kv;

namespace {

constexpr int kB = 4;  // positions per block

// A pool of `blocks` blocks in format f, its first blocks filled by a
// prefill of 12 tokens (3 blocks).
struct Filled {
    BlockPool pool;
    PagedKVCache cache;
    std::vector<int> tokens = {5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 4};
    Filled(Transformer& model, NumberFormat f, int blocks = 16)
        : pool(model.config(), kB, blocks, f), cache(pool, 32) {
        model.forward(tokens, cache);
    }
    int block(int i) const { return cache.block_table()[std::size_t(i)]; }
    BlockName name(int i) const {
        return {i - 1, std::span<const int>(tokens).subspan(std::size_t(i * kB), kB)};
    }
    // A block's bytes, every layer, keys then values.
    std::vector<std::byte> bytes(int b) {
        std::vector<std::byte> out;
        const std::size_t n = std::size_t(kB) * pool.row_format().bytes();
        for (int l = 0; l < pool.n_layers(); ++l) {
            out.insert(out.end(), pool.key_bytes(b, l), pool.key_bytes(b, l) + n);
            out.insert(out.end(), pool.value_bytes(b, l), pool.value_bytes(b, l) + n);
        }
        return out;
    }
};

// Overwrites `n` bytes of the file at `at` with those at `from` (n = 1 and no
// `from`: flips one byte).
void patch(const std::string& path, off_t at, std::size_t n = 1, off_t from = -1) {
    const int fd = ::open(path.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    std::vector<char> bytes(n);
    REQUIRE(::pread(fd, bytes.data(), n, from < 0 ? at : from) == ssize_t(n));
    if (from < 0) bytes[0] = char(bytes[0] ^ 0x5A);
    REQUIRE(::pwrite(fd, bytes.data(), n, at) == ssize_t(n));
    ::close(fd);
}

}  // namespace

TEST_CASE("a block read back from the tier is the block written in every number format") {
    Transformer model(test::tiny_config(), 3);
    for (NumberFormat f : all_formats()) {
        CAPTURE(format_name(f));
        Filled a(model, f);
        TierFile file(a.pool, 4);
        REQUIRE(file.warning().empty());
        for (int i = 0; i < 3; ++i) REQUIRE(file.write(i, a.name(i), a.block(i)));
        for (int i = 0; i < 3; ++i) {
            const int fresh = a.pool.allocate();
            CHECK(a.bytes(fresh) != a.bytes(a.block(i)));  // zeros, or another block's
            REQUIRE(file.read(i, a.name(i), fresh));
            CHECK(a.bytes(fresh) == a.bytes(a.block(i)));
        }
        CHECK(file.counts().written == 3);
        CHECK(file.counts().read == 3);
        CHECK(file.counts().bytes_read == 3 * TierFile::slot_bytes(a.pool.bytes_per_block(), kB));
    }
}

TEST_CASE("a torn truncated changed or moved slot is refused and the block left alone") {
    Transformer model(test::tiny_config(), 3);
    Filled a(model, NumberFormat::float32);
    TierFile file(a.pool, 4);
    for (int i = 0; i < 3; ++i) REQUIRE(file.write(i, a.name(i), a.block(i)));
    const off_t slot = off_t(TierFile::slot_bytes(a.pool.bytes_per_block(), kB));
    const int target = a.pool.allocate();
    const std::vector<std::byte> before = a.bytes(target);

    // One byte of slot 0's keys changed: its checksum no longer matches.
    patch(file.path(), slot / 2);
    CHECK_FALSE(file.read(0, a.name(0), target));
    CHECK(file.counts().corrupt == 1);
    // Torn: the second half of slot 1 is slot 2's, as if a write stopped half way.
    patch(file.path(), slot + slot / 2, std::size_t(slot / 2), 2 * slot + slot / 2);
    CHECK_FALSE(file.read(1, a.name(1), target));
    CHECK(file.counts().corrupt == 2);
    // Moved: slot 2 holds slot 0's block (written again), under its own name.
    REQUIRE(file.write(0, a.name(0), a.block(0)));
    patch(file.path(), 2 * slot, std::size_t(slot), 0);
    CHECK_FALSE(file.read(2, a.name(2), target));
    CHECK(file.counts().misnamed == 1);
    CHECK(file.read(2, a.name(0), target));  // it is block 0, whole and checked
    CHECK(a.bytes(target) == a.bytes(a.block(0)));
    // Truncated: the file ends inside slot 1.
    REQUIRE(::truncate(file.path().c_str(), slot + slot / 3) == 0);
    const int other = a.pool.allocate();
    const std::vector<std::byte> untouched = a.bytes(other);
    CHECK_FALSE(file.read(1, a.name(1), other));
    CHECK(file.counts().truncated == 1);
    CHECK(a.bytes(other) == untouched);
    (void)before;
}

TEST_CASE("a tier that cannot be written keeps nothing and says why once") {
    Transformer model(test::tiny_config(), 3);
    Filled a(model, NumberFormat::float32);
    SUBCASE("a folder that does not exist") {
        TierFile file(a.pool, 4, "/nonexistent/kv-book-test");
        CHECK(file.path().empty());
        CHECK(file.warning().find("/nonexistent/kv-book-test") != std::string::npos);
        CHECK_FALSE(file.write(0, a.name(0), a.block(0)));
        CHECK_FALSE(file.read(0, a.name(0), a.block(1)));
        CHECK(file.counts().write_failures == 1);
    }
    SUBCASE("a file that cannot grow: a full disk, as ulimit -f makes one") {
        rlimit before{};
        REQUIRE(::getrlimit(RLIMIT_FSIZE, &before) == 0);
        struct sigaction ignore {
        }, old{};
        ignore.sa_handler = SIG_IGN;
        ::sigaction(SIGXFSZ, &ignore, &old);
        TierFile file(a.pool, 4);
        const std::uint64_t slot = TierFile::slot_bytes(a.pool.bytes_per_block(), kB);
        rlimit one_slot = before;
        one_slot.rlim_cur = rlim_t(slot + slot / 2);
        REQUIRE(::setrlimit(RLIMIT_FSIZE, &one_slot) == 0);
        const bool first = file.write(0, a.name(0), a.block(0));
        const bool second = file.write(1, a.name(1), a.block(1));
        ::setrlimit(RLIMIT_FSIZE, &before);
        ::sigaction(SIGXFSZ, &old, nullptr);
        CHECK(first);
        CHECK_FALSE(second);
        CHECK(file.counts().write_failures == 1);
        CHECK_FALSE(file.warning().empty());
        CHECK_FALSE(file.write(2, a.name(2), a.block(2)));  // not trusted again
    }
}

TEST_CASE("the tier file is private to the run and has no name on disk") {
    Transformer model(test::tiny_config(), 3);
    Filled a(model, NumberFormat::float32);
    const test::TempDir dir;
    TierFile file(a.pool, 4, dir.path.string());
    REQUIRE(file.write(0, a.name(0), a.block(0)));
    CHECK(file.folder() == dir.path.string());
    struct stat st {};
    REQUIRE(::stat(file.path().c_str(), &st) == 0);  // open, through /proc/self/fd
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(st.st_nlink == 0);                     // no name: nothing to remove
    CHECK(std::filesystem::is_empty(dir.path));  // nor its folder
}

namespace {

// A run holding a tier file with a block in it, ended by `signal_number`:
// nothing of it is left in the folder, while it runs or after.
void end_a_run_with(int signal_number) {
    const test::TempDir dir;
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // a run that is stopped while its tier holds a block
        ::close(pipe_fds[0]);
        ::signal(signal_number, SIG_DFL);  // as in a program: no test framework's handler
        BlockPool pool(test::tiny_config(), kB, 2);
        TierFile file(pool, 2, dir.path.string());
        const std::vector<int> tokens(kB, 1);
        const char written = file.write(0, {-1, tokens}, 0) ? 'y' : 'n';
        if (::write(pipe_fds[1], &written, 1) < 0) ::_exit(3);
        for (;;) ::pause();
    }
    ::close(pipe_fds[1]);
    char written = 0;
    REQUIRE(::read(pipe_fds[0], &written, 1) == 1);
    ::close(pipe_fds[0]);
    CHECK(written == 'y');
    CHECK(std::filesystem::is_empty(dir.path));
    ::kill(child, signal_number);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == signal_number);
    CHECK(std::filesystem::is_empty(dir.path));
}

}  // namespace

TEST_CASE("SIGTERM or SIGKILL ends the run and leaves no tier file behind") {
    SUBCASE("SIGTERM") {
        end_a_run_with(SIGTERM);
    }
    SUBCASE("SIGKILL") {
        end_a_run_with(SIGKILL);
    }
}

TEST_CASE("cold reads: the file's pages are dropped from the page cache") {
    Transformer model(test::tiny_config(), 3);
    Filled a(model, NumberFormat::float32);
    TierFile file(a.pool, 4);
    for (int i = 0; i < 3; ++i) REQUIRE(file.write(i, a.name(i), a.block(i)));
    const std::int64_t left = file.drop_cached_pages();
    CHECK(left <= 0);  // none left where the system says (-1: it cannot say)
    const int fresh = a.pool.allocate();
    REQUIRE(file.read(1, a.name(1), fresh));  // from the disk, the same bytes
    CHECK(a.bytes(fresh) == a.bytes(a.block(1)));
    if (file.read_direct()) {  // past the page cache, where the file system allows it
        const int again = a.pool.allocate();
        REQUIRE(file.read(2, a.name(2), again));
        CHECK(a.bytes(again) == a.bytes(a.block(2)));
    }
}
