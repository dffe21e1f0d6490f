#include "files.h"

#include <dirent.h>
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

#include "report.h"  // excerpt, format_bytes

namespace kv {

namespace fs = std::filesystem;

namespace {

RunFiles* current_run = nullptr;  // the innermost RunFiles alive

// The system's words for `error`; for EFBIG, also the limit that was met.
std::string cause_of(int error) {
    std::string cause = std::strerror(error);
    struct rlimit limit {};
    if (error == EFBIG && ::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
        cause += " (this program may write files of at most " +
                 format_bytes(std::uint64_t(limit.rlim_cur)) + ": ulimit -f)";
    return cause;
}

std::string kind_of(mode_t mode) {  // of a file that is not a regular one
    return S_ISDIR(mode)    ? "a folder"
           : S_ISFIFO(mode) ? "a FIFO (named pipe)"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
                            : "a socket";
}

// Opened with O_NONBLOCK (a FIFO is not waited on), then read and written
// as usual.
void clear_nonblock(int fd) {
    if (const int flags = ::fcntl(fd, F_GETFL); flags >= 0)
        ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

// ------------------------------------------- files beside their targets, and signals
//
// The handler reads a fixed table (no allocation, no lock, only unlink(),
// which is async-signal-safe): a slot is used once its path is written.

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

int hold_beside(const std::string& path) {
    for (int i = 0; i < kSlots && path.size() < kSlotBytes; ++i)
        if (!slot_used[i]) {
            std::memcpy(slot_path[i], path.c_str(), path.size() + 1);
            std::atomic_signal_fence(std::memory_order_seq_cst);  // the path before the mark
            slot_used[i] = 1;
            return i;
        }
    return -1;
}

void release_beside(int slot) {
    if (slot >= 0) slot_used[slot] = 0;
}

// Files a writer killed outright left in `folder`: ".kv-part-<pid>-XXXXXX",
// this user's, and no process has that pid.
void remove_leftovers(const std::string& folder) {
    DIR* dir = ::opendir(folder.empty() ? "." : folder.c_str());
    while (const dirent* entry = dir != nullptr ? ::readdir(dir) : nullptr) {
        const std::string_view name = entry->d_name;
        int pid = 0;
        const auto [end, problem] = std::from_chars(
            name.data() + std::min<std::size_t>(name.size(), 9), name.data() + name.size(), pid);
        struct stat st {};
        if (name.starts_with(".kv-part-") && problem == std::errc() && pid > 0 &&
            std::string_view(end).size() == 7 && *end == '-' &&
            ::fstatat(::dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            st.st_uid == ::geteuid() && ::kill(pid, 0) != 0 && errno == ESRCH)
            ::unlinkat(::dirfd(dir), entry->d_name, 0);
    }
    if (dir != nullptr) ::closedir(dir);
}

// ------------------------------------------------------- what a path names

// The descriptor a path names by its text (/dev/stdout 1, /dev/fd/N and
// /proc/self/fd/N N), or -1.
int stream_named_by(const std::string& path) {
    std::error_code error;
    const std::string p = fs::absolute(path, error).lexically_normal().string();
    const std::string_view standard[] = {"/dev/stdin", "/dev/stdout", "/dev/stderr"};
    for (int fd = 0; fd < 3; ++fd)
        if (p == standard[fd]) return fd;
    int fd = -1;
    for (std::string_view folder : {"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"})
        if (const char* end = p.data() + p.size(); p.starts_with(folder))
            if (std::from_chars(p.data() + folder.size(), end, fd).ptr != end) fd = -1;
    return fd;
}

// Whether two paths name one file: one device and inode where both exist,
// else one absolute path, links in its folders resolved.
bool same_file(const std::string& a, const std::string& b) {
    struct stat sa {
    }, sb{};
    if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    auto normal = [](const std::string& p) {
        std::error_code error;
        const fs::path whole = fs::absolute(p, error).lexically_normal();
        const fs::path real = fs::weakly_canonical(whole, error);
        return error ? whole : real;
    };
    return normal(a) == normal(b);
}

// Why a symbolic link at `path` is not followed: another user planted it in
// a shared sticky folder (Linux's fs.protected_symlinks rule, whatever the
// setting); "" if it may be.
std::string planted_link(const std::string& path) {
    const fs::path parent = fs::path(path).parent_path();
    const std::string folder = parent.empty() ? std::string(".") : parent.string();
    struct stat link {
    }, dir{};
    if (::lstat(path.c_str(), &link) != 0 || !S_ISLNK(link.st_mode) ||
        ::stat(folder.c_str(), &dir) != 0 || !(dir.st_mode & S_ISVTX) || !(dir.st_mode & S_IWOTH) ||
        link.st_uid == ::geteuid() || link.st_uid == dir.st_uid)
        return "";
    return "a symbolic link owned by another user (uid " + std::to_string(link.st_uid) +
           ") in the shared folder " + excerpt(folder, kMostQuotedPath) +
           " (sticky, writable by everyone): not followed, since whoever planted it chose where "
           "it leads";
}

}  // namespace

std::string file_label(std::string_view what, const std::string& path) {
    return std::string(what) + (what.empty() ? "" : " ") + excerpt(path, kMostQuotedPath);
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

std::string as_typed(const std::string& path) {
    std::error_code e;
    const std::string near = fs::proximate(path, e).string();
    return e || near.starts_with("..") ? path : near;
}

std::string program_folder() {
    std::error_code error;
    const fs::path self = fs::read_symlink("/proc/self/exe", error);
    return error ? "" : self.parent_path().string();
}

// Asked at every file, not once: a signal set back to its default gets the
// handler again; one ignored or handled by the program keeps its action.
void handle_signals_while_writing() {
    auto at_default = [](int signal_number) {
        struct sigaction now {};
        return ::sigaction(signal_number, nullptr, &now) == 0 && !(now.sa_flags & SA_SIGINFO) &&
               now.sa_handler == SIG_DFL;
    };
    if (at_default(SIGXFSZ)) ::signal(SIGXFSZ, SIG_IGN);
    for (int signal_number : kCleanedSignals)
        if (at_default(signal_number)) ::signal(signal_number, remove_files_beside_and_stop);
}

// ------------------------------------------------------------------ reading

InputFile::InputFile(const std::string& path, std::string_view what, std::uint64_t max_bytes)
    : label_(file_label(what, path)), max_bytes_(max_bytes) {
    if (path.empty()) fail("the file name is empty");
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st {};
    if (fd_ < 0 || ::fstat(fd_, &st) != 0) {
        const int e = errno;
        fail(cause_of(e), e);
    }
    if (!S_ISREG(st.st_mode)) fail(kind_of(st.st_mode) + ", not a regular file");
    size_ = std::uint64_t(st.st_size);
    if (current_run != nullptr) current_run->inputs_.push_back({path, label_});
    if (size_ > max_bytes_)
        fail("the file has " + std::to_string(size_) + " bytes, more than the " +
             std::to_string(max_bytes_) + " this reader takes");
    clear_nonblock(fd_);
}

InputFile::~InputFile() {
    if (fd_ >= 0) ::close(fd_);
}

void InputFile::fail(const std::string& cause, int error) {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));  // a constructor that throws is not undone
    throw FileError(label_ + ": " + cause, error);
}

std::size_t InputFile::read_some(char* to, std::size_t n) {
    ssize_t got;
    while ((got = ::read(fd_, to, n)) < 0)
        if (errno != EINTR) fail("cannot read: " + cause_of(errno));
    at_ += std::uint64_t(got);
    return std::size_t(got);
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

OutputFile::OutputFile(const std::string& path, std::string_view what)
    : label_(file_label(what, path)), target_(path) {
    handle_signals_while_writing();
    RunFiles::check_output(path, what, current_run);
    // A standard stream named by its path: written through a copy of this
    // program's own descriptor, so that a shell's `>> log` appends.
    if (const int stream = stream_named_by(path); stream >= 0) {
        if (stream == 0) fail("standard input, which is read, not written", EINVAL);
        fd_ = ::fcntl(stream, F_DUPFD_CLOEXEC, 3);
        if (const int e = errno; fd_ < 0)
            fail("descriptor " + std::to_string(stream) +
                     " is not open in this program: " + cause_of(e),
                 e);
        return;
    }
    struct stat st {};
    const bool exists = ::stat(path.c_str(), &st) == 0;
    // A device or a pipe (/dev/null, a terminal): written where it is.
    // O_NONBLOCK opens a FIFO with a reader at once (`--save-json >(jq .)`)
    // and fails with ENXIO where none would ever come.
    if (exists && !S_ISREG(st.st_mode)) {
        fd_ = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        const int e = errno;
        if (fd_ < 0 && e == ENXIO && S_ISFIFO(st.st_mode))
            fail("a FIFO (named pipe) that no program is reading: nothing would take the bytes", e);
        if (fd_ < 0) fail("cannot open: " + cause_of(e), e);
        clear_nonblock(fd_);
        return;
    }
    // A link to a regular file: the file it points to is replaced, not the link.
    std::error_code error;
    if (const fs::path real = fs::canonical(path, error); exists && !error) target_ = real.string();
    const std::string folder = fs::path(target_).parent_path().string();
    remove_leftovers(folder);
    beside_ = (fs::path(folder) / (".kv-part-" + std::to_string(::getpid()) + "-XXXXXX")).string();
    if ((fd_ = ::mkostemp(beside_.data(), O_CLOEXEC)) < 0) {
        const int e = errno;
        beside_.clear();
        fail("cannot create: " + cause_of(e), e);
    }
    if ((slot_ = hold_beside(beside_)) < 0)
        fail("more files written at once than a signal's cleanup can list (64)");
    // mkstemp gives 0600: a replaced file keeps its own mode, a new one gets
    // what the umask leaves (reading the umask sets it: one thread runs here).
    const mode_t mask = exists ? 0 : ::umask(0);
    if (!exists) ::umask(mask);
    if (::fchmod(fd_, exists ? st.st_mode & 07777 : 0666 & ~mask) != 0)
        fail("cannot set permissions: " + cause_of(errno));
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
    if (beside_.empty()) {  // in place: what this program printed before comes first
        std::cout.flush();
        std::cerr.flush();
        std::fflush(nullptr);
    }
    while (!bytes.empty()) {
        const ssize_t put = ::write(fd_, bytes.data(), bytes.size());
        const int e = errno;
        if (put < 0 && e != EINTR) fail("cannot write: " + cause_of(e), e);
        if (put > 0) bytes.remove_prefix(std::size_t(put));
    }
}

void OutputFile::commit() {
    // A full disk may show only now: synced, then closed, both checked.
    if (!beside_.empty() && ::fsync(fd_) != 0) fail("cannot write: " + cause_of(errno));
    if (::close(std::exchange(fd_, -1)) != 0) fail("cannot write: " + cause_of(errno));
    if (beside_.empty()) return;
    if (current_run != nullptr) {  // renamed with the run's other files
        current_run->finished_.push_back(
            {std::exchange(beside_, ""), target_, label_, std::exchange(slot_, -1)});
    } else if (std::rename(beside_.c_str(), target_.c_str()) != 0) {
        fail("cannot replace the file: " + cause_of(errno));
    } else {
        release_beside(std::exchange(slot_, -1));
        beside_.clear();
    }
}

void write_file(const std::string& path, const std::string& text, std::string_view what) {
    const fs::path folder = fs::path(path).parent_path();
    std::error_code error;
    if (!folder.empty() && !fs::is_directory(folder, error) &&
        !fs::create_directories(folder, error) && error)
        throw FileError(file_label(what, path) + ": cannot create the folder " +
                            excerpt(folder.string(), kMostQuotedPath) + ": " + error.message(),
                        error.value());
    OutputFile out(path, what);
    out.write(text);
    out.commit();
}

void write_state_file(const std::string& path, const std::string& text, std::string_view what) {
    struct Restore {
        RunFiles* run;
        ~Restore() { current_run = run; }
    } restore{std::exchange(current_run, nullptr)};
    OutputFile out(path, what);
    out.write(text);
    out.commit();
}

// -------------------------------------------------------------- one run's files

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

void RunFiles::check_output(const std::string& path, std::string_view what, RunFiles* run) {
    const std::string label = file_label(what, path);
    if (path.empty())
        throw FileError(std::string(what.empty() ? "output" : what) + ": the file name is empty");
    if (stream_named_by(path) >= 0) return;  // a stream takes many writers
    if (const std::string planted = planted_link(path); !planted.empty())
        throw FileError(label + ": " + planted, EPERM);
    struct stat st {
    }, stream{};
    const bool exists = ::stat(path.c_str(), &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) throw FileError(label + ": a folder, not a file", EISDIR);
    for (const auto& [fd, name] : {std::pair{1, "output"}, std::pair{2, "error"}})
        if (exists && S_ISREG(st.st_mode) && ::fstat(fd, &stream) == 0 &&
            stream.st_dev == st.st_dev && stream.st_ino == st.st_ino)
            throw FileError(label + ": the same file as this program's standard " + name +
                                ": replacing it would lose what the stream writes there (to "
                                "write into the stream, name it: /dev/stdout or /dev/stderr)",
                            EINVAL);
    if (run == nullptr || (exists && !S_ISREG(st.st_mode))) return;  // a device, a pipe: shared
    for (const auto* known : {&run->inputs_, &run->outputs_})
        for (const Known& k : *known)
            if (same_file(path, k.path))
                throw FileError(
                    label + ": the same file as " + k.label + ", which this run " +
                        (known == &run->inputs_ ? "reads; an output may not replace an input"
                                                : "writes; each output needs a file of its own"),
                    EINVAL);
    run->outputs_.push_back({path, label});
}

void RunFiles::commit() {
    // Signals held back: one that comes now is taken once every file is in place.
    sigset_t held, before;
    sigemptyset(&held);
    for (int signal_number : kCleanedSignals) sigaddset(&held, signal_number);
    ::sigprocmask(SIG_BLOCK, &held, &before);
    int error = 0;
    std::string failed;
    for (const Finished& f : finished_) {
        if (error == 0 && std::rename(f.beside.c_str(), f.target.c_str()) != 0) {
            error = errno;
            failed = f.label;
        }
        if (error != 0) ::unlink(f.beside.c_str());  // this one and the rest: none replaces
        release_beside(f.slot);
    }
    finished_.clear();
    ::sigprocmask(SIG_SETMASK, &before, nullptr);
    if (error != 0)
        throw FileError(failed + ": cannot replace the file: " + cause_of(error), error);
}

// --------------------------------------------------------- standard output

void check_standard_output() {
    bool closed = false;
    for (int fd = 0; fd < 3; ++fd)  // opened in order, each takes the lowest free number: fd
        if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            ::open("/dev/null", O_RDWR);
            closed = closed || fd == 1;
        }
    if (closed)
        throw FileError("standard output is closed (>&-): what this program prints would be lost");
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
