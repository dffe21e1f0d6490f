#include "tier_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace kv {

namespace {

// Signals held back while the tier's folder and file exist on disk, from
// mkdtemp() to rmdir(), so that no SIGINT, SIGTERM or SIGHUP ends the program in
// between and leaves them behind.
class SignalsHeld {
  public:
    SignalsHeld() {
        sigset_t held;
        sigemptyset(&held);
        for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&held, s);
        ::sigprocmask(SIG_BLOCK, &held, &before_);
    }
    ~SignalsHeld() { ::sigprocmask(SIG_SETMASK, &before_, nullptr); }

  private:
    sigset_t before_;
};

// ----------------------------------------------------------- the slot

// Header: the checksum (8 bytes), the parent entry (8), the token count
// (8), the tokens (4 each, padded to 8); then the block's bytes.
std::uint64_t header_bytes(int block_size) {
    return 24 + (std::uint64_t(block_size) * 4 + 7) / 8 * 8;
}

// Four lanes of 64-bit multiply-xor over 8-byte words, then the lanes and
// the length folded together. Each step is invertible, so one changed
// byte always changes the sum; four lanes keep the multiplies in flight.
std::uint64_t checksum(const std::byte* data, std::size_t n) {
    constexpr std::uint64_t kOdd = 0x9E3779B97F4A7C15ull;
    std::uint64_t lane[4] = {1, 2, 3, 4};
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; ++k) {
            std::uint64_t w;
            std::memcpy(&w, data + i + 8 * k, 8);
            lane[k] = (lane[k] ^ w) * kOdd;
        }
    std::uint64_t sum = n;
    for (int k = 0; k < 4; ++k) sum = (sum ^ lane[k]) * kOdd;
    for (; i < n; ++i) sum = (sum ^ std::uint64_t(data[i])) * kOdd;
    return sum;
}

double wall_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
double cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// Times one read or write: wall seconds, and those the thread waited.
struct Stopwatch {
    double wall = wall_seconds(), cpu = cpu_seconds();
    void stop(double& seconds, double& waited) const {
        const double w = wall_seconds() - wall, c = cpu_seconds() - cpu;
        seconds += w;
        waited += std::max(0.0, w - c);
    }
};

}  // namespace

std::uint64_t TierFile::slot_bytes(std::uint64_t bytes_per_block, int block_size) {
    return header_bytes(block_size) + bytes_per_block;
}

int TierFile::slots_in(std::uint64_t mib, std::uint64_t bytes_per_block, int block_size) {
    return int(std::min<std::uint64_t>((mib << 20) / slot_bytes(bytes_per_block, block_size),
                                       std::uint64_t(1) << 30));
}

TierFile::TierFile(BlockPool& pool, int slots, const std::string& parent)
    : pool_(pool),
      slots_(slots),
      slot_bytes_(slot_bytes(pool.bytes_per_block(), pool.block_size())) {
    buffer_.resize(slot_bytes_);
    const char* tmp = std::getenv("TMPDIR");
    const std::string under = parent.empty() ? (tmp && *tmp ? tmp : "/tmp") : parent;
    std::string folder = under + "/kv-tier-XXXXXX";
    const SignalsHeld held;
    if (!::mkdtemp(folder.data())) {
        fail("cannot make a folder in " + under, errno);
        return;
    }
    // Both descriptors open, then the names go at once: the file lives as
    // long as they do, and whatever ends the run (even SIGKILL) leaves
    // nothing on disk. O_DIRECT is asked now, while the file has a name.
    const std::string file = folder + "/blocks";
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    const int error = fd_ < 0 || ::fchmod(fd_, 0600) != 0 ? errno : 0;
    if (fd_ >= 0) direct_fd_ = ::open(file.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
    ::unlink(file.c_str());
    ::rmdir(folder.c_str());
    if (error) {
        fail("cannot create " + file, error);
        return;
    }
    folder_ = under;
    path_ = "/proc/self/fd/" + std::to_string(fd_);
}

TierFile::~TierFile() {
    if (fd_ >= 0) ::close(fd_);
    if (direct_fd_ >= 0) ::close(direct_fd_);
}

void TierFile::fail(const std::string& what, int error) {
    if (warning_.empty())
        warning_ = what + (error ? std::string(": ") + std::strerror(error) : std::string());
    if (fd_ >= 0 && error) {  // a file that failed once is not trusted again
        ::close(fd_);
        fd_ = -1;
        path_.clear();
    }
}

bool TierFile::write(int slot, const BlockName& name, int block) {
    if (fd_ < 0 || slot < 0 || slot >= slots_) {
        ++counts_.write_failures;
        return false;
    }
    const Stopwatch watch;
    std::byte* at = buffer_.data() + 8;
    const std::int64_t head[2] = {name.parent, std::int64_t(name.tokens.size())};
    std::memcpy(at, head, sizeof head);
    std::memcpy(at + sizeof head, name.tokens.data(), name.tokens.size_bytes());
    at = buffer_.data() + header_bytes(pool_.block_size());
    const std::size_t rows = std::size_t(pool_.block_size()) * pool_.row_format().bytes();
    for (int l = 0; l < pool_.n_layers(); ++l) {
        at = std::copy_n(pool_.key_bytes(block, l), rows, at);
        at = std::copy_n(pool_.value_bytes(block, l), rows, at);
    }
    const std::uint64_t sum = checksum(buffer_.data() + 8, slot_bytes_ - 8);
    std::memcpy(buffer_.data(), &sum, 8);
    const ssize_t n = ::pwrite(fd_, buffer_.data(), slot_bytes_, off_t(offset(slot)));
    if (n != ssize_t(slot_bytes_)) {
        fail("cannot write the tier file made under " + folder_, n < 0 ? errno : ENOSPC);
        ++counts_.write_failures;
        return false;
    }
    watch.stop(counts_.write_seconds, counts_.waited_seconds);
    ++counts_.written;
    counts_.bytes_written += slot_bytes_;
    return true;
}

bool TierFile::read(int slot, const BlockName& name, int block) {
    if (fd_ < 0 || slot < 0 || slot >= slots_) return false;
    const Stopwatch watch;
    const std::byte* data = buffer_.data();
    ssize_t n;
    if (direct_) {  // whole aligned pages around the slot, into an aligned buffer
        const std::uint64_t first = offset(slot) / 4096 * 4096, lead = offset(slot) - first;
        const std::uint64_t pages = (lead + slot_bytes_ + 4095) / 4096 * 4096;
        std::vector<std::byte> bytes(pages + 4096);
        std::byte* aligned = bytes.data() + (4096 - std::uintptr_t(bytes.data()) % 4096) % 4096;
        const ssize_t got = ::pread(direct_fd_, aligned, pages, off_t(first));
        n = got < ssize_t(lead) ? -1 : std::min(got - ssize_t(lead), ssize_t(slot_bytes_));
        if (n > 0) std::copy_n(aligned + lead, n, buffer_.data());
    } else {
        n = ::pread(fd_, buffer_.data(), slot_bytes_, off_t(offset(slot)));
    }
    std::int64_t head[2];
    std::memcpy(head, data + 8, sizeof head);
    std::uint64_t sum;
    std::memcpy(&sum, data, 8);
    bool ok = false;
    if (n != ssize_t(slot_bytes_))
        ++counts_.truncated;
    else if (sum != checksum(data + 8, slot_bytes_ - 8))
        ++counts_.corrupt;
    else if (head[0] != name.parent || head[1] != std::int64_t(name.tokens.size()) ||
             std::memcmp(data + 24, name.tokens.data(), name.tokens.size_bytes()) != 0)
        ++counts_.misnamed;
    else
        ok = true;
    if (!ok) return false;
    const std::byte* at = data + header_bytes(pool_.block_size());
    const std::size_t rows = std::size_t(pool_.block_size()) * pool_.row_format().bytes();
    for (int l = 0; l < pool_.n_layers(); ++l, at += 2 * rows) {
        std::copy_n(at, rows, pool_.key_bytes(block, l));
        std::copy_n(at + rows, rows, pool_.value_bytes(block, l));
    }
    watch.stop(counts_.read_seconds, counts_.waited_seconds);
    ++counts_.read;
    counts_.bytes_read += slot_bytes_;
    return true;
}

std::int64_t TierFile::drop_cached_pages() {
    if (fd_ < 0) return -1;
    ::fdatasync(fd_);  // dirty pages cannot be dropped
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || st.st_size == 0) return -1;
    const std::size_t bytes = std::size_t(st.st_size), page = std::size_t(::sysconf(_SC_PAGESIZE));
    void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd_, 0);
    if (map == MAP_FAILED) return -1;
    std::vector<unsigned char> resident((bytes + page - 1) / page);
    const bool known = ::mincore(map, bytes, resident.data()) == 0;
    ::munmap(map, bytes);
    return known ? std::count_if(resident.begin(), resident.end(),
                                 [](unsigned char c) { return c & 1; })
                 : -1;
}

bool TierFile::read_direct() {
    direct_ = fd_ >= 0 && direct_fd_ >= 0;
    return direct_;
}

}  // namespace kv
