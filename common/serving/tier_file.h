// Chapter 11: the second tier on disk, one file of block-sized slots.
//
// Each slot holds one block of a BlockPool (every layer's keys and values
// for its B positions, as the pool stores them, in its number format)
// after a header: a checksum, then the block's name (its parent's entry and
// its B tokens). write() writes a slot whole; read() reads it whole and
// refuses it unless the checksum of everything after it matches and the
// name is the one asked for, so a torn write, a truncated file, a changed
// byte or a block moved to another slot is never read back as keys and
// values: the caller computes the block again. A file that cannot be made
// or written keeps nothing (write() says false) and never fails a request.
//
// The file is private to the run: made in a fresh folder (mkdtemp, mode
// 0700) under the parent asked for ($TMPDIR or /tmp by default), mode 0600,
// and both names removed as soon as the file is open. It lives as long as
// its descriptors, so nothing is left on disk however the run ends, even
// killed by SIGKILL.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../core/block_pool.h"
#include "prefix_cache.h"

namespace kv {

class TierFile final : public TierStore {
  public:
    // Bytes of one slot: the header and one block of the pool's.
    static std::uint64_t slot_bytes(std::uint64_t bytes_per_block, int block_size);
    // Slots of that size in `mib` MiB: the tier's capacity in blocks.
    static int slots_in(std::uint64_t mib, std::uint64_t bytes_per_block, int block_size);

    // A tier of `slots` slots for the blocks of `pool`, in a new folder
    // under `parent` ("": $TMPDIR, else /tmp). If the folder or the file
    // cannot be made, warning() says why and every write() says false.
    TierFile(BlockPool& pool, int slots, const std::string& parent = "");
    ~TierFile() override;
    TierFile(const TierFile&) = delete;
    TierFile& operator=(const TierFile&) = delete;

    bool write(int slot, const BlockName& name, int block) override;
    bool read(int slot, const BlockName& name, int block) override;

    // What the file did, and the seconds it took (the wall clock: a read
    // from disk waits, and that wait is its cost).
    struct Counts {
        std::int64_t written = 0, write_failures = 0;
        std::int64_t read = 0, truncated = 0, corrupt = 0, misnamed = 0;  // refused, by cause
        std::uint64_t bytes_written = 0, bytes_read = 0;
        double write_seconds = 0, read_seconds = 0;
        double waited_seconds = 0;  // of those, time the thread did not run (the disk's)
    };
    const Counts& counts() const { return counts_; }

    // A name that opens the file while it is open (/proc/self/fd/N: it has
    // none on disk); empty if none.
    const std::string& path() const { return path_; }
    const std::string& folder() const { return folder_; }    // made under it; empty if none
    const std::string& warning() const { return warning_; }  // the first failure; empty if none
    int slots() const { return slots_; }

    // Cold reads: the file's data written out (fdatasync) and its pages
    // dropped from the operating system's cache (POSIX_FADV_DONTNEED), so
    // the next read comes from the disk. Returns the file's pages still
    // cached afterwards (mincore): 0 when the drop worked, -1 if not known.
    std::int64_t drop_cached_pages();
    // Reads bypass the page cache (O_DIRECT) from now on; false if the
    // file system refuses it (tmpfs does), and reads stay as they were.
    bool read_direct();

  private:
    void fail(const std::string& what, int error);
    std::uint64_t offset(int slot) const { return std::uint64_t(slot) * slot_bytes_; }

    BlockPool& pool_;
    int slots_;
    std::uint64_t slot_bytes_;
    int fd_ = -1, direct_fd_ = -1;  // direct_fd_: O_DIRECT, -1 if refused
    bool direct_ = false;           // reads go through direct_fd_
    std::string folder_, path_, warning_;
    std::vector<std::byte> buffer_;  // one slot, as on disk
    Counts counts_;
};

}  // namespace kv
