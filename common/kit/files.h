// Reading and writing files. Every failure is one line, "<what> <path>:
// <cause>": `what` the flag that named the file or its kind ("checkpoint").
//
// Reading takes only a regular file of at most a stated size: a FIFO (which
// would block), /dev/zero (which never ends) or a folder is refused before
// a byte is read.
//
// Writing replaces a file whole, keeping its permissions: the bytes go to a
// new file beside it, .kv-part-<pid>-XXXXXX (mkstemp: a name planted in
// advance is never followed), renamed over it once synced. Written in
// place: a standard stream named by its path (`--save-json /dev/stdout >>
// log` appends), a device, a pipe. Refused: a FIFO nobody reads; a regular
// file that is this program's standard output or error under another name;
// a link another user planted in a shared sticky folder (/tmp).
//
// Nothing is left behind: SIGINT, SIGTERM and SIGHUP remove the files beside
// their targets, then end the program as they would have; the file of a
// writer killed outright (SIGKILL) is removed by the next write to its
// folder once no process has its pid. SIGXFSZ is ignored, so a write past
// `ulimit -f` fails with EFBIG, and the message says the limit.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kv {

struct FileError : std::runtime_error {
    explicit FileError(const std::string& message, int error = 0)
        : std::runtime_error(message), error_number(error) {}
    int error_number;  // the system's errno for the cause (ENOENT: not there), 0 if none
};

// "<what> <path>", or the path alone when `what` is empty.
std::string file_label(std::string_view what, const std::string& path);

// One regular file, read from its start; throws FileError if `path` cannot
// be opened, is not a regular file or holds more than `max_bytes`.
class InputFile {
  public:
    InputFile(const std::string& path, std::string_view what, std::uint64_t max_bytes);
    ~InputFile();
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;

    std::uint64_t size() const { return size_; }  // in bytes, when it was opened
    bool read(void* out, std::size_t n);          // exactly `n` bytes; false if the file ends first
    bool skip(std::uint64_t n);                   // false if that is past the end
    std::string read_rest();                      // to the end (a /proc file may grow: bounded)

  private:
    [[noreturn]] void fail(const std::string& cause, int error = 0);
    std::size_t read_some(char* to, std::size_t n);  // 0 at the end
    int fd_ = -1;
    std::string label_;
    std::uint64_t size_ = 0, max_bytes_ = 0, at_ = 0;
};

std::string read_file(const std::string& path, std::string_view what, std::uint64_t max_bytes);

// A file written beside its target and renamed over it by commit() (in a
// RunFiles, by the run's commit). Dropped without commit(), it is removed.
class OutputFile {
  public:
    OutputFile(const std::string& path, std::string_view what);  // or throws FileError
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    void write(std::string_view bytes);
    void commit();  // synced, closed and renamed, each checked; or throws FileError

  private:
    [[noreturn]] void fail(const std::string& cause, int error = 0);
    void drop_beside();
    int fd_ = -1;
    int slot_ = -1;                        // the signal handler's entry for beside_
    std::string label_, target_, beside_;  // beside_ empty: written in place
};

// `text` written to `path` whole or not at all, its folder made if needed.
void write_file(const std::string& path, const std::string& text, std::string_view what = "");

// What the book keeps beside the program between runs (a calibration, the
// kernel plan), whole or not at all, into a folder that is there; not one of
// the run's outputs (apart from the RunFiles in force), it may replace what
// the run itself read.
void write_state_file(const std::string& path, const std::string& text, std::string_view what);

// `text` as part of a file's name: its lowercase letters and digits, every
// run of anything else one '-' ("dim 256, 6 layers" -> "dim-256-6-layers").
std::string file_name_part(const std::string& text);

// The folder this program is in (build/ for ./build/ch05), where the book
// keeps what it measures once (the kernel plan, calibrations); "" if unknown.
std::string program_folder();
// `path` as the reader would type it from where they ran the program
// (build/calibration/... from the book's folder), absolute from elsewhere.
std::string as_typed(const std::string& path);

// One run's files (run_chapter): it refuses an output that is a file the
// run reads (this program first) or already writes, and holds every
// committed OutputFile beside its target until its own commit() renames
// them, one after another in the order they were committed, signals held
// back. Every check a run makes comes before that; a rename that fails
// there leaves the files renamed before it replaced and removes the rest.
// Dropped uncommitted, it removes them.
class RunFiles {
  public:
    RunFiles();
    ~RunFiles();
    RunFiles(const RunFiles&) = delete;
    RunFiles& operator=(const RunFiles&) = delete;

    void commit();

  private:
    friend class InputFile;
    friend class OutputFile;
    friend class Flags;
    struct Known {
        std::string path, label;
    };
    struct Finished {
        std::string beside, target, label;
        int slot;
    };
    // The refusals that hold in any run, then those of `run` if there is one
    // (throws FileError); an output it takes is then one of its outputs.
    static void check_output(const std::string& path, std::string_view what, RunFiles* run);

    RunFiles* outer_;
    std::vector<Known> inputs_, outputs_;
    std::vector<Finished> finished_;
};

// Installs the signal handling above; run_program does it at its start.
void handle_signals_while_writing();

// Throws FileError if standard output is closed (`>&-`; /dev/null is opened
// there, so no file this run opens takes its number) or lost what was
// written to it (a full disk, a closed pipe).
void check_standard_output();

}  // namespace kv
