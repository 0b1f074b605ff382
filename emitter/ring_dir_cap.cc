#include "emitter/ring_dir_cap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

#include "ringfile/format.h"

namespace ringprof {
namespace emitter {
namespace {

// Evictions per creation: bounds the work when many small rings are gone.
constexpr int kMaxEvictions = 256;
constexpr size_t kMaxName = 256;

struct LinuxDirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

bool IsRingName(const char* name) {
  const size_t n = strlen(name);
  return n > 5 && n < kMaxName && strcmp(name + n - 5, ".ring") == 0;
}

// Calls `visit(name)` for every ring file name in the directory.
template <typename Visit>
void ForEachRing(int dir_fd, Visit visit) {
  lseek(dir_fd, 0, SEEK_SET);
  alignas(8) char buffer[2048];
  while (true) {
    const long n = syscall(SYS_getdents64, dir_fd, buffer, sizeof(buffer));
    if (n <= 0) return;
    for (long offset = 0; offset < n;) {
      const auto* entry =
          reinterpret_cast<const LinuxDirent64*>(buffer + offset);
      offset += entry->d_reclen;
      if ((entry->d_type == DT_REG || entry->d_type == DT_UNKNOWN) &&
          IsRingName(entry->d_name)) {
        visit(entry->d_name);
      }
    }
  }
}

uint64_t AllocatedBytes(int dir_fd, const char* name) {
  struct stat st;
  // The system call: fstatat is a function only since glibc 2.33.
  if (syscall(SYS_newfstatat, dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      !S_ISREG(st.st_mode)) {
    return 0;
  }
  // A ring's blocks may be reserved as its writer reaches them
  // (WriterOptions::reserve_as_written): it counts for its full size.
  const uint64_t blocks = static_cast<uint64_t>(st.st_blocks) * 512;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  return blocks > size ? blocks : size;
}

struct Candidate {
  bool found = false;
  bool ended = false;
  uint64_t created_ns = 0;
  uint64_t bytes = 0;
  char name[kMaxName] = {};
};

// True when `a` should go before `b`: ended rings first, then the oldest.
bool Before(bool a_ended, uint64_t a_created, const Candidate& b) {
  if (!b.found) return true;
  if (a_ended != b.ended) return a_ended;
  return a_created < b.created_ns;
}

// The header fields eviction needs (FORMAT.md section 2).
struct HeaderFields {
  uint32_t pid;
  uint32_t flags;
  uint64_t start_ticks;
  uint64_t created_realtime_ns;
};

template <typename T>
T Field(const unsigned char* bytes, size_t offset) {
  T value;
  memcpy(&value, bytes + offset, sizeof(value));
  return value;
}

// False for anything that is not a complete ring file (never deleted: it
// may be one being created).
bool ReadHeader(int dir_fd, const char* name, HeaderFields* fields) {
  const int fd =
      openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  unsigned char head[80];
  uint32_t ready = 0;
  const bool complete =
      pread(fd, head, sizeof(head), 0) == static_cast<ssize_t>(sizeof(head)) &&
      pread(fd, &ready, sizeof(ready), offsetof(ringfile::FileHeader, ready)) ==
          static_cast<ssize_t>(sizeof(ready));
  close(fd);
  if (!complete ||
      memcmp(head, ringfile::kMagic, sizeof(ringfile::kMagic)) != 0 ||
      ready != ringfile::kReadyMagic) {
    return false;
  }
  fields->pid = Field<uint32_t>(head, offsetof(ringfile::FileHeader, pid));
  fields->flags = Field<uint32_t>(head, offsetof(ringfile::FileHeader, flags));
  fields->start_ticks = Field<uint64_t>(
      head, offsetof(ringfile::FileHeader, process_start_ticks));
  fields->created_realtime_ns = Field<uint64_t>(
      head, offsetof(ringfile::FileHeader, created_realtime_ns));
  return true;
}

bool WriterGone(const HeaderFields& header) {
  if (header.pid == 0) return false;
  const uint64_t ticks = ProcessStartTicks(header.pid);
  if (ticks == 0) return true;  // no such process
  return header.start_ticks != 0 && ticks != header.start_ticks;  // reused
}

}  // namespace

uint64_t ProcessStartTicks(uint32_t pid) {
  // "/proc//": the kernel's view even under qemu-user, which answers
  // "/proc/self/stat" and "/proc/<its pid>/stat" itself, with a start time
  // of its own some ticks off the kernel's (the one a collector reads), but
  // leaves other spellings of the path alone.
  char path[48] = "/proc//self/stat";
  if (pid != 0) {
    char digits[12];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + pid % 10);
      pid /= 10;
    } while (pid != 0);
    char* p = path + strlen("/proc//");
    while (n > 0) *p++ = digits[--n];
    memcpy(p, "/stat", 6);
  }
  char buf[1024];
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  // The command name (field 2) may contain spaces and ')': skip to the
  // last ')', which is followed by field 3.
  const char* p = strrchr(buf, ')');
  if (p == nullptr) return 0;
  int field = 2;
  for (++p; *p != '\0' && field < 22; ++p) {
    if (*p == ' ') ++field;
  }
  uint64_t ticks = 0;
  for (; *p >= '0' && *p <= '9'; ++p) ticks = ticks * 10 + (*p - '0');
  return ticks;
}

int MakeRoomInRingDir(const char* dir, uint64_t cap_bytes,
                      uint64_t new_file_size) {
  if (cap_bytes == 0) return 0;
  const int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return 0;
  uint64_t total = 0;
  ForEachRing(dir_fd,
              [&](const char* name) { total += AllocatedBytes(dir_fd, name); });
  int result = 0;
  for (int evicted = 0; total + new_file_size > cap_bytes; ++evicted) {
    Candidate best;
    if (evicted < kMaxEvictions) {
      ForEachRing(dir_fd, [&](const char* name) {
        HeaderFields header;
        if (!ReadHeader(dir_fd, name, &header) || !WriterGone(header)) return;
        const bool ended = (header.flags & ringfile::kFlagProcessEnded) != 0;
        if (!Before(ended, header.created_realtime_ns, best)) return;
        best.found = true;
        best.ended = ended;
        best.created_ns = header.created_realtime_ns;
        best.bytes = AllocatedBytes(dir_fd, name);
        memcpy(best.name, name, strlen(name) + 1);
      });
    }
    if (!best.found) {
      result = EDQUOT;
      break;
    }
    // ENOENT: someone (the collector) deleted it first; it is gone anyway.
    unlinkat(dir_fd, best.name, 0);
    total = total > best.bytes ? total - best.bytes : 0;
  }
  close(dir_fd);
  return result;
}

}  // namespace emitter
}  // namespace ringprof
