#include "files.h"

#include "report.h"  // visible

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace kv {

namespace {

std::string cause_of(int error) {
    return std::strerror(error);
}

// What a file that is not a regular one is, for the message.
std::string kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a plain file";
}

}  // namespace

std::string file_label(std::string_view what, const std::string& path) {
    std::string label(what);
    if (!label.empty()) label += " ";
    label += visible(path);
    return label;
}

// ------------------------------------------------------------------ reading

InputFile::InputFile(const std::string& path, std::string_view what, std::uint64_t max_bytes)
    : label_(file_label(what, path)), max_bytes_(max_bytes) {
    if (path.empty()) fail("the file name is empty");
    // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) {
        const int e = errno;
        fail(cause_of(e), e);
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail(cause_of(errno));
    if (!S_ISREG(st.st_mode)) fail(kind_of(st.st_mode) + ", not a regular file");
    size_ = std::uint64_t(st.st_size);
    if (size_ > max_bytes_)
        fail("the file has " + std::to_string(size_) + " bytes, more than the " +
             std::to_string(max_bytes_) + " this reader takes");
    // Reads block as usual from here on.
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
}

InputFile::~InputFile() {
    if (fd_ >= 0) ::close(fd_);
}

void InputFile::fail(const std::string& cause, int error) const {
    throw FileError(label_ + ": " + cause, error);
}

bool InputFile::read(void* out, std::size_t n) {
    auto* bytes = static_cast<char*>(out);
    while (n > 0) {
        const ssize_t got = ::read(fd_, bytes, n);
        if (got < 0) {
            if (errno == EINTR) continue;
            fail("cannot read: " + cause_of(errno));
        }
        if (got == 0) return false;
        bytes += got;
        n -= std::size_t(got);
        at_ += std::uint64_t(got);
    }
    return true;
}

bool InputFile::skip(std::uint64_t n) {
    if (n > size_ - std::min(at_, size_)) return false;
    if (::lseek(fd_, off_t(at_ + n), SEEK_SET) < 0) fail("cannot seek: " + cause_of(errno));
    at_ += n;
    return true;
}

std::string InputFile::read_rest() {
    std::string text;
    char block[1 << 16];
    for (;;) {
        const ssize_t got = ::read(fd_, block, sizeof block);
        if (got < 0) {
            if (errno == EINTR) continue;
            fail("cannot read: " + cause_of(errno));
        }
        if (got == 0) return text;
        at_ += std::uint64_t(got);
        if (at_ > max_bytes_)
            fail("the file holds more than the " + std::to_string(max_bytes_) +
                 " bytes this reader takes");
        text.append(block, std::size_t(got));
    }
}

std::string read_file(const std::string& path, std::string_view what, std::uint64_t max_bytes) {
    InputFile in(path, what, max_bytes);
    return in.read_rest();
}

// ------------------------------------------------------------------ writing

OutputFile::OutputFile(const std::string& path, std::string_view what)
    : label_(file_label(what, path)), target_(path) {
    if (path.empty())
        throw FileError(std::string(what.empty() ? "output" : what) + ": the file name is empty");
    namespace fs = std::filesystem;
    std::error_code error;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) fail("a folder, not a file");
        if (!S_ISREG(st.st_mode)) {
            open_in_place(st.st_mode);
            return;
        }
        // A link to a regular file: replace the file it points to, not the link.
        const fs::path real = fs::canonical(fs::path(path), error);
        if (!error) target_ = real.string();
    }
    // The file beside the target: mkstemp makes a new one (O_CREAT | O_EXCL),
    // so a name guessed in advance and planted as a link leads nowhere, and
    // its name is short, so a target named with all 255 bytes still has room.
    const fs::path folder = fs::path(target_).parent_path();
    beside_ = (folder / ".kv-part-XXXXXX").string();
    fd_ = ::mkstemp(beside_.data());
    if (fd_ < 0) {
        const int e = errno;
        beside_.clear();
        fail("cannot create: " + cause_of(e), e);
    }
    ::fcntl(fd_, F_SETFD, FD_CLOEXEC);
    // mkstemp gives 0600; the finished file gets what open(..., 0666) would
    // give, the permissions the umask leaves. (Reading the umask sets it:
    // these programs run one thread.)
    const mode_t umask = ::umask(0);
    ::umask(umask);
    if (::fchmod(fd_, 0666 & ~umask) != 0) fail("cannot set permissions: " + cause_of(errno));
}

// Not a regular file: /dev/null, /dev/stdout, a terminal, a pipe. Renaming
// over a device would replace it, so it is written where it is. A FIFO is
// opened with O_NONBLOCK: with a program reading it, the open succeeds at
// once; with none, it fails (ENXIO) instead of waiting for a reader that
// may never come, and the message says so. Refusing every FIFO would be
// simpler, but would refuse `--save-json /dev/stdout | jq` and
// `--save-json >(jq .)` too, which are pipes with a reader.
void OutputFile::open_in_place(mode_t mode) {
    fd_ = ::open(target_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) {
        const int e = errno;
        if (e == ENXIO && S_ISFIFO(mode))
            fail("a FIFO (named pipe) that no program is reading: nothing would take the bytes", e);
        fail("cannot open: " + cause_of(e), e);
    }
    // Writes block as usual from here on (a slow reader is waited for).
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
}

OutputFile::~OutputFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!beside_.empty()) ::unlink(beside_.c_str());
}

void OutputFile::fail(const std::string& cause, int error) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!beside_.empty()) ::unlink(beside_.c_str());
    beside_.clear();
    throw FileError(label_ + ": " + cause, error);
}

void OutputFile::write(std::string_view bytes) {
    if (fd_ < 0) fail("written after it was closed");
    while (!bytes.empty()) {
        const ssize_t put = ::write(fd_, bytes.data(), bytes.size());
        if (put < 0) {
            if (errno == EINTR) continue;
            fail("cannot write: " + cause_of(errno));
        }
        bytes.remove_prefix(std::size_t(put));
    }
}

void OutputFile::commit() {
    if (fd_ < 0) fail("committed twice");
    // A full disk may show only now: a regular file is synced, then closed, both checked.
    if (!beside_.empty() && ::fsync(fd_) != 0) fail("cannot write: " + cause_of(errno));
    const int closed = ::close(fd_);
    fd_ = -1;
    if (closed != 0) fail("cannot write: " + cause_of(errno));
    if (beside_.empty()) return;
    if (std::rename(beside_.c_str(), target_.c_str()) != 0)
        fail("cannot replace the file: " + cause_of(errno));
    beside_.clear();
}

void write_file(const std::string& path, const std::string& text, std::string_view what) {
    namespace fs = std::filesystem;
    const fs::path p(path);
    std::error_code error;
    if (!path.empty() && p.has_parent_path() && !fs::is_directory(p.parent_path(), error)) {
        fs::create_directories(p.parent_path(), error);
        if (error)
            throw FileError(file_label(what, path) + ": cannot create the folder " +
                                visible(p.parent_path().string()) + ": " + error.message(),
                            error.value());
    }
    OutputFile out(path, what);
    out.write(text);
    out.commit();
}

void write_file(const std::string& path, const std::string& text) {
    write_file(path, text, "");
}

// --------------------------------------------------------- standard output

void check_standard_output() {
    errno = 0;
    std::cout.flush();
    const bool flushed = std::fflush(stdout) == 0;
    const int e = errno;  // the cause, if this flush was the write that failed
    if (flushed && std::cout && !std::ferror(stdout)) return;
    std::cout.clear();
    std::clearerr(stdout);
    throw FileError(std::string("cannot write standard output") +
                    (e != 0 ? ": " + cause_of(e) : ""));
}

}  // namespace kv
