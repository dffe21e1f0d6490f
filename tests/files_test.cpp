// The kit's file reading and writing (common/kit/files.h): only regular
// files are read, bounded in size, every failure names its real cause; a
// write replaces the file whole or leaves the old one; standard output
// errors and failed allocations end the program with one line.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <iostream>
#include <new>
#include <sstream>
#include <streambuf>
#include <string>

#include "../chapters/06_closing_table/experiment.h"
#include "../common/kit/files.h"
#include "../common/kit/program.h"
#include "test_files.h"
#include "tiny_models.h"

using namespace kv;
using kv::test::TempDir;
using kv::test::write_bytes;

namespace {

// The message read_file(path, what, max) throws, or "" if it reads.
std::string read_error(const std::string& path, std::uint64_t max = 1 << 20) {
    try {
        read_file(path, "--input", max);
    } catch (const FileError& e) {
        return e.what();
    }
    return "";
}

std::string write_error(const std::string& path, const std::string& text) {
    try {
        write_file(path, text, "--output");
    } catch (const FileError& e) {
        return e.what();
    }
    return "";
}

// A stream buffer whose every write fails, as a full disk's does.
struct FullDisk : std::streambuf {
    int overflow(int) override { return traits_type::eof(); }
    std::streamsize xsputn(const char*, std::streamsize) override { return 0; }
};

}  // namespace

TEST_CASE("a regular file is read whole") {
    const TempDir dir;
    write_bytes(dir.file("a.txt"), std::string("one\ntwo\0three", 13));
    CHECK(read_file(dir.file("a.txt"), "--input", 100) == std::string("one\ntwo\0three", 13));
    write_bytes(dir.file("empty.txt"), "");
    CHECK(read_file(dir.file("empty.txt"), "--input", 100).empty());
}

TEST_CASE("what is not a regular file is refused at once naming what it is") {
    const TempDir dir;
    CHECK(read_error("/dev/zero") == "--input /dev/zero: a character device, not a regular file");
    CHECK(read_error(dir.path.string()) ==
          "--input " + dir.path.string() + ": a folder, not a regular file");
    // A FIFO with no writer: opening it must not wait for one.
    const std::string fifo = dir.file("fifo");
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    const auto start = std::chrono::steady_clock::now();
    CHECK(read_error(fifo) == "--input " + fifo + ": a FIFO (named pipe), not a regular file");
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    // And not held open after: a writer still finds no reader.
    const int writer = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    CHECK(writer < 0);
    CHECK(errno == ENXIO);
    if (writer >= 0) close(writer);
}

TEST_CASE("a file that cannot be opened names the system's cause") {
    const TempDir dir;
    CHECK(read_error(dir.file("missing")) ==
          "--input " + dir.file("missing") + ": No such file or directory");
    // A symbolic link to itself.
    std::filesystem::create_symlink(dir.file("loop"), dir.file("loop"));
    CHECK(read_error(dir.file("loop")) ==
          "--input " + dir.file("loop") + ": Too many levels of symbolic links");
    const std::string long_name = dir.file(std::string(300, 'a'));
    CHECK(read_error(long_name) == "--input " + long_name + ": File name too long");
    CHECK(read_error(dir.file("missing") + "/x") ==
          "--input " + dir.file("missing") + "/x: No such file or directory");
    write_bytes(dir.file("file"), "x");
    CHECK(read_error(dir.file("file") + "/x") ==
          "--input " + dir.file("file") + "/x: Not a directory");
    CHECK(read_error("") == "--input : the file name is empty");
    // Root reads anything; elsewhere a file without read permission.
    if (geteuid() != 0) {
        write_bytes(dir.file("secret"), "x");
        std::filesystem::permissions(dir.file("secret"), std::filesystem::perms::none);
        CHECK(read_error(dir.file("secret")) ==
              "--input " + dir.file("secret") + ": Permission denied");
    }
}

TEST_CASE("a file larger than the reader takes is refused before it is read") {
    const TempDir dir;
    write_bytes(dir.file("big"), std::string(101, 'x'));
    CHECK(read_error(dir.file("big"), 100) ==
          "--input " + dir.file("big") +
              ": the file has 101 bytes, more than the 100 this "
              "reader takes");
    CHECK(read_error(dir.file("big"), 101).empty());
    // A /proc file says it has 0 bytes and then holds more: bounded while read.
    CHECK(read_error("/proc/self/status", 10).find("more than the 10 bytes") != std::string::npos);
}

TEST_CASE("InputFile reads exactly and skips and says when the file ends") {
    const TempDir dir;
    write_bytes(dir.file("f"), "abcdefgh");
    InputFile in(dir.file("f"), "checkpoint", 100);
    CHECK(in.size() == 8);
    char two[2];
    REQUIRE(in.read(two, 2));
    CHECK(std::string(two, 2) == "ab");
    CHECK(in.skip(3));
    CHECK(in.read_rest() == "fgh");
    CHECK_FALSE(in.read(two, 1));
    CHECK_FALSE(in.skip(1));
}

TEST_CASE("a written file replaces the old one whole or leaves it") {
    const TempDir dir;
    const std::string path = dir.file("out.json");
    write_file(path, "old\n", "--output");
    CHECK(read_file(path, "", 100) == "old\n");
    write_file(path, "new\n", "--output");
    CHECK(read_file(path, "", 100) == "new\n");
    // Nothing is left beside it.
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
        (void)entry;
        ++files;
    }
    CHECK(files == 1);

    // A write that fails half-way (an exception before commit) leaves the old file.
    {
        OutputFile out(path, "--output");
        out.write("half of a n");
    }
    CHECK(read_file(path, "", 100) == "new\n");

    // write_file makes the folder it writes into; OutputFile alone does not.
    write_file(dir.file("sub/dir/plot.svg"), "<svg/>", "--plot-dir");
    CHECK(read_file(dir.file("sub/dir/plot.svg"), "", 100) == "<svg/>");
    CHECK_THROWS_WITH_AS(
        OutputFile(dir.file("none/x.bin"), "checkpoint"),
        ("checkpoint " + dir.file("none/x.bin") + ": cannot create: No such file or directory")
            .c_str(),
        FileError);
    // A link is followed: the file it names is replaced, the link stays.
    std::filesystem::create_symlink(path, dir.file("link.json"));
    write_file(dir.file("link.json"), "through the link\n");
    CHECK(std::filesystem::is_symlink(dir.file("link.json")));
    CHECK(read_file(path, "", 100) == "through the link\n");
}

TEST_CASE("the file beside the target has a fresh short name in its folder") {
    const TempDir dir;
    // A target whose name has all the 255 bytes a name may have.
    const std::string longest = dir.file(std::string(255, 'n'));
    write_file(longest, "whole\n", "--output");
    CHECK(read_file(longest, "", 100) == "whole\n");

    // A link planted where the old name beside the target (<target>.part<pid>)
    // would be is never followed: the file it points to stays as it was.
    const std::string target = dir.file("out.json"), victim = dir.file("victim.txt");
    write_bytes(victim, "victim\n");
    std::filesystem::create_symlink(victim, target + ".part" + std::to_string(getpid()));
    write_file(target, "new\n", "--output");
    CHECK(read_file(victim, "", 100) == "victim\n");
    CHECK(read_file(target, "", 100) == "new\n");
    CHECK_FALSE(std::filesystem::is_symlink(target));

    // The finished file has the permissions open(..., 0666) gives under the umask.
    const mode_t mask = umask(022);
    write_file(dir.file("mode.txt"), "x");
    umask(mask);
    struct stat st {};
    REQUIRE(stat(dir.file("mode.txt").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0644);
}

TEST_CASE("a FIFO that nothing reads is refused at once; one that is read is written") {
    const TempDir dir;
    const std::string fifo = dir.file("fifo");
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    auto written = std::async(std::launch::async, [&] { return write_error(fifo, "{}\n"); });
    const bool at_once = written.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
    CHECK(at_once);
    if (!at_once) {  // it waits for a reader: give it one, so that the test can end
        const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
        written.wait();
        close(reader);
    }
    CHECK(written.get() == "--output " + fifo +
                               ": a FIFO (named pipe) that no program is reading: nothing would "
                               "take the bytes");

    // With a reader, the bytes go to it.
    const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    REQUIRE(reader >= 0);
    write_file(fifo, "through the pipe\n", "--output");
    char got[64] = {};
    CHECK(read(reader, got, sizeof got) == 17);
    CHECK(std::string(got) == "through the pipe\n");
    close(reader);
}

TEST_CASE("a path with a newline or other control character is shown escaped") {
    const TempDir dir;
    const std::string odd = dir.file("two\nlines\x1b");
    CHECK(read_error(odd) ==
          "--input " + dir.file("two\\nlines\\x1b") + ": No such file or directory");
    CHECK(write_error(dir.file("missing\n") + "/" + std::string(300, 'a'), "x").find('\n') ==
          std::string::npos);
    write_bytes(dir.file("file"), "x");
    const std::string under_a_file = write_error(dir.file("file") + "/a\nb/c.json", "x");
    CHECK(under_a_file.find("cannot create the folder") != std::string::npos);
    CHECK(under_a_file.find('\n') == std::string::npos);
}

TEST_CASE("a write that cannot be done names its flag and its cause") {
    const TempDir dir;
    CHECK(write_error("/dev/full", "x") ==
          "--output /dev/full: cannot write: No space left on device");
    CHECK(write_error(dir.path.string(), "x") ==
          "--output " + dir.path.string() + ": a folder, not a file");
    CHECK(write_error("", "x") == "--output: the file name is empty");
    write_bytes(dir.file("file"), "x");
    CHECK(write_error(dir.file("file") + "/x.json", "x").find("cannot create the folder") !=
          std::string::npos);
    // A device is written in place, never renamed over.
    write_file("/dev/null", "nothing", "--output");
    struct stat st {};
    REQUIRE(stat("/dev/null", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
}

TEST_CASE("lost standard output ends the program with one line and status 2") {
    std::ostringstream captured;
    std::streambuf* old_err = std::cerr.rdbuf(captured.rdbuf());
    FullDisk full;
    std::streambuf* old_out = std::cout.rdbuf(&full);
    const int status = run_program("t", [] {
        std::cout << "a table nobody will see\n";
        return 0;
    });
    std::cout.rdbuf(old_out);
    std::cout.clear();
    std::cerr.rdbuf(old_err);
    CHECK(status == 2);
    const std::string text = captured.str();
    CHECK(text.rfind("t: cannot write standard output", 0) == 0);
    CHECK(std::count(text.begin(), text.end(), '\n') == 1);
}

TEST_CASE("a failed allocation ends the program naming what was allocated") {
    std::ostringstream captured;
    std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
    const int named = run_program("t", []() -> int {
        const Allocating note("the KV cache of 99 positions");
        throw std::bad_alloc();
    });
    const int bare = run_program("t", []() -> int { throw std::bad_alloc(); });
    std::cerr.rdbuf(old);
    CHECK(named == 2);
    CHECK(bare == 2);
    const std::string text = captured.str();
    INFO(text);
    CHECK(text.find("t: out of memory allocating the KV cache of 99 positions;") == 0);
    CHECK(text.find("t: out of memory (std::bad_alloc);") != std::string::npos);
    CHECK(std::count(text.begin(), text.end(), '\n') == 2);
}

// ------------------------------------------ chapter 06's saved results

namespace {

std::string saved_results_error(const std::string& path) {
    try {
        kv::ch06::load_saved_results(path, "02");
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("chapter 06 says to run make run only when a results file is not there") {
    const TempDir dir;
    CHECK(saved_results_error(dir.file("ch02.json")) ==
          dir.file("ch02.json") + ": No such file or directory (run `./build/ch02 --save-json " +
              dir.file("ch02.json") + "` first, or `make run`)");
    // Other causes are named as they are, without the hint.
    write_bytes(dir.file("file"), "x");
    CHECK(saved_results_error(dir.file("file") + "/ch02.json") ==
          dir.file("file") + "/ch02.json: Not a directory");
    std::filesystem::create_directory(dir.file("folder.json"));
    CHECK(saved_results_error(dir.file("folder.json")) ==
          dir.file("folder.json") + ": a folder, not a regular file");
    write_bytes(dir.file("bad.json"), "{\"a\": nan}");
    CHECK(saved_results_error(dir.file("bad.json")).find("make run") == std::string::npos);
    if (geteuid() != 0) {  // root reads anything
        write_bytes(dir.file("secret.json"), "{}");
        std::filesystem::permissions(dir.file("secret.json"), std::filesystem::perms::none);
        CHECK(saved_results_error(dir.file("secret.json")) ==
              dir.file("secret.json") + ": Permission denied");
    }
    // A name holding a newline stays on one line, in the parser's messages too.
    std::filesystem::create_directory(dir.file("two\nlines"));
    write_bytes(dir.file("two\nlines/ch02.json"), "[1]");
    const std::string malformed = saved_results_error(dir.file("two\nlines/ch02.json"));
    CHECK(malformed.rfind(dir.file("two\\nlines/ch02.json") + " is not a JSON object", 0) == 0);
}

TEST_CASE("no output of a run replaces the program itself") {
    const std::string program = std::filesystem::canonical("/proc/self/exe").string();
    RunFiles run;
    const std::string error = write_error(program, "{}");
    INFO(error);
    CHECK(error.find("the same file as this program (/proc/self/exe)") != std::string::npos);
}
