// Reading and writing files, every failure one line "<what> <path>: <cause>":
// `what` is the flag that named the file or its kind ("checkpoint"), the
// cause the system's own (strerror) where there is one, and the path goes
// through excerpt() (report.h).
//
// Reading: only a regular file, and at most a stated number of bytes: a
// FIFO (which would block), /dev/zero (which never ends) or a folder is
// refused before anything is read.
//
// Writing replaces a file whole: the bytes go to a fresh file beside it
// (mkstemp: never a name planted in advance), checked once closed, then
// renamed over the target, so a failure leaves the old file or none. It
// keeps the target's permissions (a new file gets what the umask leaves).
// Written in place instead, or refused:
//   - a standard stream named by its path (/dev/stdout, /dev/fd/N) is written
//     through this program's descriptor, so `--save-json /dev/stdout >> log`
//     appends as the shell asked;
//   - a device or a pipe is written in place; a FIFO nobody reads is refused;
//   - a regular file that is this program's standard output or error under
//     another name is refused: replacing it would lose what the stream writes;
//   - a symbolic link in a shared sticky folder (/tmp) owned by neither this
//     user nor the folder's owner is refused, not followed (Linux's
//     fs.protected_symlinks rule, whatever the setting);
//   - inside a RunFiles, a file the run reads or already writes is refused.
//
// Signals: SIGINT, SIGTERM and SIGHUP remove the files beside their targets
// (the handler only reads a fixed table and calls unlink, which is
// async-signal-safe), then end the program as they would have. A signal
// ignored at the start (nohup) or with a handler keeps it. SIGXFSZ is
// ignored, so a write past `ulimit -f` fails with EFBIG and says the limit.
#pragma once

#include <sys/types.h>  // mode_t

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kv {

// A file that cannot be read or written; the message is one line.
struct FileError : std::runtime_error {
    explicit FileError(const std::string& message, int error = 0)
        : std::runtime_error(message), error_number(error) {}
    int error_number;  // the system's errno for the cause (ENOENT: not there), 0 if none
};

// "<what> <path>", or the path alone when `what` is empty.
std::string file_label(std::string_view what, const std::string& path);

// One open regular file, read from its start.
class InputFile {
  public:
    // Throws FileError if `path` cannot be opened, is not a regular file or
    // is larger than `max_bytes`.
    InputFile(const std::string& path, std::string_view what, std::uint64_t max_bytes);
    ~InputFile();
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;

    std::uint64_t size() const { return size_; }  // in bytes, when it was opened
    bool read(void* out, std::size_t n);          // exactly `n` bytes; false if the file ends first
    bool skip(std::uint64_t n);                   // false if that is past the end
    // Everything from here to the end, at most max_bytes (a /proc file may grow).
    std::string read_rest();
    // Throws FileError "<what> <path>: <cause>", carrying `error` (an errno).
    [[noreturn]] void fail(const std::string& cause, int error = 0) const;

  private:
    std::size_t read_some(char* to, std::size_t n);  // 0 at the end
    int fd_ = -1;
    std::string label_;  // file_label(what, path)
    std::uint64_t size_ = 0, max_bytes_ = 0, at_ = 0;
};

// The whole of the regular file `path`, at most `max_bytes` (InputFile).
std::string read_file(const std::string& path, std::string_view what, std::uint64_t max_bytes);

// A file written beside its target and renamed over it by commit() (in a
// RunFiles, when the run's files are committed). Dropped without commit(),
// it is removed.
class OutputFile {
  public:
    // Throws FileError for a target refused above or that cannot be created.
    OutputFile(const std::string& path, std::string_view what);
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    void write(std::string_view bytes);  // throws FileError on a failed write
    void commit();                       // flushes, closes, checks, renames; or throws

  private:
    [[noreturn]] void fail(const std::string& cause, int error = 0);
    void drop_beside();  // removes the file beside the target, if any
    int fd_ = -1;
    int slot_ = -1;  // the file beside the target's place in the signal handler's table
    bool stream_ = false;
    std::string label_, target_, beside_;  // beside_ empty: written in place
};

// Writes `text` to `path` whole or not at all (OutputFile), creating its
// folder if needed; `what` names the flag in a message ("--save-json").
void write_file(const std::string& path, const std::string& text, std::string_view what = "");

// Throws FileError for an output refused whatever the run (an empty name, a
// folder, and the refusals above); Flags asks it of every output flag.
void check_output_path(const std::string& path, std::string_view what);

// Whether two paths name one file: the same device and inode when both
// exist, else the same absolute path, links in its folders resolved.
bool same_file(const std::string& a, const std::string& b);

// `text` as part of a file's name: its lowercase letters and digits, every
// run of anything else one '-' ("dim 256, 6 layers" -> "dim-256-6-layers").
std::string file_name_part(const std::string& text);

// The descriptor a path names by its text (/dev/stdout 1, /dev/fd/N and
// /proc/self/fd/N N), or -1.
int stream_named_by(const std::string& path);

// One run's files, kept while a chapter runs (run_chapter): it refuses an
// output that is a file the run reads or already writes, and holds every
// committed OutputFile beside its target until its own commit() renames
// them all, signals held back: they replace the old ones together, or (a
// failure, a signal before) none does. Dropped uncommitted, it removes them.
class RunFiles {
  public:
    RunFiles();
    ~RunFiles();
    RunFiles(const RunFiles&) = delete;
    RunFiles& operator=(const RunFiles&) = delete;

    void commit();               // renames every finished file over its target; or throws FileError
    static RunFiles* current();  // the RunFiles in force, or nullptr

  private:
    friend class InputFile;
    friend class OutputFile;
    friend class Flags;
    struct Known {
        std::string path, label;  // label: file_label, what and path
    };
    struct Finished {
        std::string beside, target, label;
        int slot;
    };
    void check_output(const std::string& path, const std::string& label);

    RunFiles* outer_;
    std::vector<Known> inputs_, outputs_;
    std::vector<Finished> finished_;
};

// Installs the signal handling above for every signal still at its default
// action; the first file written does it, and run_program at its start, so
// that standard output into a file meets ulimit -f as an error.
void handle_signals_while_writing();

// Flushes standard output; throws FileError "cannot write standard output:
// <cause>" if anything written to it was lost (a full disk, a closed pipe).
void check_standard_output();

}  // namespace kv
