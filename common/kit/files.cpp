#include "files.h"

#include "report.h"  // visible

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <utility>

namespace kv {

namespace fs = std::filesystem;

namespace {

// The system's words for `error`; for EFBIG, also the limit that was met.
std::string cause_of(int error) {
    std::string cause = std::strerror(error);
    struct rlimit limit {};
    if (error == EFBIG && ::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
        cause += " (this program may write files of at most " +
                 format_bytes(std::uint64_t(limit.rlim_cur)) + ": ulimit -f)";
    return cause;
}

// Reads and writes block as usual once a file opened with O_NONBLOCK is open.
void clear_nonblock(int fd) {
    if (const int flags = ::fcntl(fd, F_GETFL); flags >= 0)
        ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

// ------------------------------------------- files beside their targets, and signals
//
// The handler reads a fixed table: no allocation, no locks, only unlink().
// A slot is marked used after its path is written and free after its file
// is renamed or removed: at worst the handler removes a name already gone.

constexpr int kSlots = 64;                // files beside their targets at one time
constexpr std::size_t kSlotBytes = 4096;  // PATH_MAX: no longer name can be created
char slot_path[kSlots][kSlotBytes];
volatile std::sig_atomic_t slot_used[kSlots];
constexpr int kCleanedSignals[] = {SIGINT, SIGTERM, SIGHUP};

void remove_files_beside_and_stop(int signal_number) {
    for (int i = 0; i < kSlots; ++i)
        if (slot_used[i]) ::unlink(slot_path[i]);
    ::signal(signal_number, SIG_DFL);  // its default action, taken when this handler returns
    ::raise(signal_number);
}

}  // namespace

// Asked at every file, not once: a signal back at its default gets the
// handler again.
void handle_signals_while_writing() {
    auto at_default = [](int signal_number) {
        struct sigaction now {};
        return ::sigaction(signal_number, nullptr, &now) == 0 && !(now.sa_flags & SA_SIGINFO) &&
               now.sa_handler == SIG_DFL;
    };
    if (at_default(SIGXFSZ)) ::signal(SIGXFSZ, SIG_IGN);
    for (int signal_number : kCleanedSignals) {
        if (!at_default(signal_number)) continue;
        struct sigaction cleanup {};
        cleanup.sa_handler = remove_files_beside_and_stop;
        sigemptyset(&cleanup.sa_mask);
        ::sigaction(signal_number, &cleanup, nullptr);
    }
}

namespace {

// Puts `path` in the table; its slot, or -1 if the table is full.
int hold_beside(const std::string& path) {
    handle_signals_while_writing();
    if (path.size() >= kSlotBytes) return -1;
    for (int i = 0; i < kSlots; ++i)
        if (!slot_used[i]) {
            std::memcpy(slot_path[i], path.c_str(), path.size() + 1);
            std::atomic_signal_fence(std::memory_order_seq_cst);
            slot_used[i] = 1;
            return i;
        }
    return -1;
}

void release_beside(int slot) {
    if (slot < 0) return;
    slot_used[slot] = 0;
    std::atomic_signal_fence(std::memory_order_seq_cst);
}

// SIGINT, SIGTERM and SIGHUP held back while it lives (RunFiles::commit).
class SignalsHeld {
  public:
    SignalsHeld() {
        sigset_t held;
        sigemptyset(&held);
        for (int signal_number : kCleanedSignals) sigaddset(&held, signal_number);
        ::sigprocmask(SIG_BLOCK, &held, &before_);
    }
    ~SignalsHeld() { ::sigprocmask(SIG_SETMASK, &before_, nullptr); }

  private:
    sigset_t before_;
};

// "/a/b/../c" -> "/a/c", absolute, links in existing folders resolved.
std::string normal_path(const std::string& path) {
    std::error_code error;
    fs::path p = fs::weakly_canonical(fs::absolute(fs::path(path), error), error);
    if (error) p = fs::absolute(fs::path(path), error).lexically_normal();
    return p.string();
}

// A symbolic link at `path` that another user planted in a shared sticky
// folder (files.h): the cause to refuse it, or "" if it may be followed.
std::string planted_link(const std::string& path) {
    struct stat link {};
    if (::lstat(path.c_str(), &link) != 0 || !S_ISLNK(link.st_mode)) return "";
    const fs::path parent = fs::path(path).parent_path();
    const std::string folder = parent.empty() ? std::string(".") : parent.string();
    struct stat dir {};
    if (::stat(folder.c_str(), &dir) != 0) return "";
    const bool shared = (dir.st_mode & S_ISVTX) && (dir.st_mode & S_IWOTH);
    if (!shared || link.st_uid == ::geteuid() || link.st_uid == dir.st_uid) return "";
    return "a symbolic link owned by another user (uid " + std::to_string(link.st_uid) +
           ") in the shared folder " + excerpt(folder, kMostQuotedPath) +
           " (sticky, writable by everyone): not followed, since whoever planted it chose where "
           "it leads";
}

// Whether `st` is this program's standard output or error: the stream's name for it, or "".
std::string standard_stream_of(const struct stat& st) {
    for (const auto& [fd, name] :
         {std::pair{1, "standard output"}, std::pair{2, "standard error"}}) {
        struct stat stream {};
        if (::fstat(fd, &stream) == 0 && S_ISREG(stream.st_mode) && stream.st_dev == st.st_dev &&
            stream.st_ino == st.st_ino)
            return name;
    }
    return "";
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
    return std::string(what) + (what.empty() ? "" : " ") + excerpt(path, kMostQuotedPath);
}

// ------------------------------------------------------------------ reading

InputFile::InputFile(const std::string& path, std::string_view what, std::uint64_t max_bytes)
    : label_(file_label(what, path)), max_bytes_(max_bytes) {
    if (path.empty()) fail("the file name is empty");
    // O_NONBLOCK: a FIFO is refused below, not waited on.
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st {};
    if (fd_ < 0 || ::fstat(fd_, &st) != 0) {
        const int e = errno;
        fail(cause_of(e), e);
    }
    if (!S_ISREG(st.st_mode)) fail(kind_of(st.st_mode) + ", not a regular file");
    size_ = std::uint64_t(st.st_size);
    if (RunFiles* run = RunFiles::current()) run->inputs_.push_back({path, label_});
    if (size_ > max_bytes_)
        fail("the file has " + std::to_string(size_) + " bytes, more than the " +
             std::to_string(max_bytes_) + " this reader takes");
    clear_nonblock(fd_);
}

InputFile::~InputFile() {
    if (fd_ >= 0) ::close(fd_);
}

void InputFile::fail(const std::string& cause, int error) const {
    throw FileError(label_ + ": " + cause, error);
}

std::size_t InputFile::read_some(char* to, std::size_t n) {
    for (;;) {
        if (const ssize_t got = ::read(fd_, to, n); got >= 0) {
            at_ += std::uint64_t(got);
            return std::size_t(got);
        }
        if (errno != EINTR) fail("cannot read: " + cause_of(errno));
    }
}

bool InputFile::read(void* out, std::size_t n) {
    for (auto* bytes = static_cast<char*>(out); n > 0;) {
        const std::size_t got = read_some(bytes, n);
        if (got == 0) return false;
        bytes += got;
        n -= got;
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
    while (const std::size_t got = read_some(block, sizeof block)) {
        if (at_ > max_bytes_)
            fail("the file holds more than the " + std::to_string(max_bytes_) +
                 " bytes this reader takes");
        text.append(block, got);
    }
    return text;
}

std::string read_file(const std::string& path, std::string_view what, std::uint64_t max_bytes) {
    return InputFile(path, what, max_bytes).read_rest();
}

// ------------------------------------------------------------------ writing

int stream_named_by(const std::string& path) {
    std::error_code error;
    const std::string p = fs::absolute(fs::path(path), error).lexically_normal().string();
    if (error) return -1;
    const char* standard[] = {"/dev/stdin", "/dev/stdout", "/dev/stderr"};
    for (int fd = 0; fd < 3; ++fd)
        if (p == standard[fd]) return fd;
    for (std::string_view folder : {"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"}) {
        if (!p.starts_with(folder)) continue;
        const char *digits = p.data() + folder.size(), *end = p.data() + p.size();
        int fd = -1;
        const auto [stop, problem] = std::from_chars(digits, end, fd);
        return problem == std::errc() && stop == end && digits[0] != '-' ? fd : -1;
    }
    return -1;
}

std::string file_name_part(const std::string& text) {
    std::string name;
    for (char ch : text)
        if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'))
            name += ch;
        else if (!name.empty() && name.back() != '-')
            name += '-';
    return name;
}

bool same_file(const std::string& a, const std::string& b) {
    struct stat sa {
    }, sb{};
    if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    return normal_path(a) == normal_path(b);
}

void check_output_path(const std::string& path, std::string_view what) {
    const std::string label = file_label(what, path);
    if (path.empty())
        throw FileError(std::string(what.empty() ? "output" : what) + ": the file name is empty");
    if (stream_named_by(path) >= 0) return;
    if (const std::string planted = planted_link(path); !planted.empty())
        throw FileError(label + ": " + planted, EPERM);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return;
    if (S_ISDIR(st.st_mode)) throw FileError(label + ": a folder, not a file", EISDIR);
    if (const std::string stream = standard_stream_of(st); S_ISREG(st.st_mode) && !stream.empty())
        throw FileError(label + ": the same file as this program's " + stream +
                            ": replacing it would lose what the stream writes there (to write "
                            "into the stream, name it: /dev/stdout or /dev/stderr)",
                        EINVAL);
}

OutputFile::OutputFile(const std::string& path, std::string_view what)
    : label_(file_label(what, path)), target_(path) {
    check_output_path(path, what);
    // A standard stream named by its path: written through a copy of this
    // program's own descriptor, so that a shell's `>> log` appends and a
    // pipe gets the bytes in order.
    if (const int stream = stream_named_by(path); stream >= 0) {
        if (stream == 0) fail("standard input, which is read, not written", EINVAL);
        fd_ = ::fcntl(stream, F_DUPFD_CLOEXEC, 3);
        if (fd_ < 0) {
            const int e = errno;
            fail("descriptor " + std::to_string(stream) +
                     " is not open in this program: " + cause_of(e),
                 e);
        }
        stream_ = true;
        handle_signals_while_writing();  // SIGXFSZ: a stream into a file has the limit too
        return;
    }
    if (RunFiles* run = RunFiles::current()) run->check_output(path, label_);
    struct stat st {};
    const bool exists = ::stat(path.c_str(), &st) == 0;
    // Not a regular file (/dev/null, a terminal, a pipe): written where it
    // is. O_NONBLOCK opens a FIFO with a reader at once (`--save-json >(jq
    // .)`) and fails with ENXIO, said so, where none would ever come.
    if (exists && !S_ISREG(st.st_mode)) {
        fd_ = ::open(target_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd_ < 0) {
            const int e = errno;
            if (e == ENXIO && S_ISFIFO(st.st_mode))
                fail("a FIFO (named pipe) that no program is reading: nothing would take the bytes",
                     e);
            fail("cannot open: " + cause_of(e), e);
        }
        clear_nonblock(fd_);
        handle_signals_while_writing();
        return;
    }
    // A link to a regular file: replace the file it points to, not the link.
    std::error_code error;
    if (const fs::path real = fs::canonical(fs::path(path), error); exists && !error)
        target_ = real.string();
    // mkstemp makes a new file (O_EXCL): a name planted in advance leads
    // nowhere, and a short one leaves room beside a 255-byte target name.
    beside_ = (fs::path(target_).parent_path() / ".kv-part-XXXXXX").string();
    fd_ = ::mkstemp(beside_.data());
    if (fd_ < 0) {
        const int e = errno;
        beside_.clear();
        fail("cannot create: " + cause_of(e), e);
    }
    slot_ = hold_beside(beside_);
    if (slot_ < 0) fail("more files written at once than a signal's cleanup can list (64)");
    ::fcntl(fd_, F_SETFD, FD_CLOEXEC);
    // mkstemp gives 0600: a file replaced keeps its own, a new one gets
    // what the umask leaves (reading it sets it: one thread runs here).
    mode_t mode = st.st_mode & 07777;
    if (!exists) {
        const mode_t umask = ::umask(0);
        ::umask(umask);
        mode = 0666 & ~umask;
    }
    if (::fchmod(fd_, mode) != 0) fail("cannot set permissions: " + cause_of(errno));
}

void OutputFile::drop_beside() {
    if (beside_.empty()) return;
    ::unlink(beside_.c_str());
    release_beside(std::exchange(slot_, -1));
    beside_.clear();
}

OutputFile::~OutputFile() {
    if (fd_ >= 0) ::close(fd_);
    drop_beside();
}

void OutputFile::fail(const std::string& cause, int error) {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
    drop_beside();
    throw FileError(label_ + ": " + cause, error);
}

void OutputFile::write(std::string_view bytes) {
    if (fd_ < 0) fail("written after it was closed");
    // What this program printed before comes first in the stream.
    if (stream_) {
        std::cout.flush();
        std::cerr.flush();
        std::fflush(nullptr);
    }
    while (!bytes.empty()) {
        const ssize_t put = ::write(fd_, bytes.data(), bytes.size());
        if (put < 0 && errno == EINTR) continue;
        if (put < 0) {
            const int e = errno;
            fail("cannot write: " + cause_of(e), e);
        }
        bytes.remove_prefix(std::size_t(put));
    }
}

void OutputFile::commit() {
    if (fd_ < 0) fail("committed twice");
    // A full disk may show only now: synced, then closed, both checked.
    if (!beside_.empty() && ::fsync(fd_) != 0) fail("cannot write: " + cause_of(errno));
    if (::close(std::exchange(fd_, -1)) != 0) fail("cannot write: " + cause_of(errno));
    if (beside_.empty()) return;
    if (RunFiles* run = RunFiles::current()) {  // renamed with the run's other files
        run->finished_.push_back({std::exchange(beside_, ""), target_, label_, slot_});
        slot_ = -1;
        return;
    }
    if (std::rename(beside_.c_str(), target_.c_str()) != 0)
        fail("cannot replace the file: " + cause_of(errno));
    release_beside(std::exchange(slot_, -1));
    beside_.clear();
}

// -------------------------------------------------------------- one run's files

namespace {
RunFiles* current_run = nullptr;
}

// The program itself is the first file every run reads: no output replaces it.
RunFiles::RunFiles() : outer_(std::exchange(current_run, this)) {
    inputs_.push_back({"/proc/self/exe", "this program (/proc/self/exe)"});
}

RunFiles::~RunFiles() {
    current_run = outer_;
    for (const Finished& f : finished_) {
        ::unlink(f.beside.c_str());
        release_beside(f.slot);
    }
}

RunFiles* RunFiles::current() {
    return current_run;
}

void RunFiles::check_output(const std::string& path, const std::string& label) {
    struct stat st {};
    // A device or a pipe takes any number of writers.
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return;
    for (const Known& in : inputs_)
        if (same_file(path, in.path))
            throw FileError(label + ": the same file as " + in.label +
                                ", which this run reads; an output may not replace an input",
                            EINVAL);
    for (const Known& other : outputs_)
        if (same_file(path, other.path))
            throw FileError(label + ": the same file as " + other.label +
                                ", which this run writes; each output needs a file of its own",
                            EINVAL);
    outputs_.push_back({path, label});
}

void RunFiles::commit() {
    const SignalsHeld held;  // a signal now is taken once every file is in place
    for (std::size_t i = 0; i < finished_.size(); ++i) {
        const Finished f = finished_[i];
        if (std::rename(f.beside.c_str(), f.target.c_str()) != 0) {
            const int e = errno;
            ::unlink(f.beside.c_str());
            release_beside(f.slot);
            // The rest stay beside their targets; the destructor removes them.
            finished_.erase(finished_.begin(), finished_.begin() + std::ptrdiff_t(i) + 1);
            throw FileError(f.label + ": cannot replace the file: " + cause_of(e), e);
        }
        release_beside(f.slot);
    }
    finished_.clear();
}

void write_file(const std::string& path, const std::string& text, std::string_view what) {
    const fs::path p(path);
    std::error_code error;
    if (!path.empty() && p.has_parent_path() && !fs::is_directory(p.parent_path(), error)) {
        fs::create_directories(p.parent_path(), error);
        if (error)
            throw FileError(file_label(what, path) + ": cannot create the folder " +
                                excerpt(p.parent_path().string(), kMostQuotedPath) + ": " +
                                error.message(),
                            error.value());
    }
    OutputFile out(path, what);
    out.write(text);
    out.commit();
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
