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
// A target that exists and is not a regular file (/dev/null, /dev/stdout, a
// pipe) is written in place, and checked the same; a FIFO that no program
// is reading is refused at once instead of waiting for a reader forever.
//
// Paths are quoted through visible() (kit/report.h): a name holding a
// newline still gives a one-line message.
#pragma once

#include <sys/types.h>  // mode_t

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

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

// A file written beside its target and renamed over it by commit(). A file
// dropped without commit() (an exception on the way) is removed.
class OutputFile {
  public:
    // Throws FileError for an empty path, a folder as target, a FIFO with no
    // reader, or a file that cannot be created (a missing folder among them:
    // see write_file).
    OutputFile(const std::string& path, std::string_view what);
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    void write(std::string_view bytes);  // throws FileError on a failed write
    void commit();                       // flushes, closes, checks, renames; or throws

  private:
    [[noreturn]] void fail(const std::string& cause, int error = 0);
    void open_in_place(mode_t mode);  // a device, a pipe: written where it is
    int fd_ = -1;
    std::string label_, target_, beside_;  // beside_ empty: written in place
};

// Writes `text` to `path` whole or not at all (OutputFile), creating the
// folder it goes in if needed (plots/, build/results/). `what` names the
// flag in the message ("--save-json"); without it the message starts with
// the path.
void write_file(const std::string& path, const std::string& text);
void write_file(const std::string& path, const std::string& text, std::string_view what);

// Flushes standard output; throws FileError "cannot write standard output:
// <cause>" if anything written to it was lost (a full disk, a closed pipe).
void check_standard_output();

}  // namespace kv
