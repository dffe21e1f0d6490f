// Reading and writing files, every failure one line saying which file,
// what it is for, and the real cause.
//
// `what` says what a file is for: the flag that named it ("--calibration")
// or the kind of file ("checkpoint"). Every message reads
//
//     <what> <path>: <cause>
//
// and the cause is the system's own where there is one (strerror: "No such
// file or directory", "Permission denied", "Too many levels of symbolic
// links", "File name too long", "No space left on device").
//
// Reading: only a regular file is read, and at most a stated number of
// bytes of it, so a FIFO (which would block forever), /dev/zero (which never
// ends) or a folder is refused at once, before any of it is read.
//
// Writing: a file is replaced whole. The bytes go to a file beside it, which
// is checked after it is closed and only then renamed over the old one, so a
// failure (a full disk, a folder that cannot be created) leaves the old file
// or none, never half of one. The file beside it has a fresh, short name made
// by mkstemp in the target's folder: never an existing file or a link planted
// there, and room left for a target whose name has the 255 bytes allowed.
// It gets the target's permissions (a 0600 file stays 0600), or, for a new
// file, those open(..., 0666) would give under the umask.
//
// What is written in place, and what is refused:
//   - a path that names a standard stream (/dev/stdout, /dev/stderr,
//     /dev/fd/N, /proc/self/fd/N) is written to that stream, through this
//     program's own descriptor: `--save-json /dev/stdout >> run.log` appends
//     to run.log as the shell asked, never replaces it;
//   - a target that exists and is not a regular file (/dev/null, a terminal,
//     a pipe) is written in place, and checked the same; a FIFO that no
//     program is reading is refused at once instead of waiting forever;
//   - a regular file that is this program's standard output or error under
//     another name (`--save-json run.log > run.log`) is refused: renaming
//     over it would lose what the stream writes, and writing into it would
//     mix the two;
//   - a symbolic link in a shared sticky folder (world-writable with the
//     sticky bit, as /tmp), owned by neither this user nor the folder's
//     owner, is refused, not followed: another user may have planted it to
//     make this program overwrite a file of ours (the rule Linux's
//     fs.protected_symlinks applies to every path, applied here to the
//     output whatever that setting is);
//   - inside a RunFiles (below), a file this run has read, or already
//     writes, is refused: an output never replaces an input, and two
//     outputs never share a file.
//
// Signals: while a file beside its target exists, its name is kept in a
// fixed table that a handler for SIGINT, SIGTERM and SIGHUP reads: the
// handler removes every such file (unlink, which is async-signal-safe), then
// lets the signal end the program as it would have (its default action,
// raised again). A signal that the program was started ignoring (nohup's
// SIGHUP) stays ignored, and one that already has a handler keeps it.
// SIGXFSZ, which kills a program that writes past its file-size limit
// (ulimit -f), is ignored once a file is written, so the write fails with
// EFBIG instead, and the message names the limit.
//
// Paths are quoted through excerpt() (kit/report.h): a name holding a
// newline still gives a one-line message, and a very long one a short line.
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

// "<what> <path>" (or the path alone when `what` is empty), the path made
// visible (control characters escaped).
std::string file_label(std::string_view what, const std::string& path);

// One open regular file, read from its start.
class InputFile {
  public:
    // Opens `path`; throws FileError if it cannot be opened (the cause named),
    // is not a regular file (a folder, a FIFO, a device: never blocks on one),
    // or is larger than `max_bytes`.
    InputFile(const std::string& path, std::string_view what, std::uint64_t max_bytes);
    ~InputFile();
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;

    std::uint64_t size() const { return size_; }  // in bytes, when it was opened
    // Reads exactly `n` bytes; false if the file ends first. A read error
    // throws FileError.
    bool read(void* out, std::size_t n);
    // Moves `n` bytes on; false if that is past the end.
    bool skip(std::uint64_t n);
    // Everything from here to the end, at most max_bytes in all (a file that
    // grows past it while read, as /proc files may, is refused).
    std::string read_rest();
    // Throws FileError "<what> <path>: <cause>", carrying `error` (an errno).
    [[noreturn]] void fail(const std::string& cause, int error = 0) const;

  private:
    int fd_ = -1;
    std::string label_;  // file_label(what, path)
    std::uint64_t size_ = 0, max_bytes_ = 0, at_ = 0;
};

// The whole of the regular file `path`, at most `max_bytes` (InputFile).
std::string read_file(const std::string& path, std::string_view what, std::uint64_t max_bytes);

// A file written beside its target and renamed over it by commit() (or, in
// a RunFiles, when the run's files are committed together). A file dropped
// without commit() (an exception on the way) is removed.
class OutputFile {
  public:
    // Throws FileError for an empty path, a folder as target, a FIFO with no
    // reader, a file that cannot be created (a missing folder among them:
    // see write_file), or a target refused above.
    OutputFile(const std::string& path, std::string_view what);
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    void write(std::string_view bytes);  // throws FileError on a failed write
    void commit();                       // flushes, closes, checks, renames; or throws

  private:
    [[noreturn]] void fail(const std::string& cause, int error = 0);
    void open_in_place(mode_t mode);  // a device, a pipe: written where it is
    void open_stream(int stream);     // /dev/stdout and the like: this program's descriptor
    void drop_beside();               // removes the file beside the target, if any
    int fd_ = -1;
    int slot_ = -1;  // the file beside the target's place in the signal handler's table
    bool stream_ = false;
    std::string label_, target_, beside_;  // beside_ empty: written in place
};

// Writes `text` to `path` whole or not at all (OutputFile), creating the
// folder it goes in if needed (plots/, build/results/). `what` names the
// flag in the message ("--save-json"); without it the message starts with
// the path.
void write_file(const std::string& path, const std::string& text);
void write_file(const std::string& path, const std::string& text, std::string_view what);

// Throws FileError, "<what> <path>: <cause>", for an output OutputFile
// would refuse whatever the run (above): an empty name, a folder, a link
// planted in a shared sticky folder, a regular file that is this program's
// standard output or error. Flags::parse asks it of every output flag, so
// that such a name stops the program before it runs.
void check_output_path(const std::string& path, std::string_view what);

// Whether two paths name one file: the same device and inode when both
// exist, the same absolute path (links in its folders resolved, "." and
// ".." taken out) when either does not yet.
bool same_file(const std::string& a, const std::string& b);

// The standard stream a path names by its text, or -1: /dev/stdout 1,
// /dev/stderr 2, /dev/stdin 0, /dev/fd/N and /proc/self/fd/N N.
int stream_named_by(const std::string& path);

// One run's files, kept while a chapter runs (run_chapter): what it reads,
// and what it writes. While one exists:
//   - every InputFile opened is remembered, and an OutputFile whose target
//     is one of them is refused (`--checkpoint m.bin --save-json m.bin`);
//   - every OutputFile's target is remembered, and a second output to the
//     same file is refused (`--save-checkpoint s.bin --save-tokenizer s.bin`,
//     or --save-json naming one of the plots);
//   - an OutputFile's commit() closes and checks its file but leaves it
//     beside its target; commit() here then renames them all, one after the
//     other, with SIGINT, SIGTERM and SIGHUP held back until the last is
//     done. So a run's plots, JSON and saved files replace the old ones
//     together: a failure or a signal before that leaves every old file as
//     it was (and removes the new ones), and one during it is only taken
//     once all are renamed. (A crash or SIGKILL in the microseconds between
//     two renames could still leave some new and some old.) What goes to a
//     stream or a device is written at once, in place.
// Dropped without commit(), it removes every file it holds.
class RunFiles {
  public:
    RunFiles();
    ~RunFiles();
    RunFiles(const RunFiles&) = delete;
    RunFiles& operator=(const RunFiles&) = delete;

    void commit();  // renames every finished file over its target; or throws FileError

    // The RunFiles in force, or nullptr.
    static RunFiles* current();

  private:
    friend class InputFile;
    friend class OutputFile;
    struct Known {
        dev_t device = 0;
        ino_t inode = 0;
        bool exists = false;
        std::string path;   // absolute, normalized (same_file)
        std::string label;  // file_label: what and path
    };
    struct Finished {
        std::string beside, target, label;
        int slot;
    };
    void read_from(const Known& input);
    void check_output(const std::string& path, const std::string& label);
    void finished(Finished file);

    RunFiles* outer_;
    std::vector<Known> inputs_, outputs_;
    std::vector<Finished> finished_;
};

// Installs what the comment at the top says about signals: the handler that
// removes the files beside their targets on SIGINT, SIGTERM and SIGHUP, and
// SIGXFSZ ignored. Done by the first file written; run_program does it at
// its start, so that standard output into a file meets ulimit -f as an
// error too. Each call looks again: only a signal whose action is its
// default is changed.
void handle_signals_while_writing();

// Flushes standard output; throws FileError "cannot write standard output:
// <cause>" if anything written to it was lost (a full disk, a closed pipe).
void check_standard_output();

}  // namespace kv
