#include "ringfile/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "ringfile/clock.h"

// The payload words are stored as little-endian 64-bit integers assembled
// from the record's bytes; the format is little-endian (FORMAT.md).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the ring file format is little-endian");

namespace ringprof {
namespace ringfile {
namespace {

// PrefetchNextSlot's reach: an allocation sample with a 32-frame stack.
constexpr uint32_t kPrefetchBytes = 384;

// RingWriter::reserved_ of a ring whose slots are all backed.
constexpr uint64_t kAllReserved = ~uint64_t{0};

// Linux 5.14's MADV_POPULATE_WRITE (older headers lack it): write-faults
// the range in, and fails (EFAULT, ENOMEM) where a write would raise
// SIGBUS; EINVAL where the kernel does not know it.
constexpr int kMadvPopulateWrite = 23;

// madvise(MADV_POPULATE_WRITE) on the pages covering [begin, end): 0 or the
// errno value; errno itself is kept (this may run inside malloc or a signal
// handler).
int PopulateWrite(const uint8_t* begin, const uint8_t* end,
                  uintptr_t page_size) {
  const uintptr_t from = reinterpret_cast<uintptr_t>(begin) & ~(page_size - 1);
  const uintptr_t to =
      (reinterpret_cast<uintptr_t>(end) + page_size - 1) & ~(page_size - 1);
  const int saved_errno = errno;
  const int err = syscall(SYS_madvise, from, to - from, kMadvPopulateWrite) == 0
                      ? 0
                      : errno;
  errno = saved_errno;
  return err;
}

// Turns off the kernel's read-around for the mapping of a sparse ring file:
// otherwise the first fault on it (the header's) and each chunk's
// MADV_POPULATE_WRITE make a disk filesystem (ext4: the device's
// read_ahead_kb, often MiBs) allocate and zero page cache for much of the
// file, holes included, which a process that writes a few hundred samples
// pays for in full (~3 ms per ring file with an 8 MiB window). Each fault
// then brings in its own page only. Only advice: a kernel that ignores it
// changes nothing else.
void NoReadAround(void* base, uint64_t size) {
  const int saved_errno = errno;
  madvise(base, size, MADV_RANDOM);
  errno = saved_errno;
}

// Copies a C string into a fixed NUL-padded field, truncating; the field is
// always NUL-terminated.
void CopyPadded(char* field, size_t field_size, const char* value) {
  if (value == nullptr) return;
  size_t n = strnlen(value, field_size - 1);
  memcpy(field, value, n);
}

uint32_t RoundUpToPowerOfTwo(uint32_t v) {
  uint32_t p = 1;
  while (p < v && p < kMaxSlotsPerRing) p <<= 1;
  return p;
}

// Stores a byte stream into consecutive 8-byte words of a slot with relaxed
// atomic stores, so that a reader copying the slot concurrently performs
// well-defined (racy but atomic) loads. The last word is zero-padded.
class WordStreamWriter {
 public:
  explicit WordStreamWriter(uint64_t* words) : words_(words) {}

  void Append(const uint8_t* bytes, size_t size) {
    while (pending_bytes_ != 0 && size > 0) {
      AppendByte(*bytes++);
      --size;
    }
    while (size >= 8) {
      uint64_t word;
      memcpy(&word, bytes, 8);
      Store(word);
      bytes += 8;
      size -= 8;
    }
    while (size > 0) {
      AppendByte(*bytes++);
      --size;
    }
  }

  void Finish() {
    if (pending_bytes_ != 0) Store(pending_);
  }

 private:
  void AppendByte(uint8_t byte) {
    pending_ |= uint64_t{byte} << (8 * pending_bytes_);
    if (++pending_bytes_ == 8) {
      Store(pending_);
      pending_ = 0;
      pending_bytes_ = 0;
    }
  }
  void Store(uint64_t word) {
    __atomic_store_n(&words_[next_word_++], word, __ATOMIC_RELAXED);
  }

  uint64_t* words_;
  size_t next_word_ = 0;
  uint64_t pending_ = 0;
  unsigned pending_bytes_ = 0;
};

// MakeFile's "no unnamed file here": O_TMPFILE unsupported by the
// filesystem, the directory path too long for the stack buffer, or no /proc
// to link through, the link refused. Not an errno value.
constexpr int kUnnamedUnsupported = -1;

// An unnamed file in `path`'s directory (O_TMPFILE), or -1.
int OpenUnnamed(const char* path, uint32_t mode) {
  char dir[1024];
  const char* slash = strrchr(path, '/');
  if (slash == nullptr) return open(".", O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
  const size_t n = slash == path ? 1 : static_cast<size_t>(slash - path);
  if (n >= sizeof(dir)) return -1;
  memcpy(dir, path, n);
  dir[n] = '\0';
  return open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
}

// Gives the unnamed file `fd` its name. linkat never replaces or follows
// anything at `path` (EEXIST), like O_CREAT|O_EXCL|O_NOFOLLOW.
int LinkUnnamed(int fd, const char* path) {
  char proc_path[32] = "/proc/self/fd/";
  char digits[12];
  int n = 0;
  unsigned value = static_cast<unsigned>(fd);
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  char* p = proc_path + strlen(proc_path);
  while (n > 0) *p++ = digits[--n];
  *p = '\0';
  if (linkat(AT_FDCWD, proc_path, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0) {
    return 0;
  }
  // A taken name is final; anything else (no /proc, a filesystem or
  // sandbox refusing the link) leaves the named way to try.
  return errno == EEXIST ? EEXIST : kUnnamedUnsupported;
}

// The header of a fresh file (zero-filled: every counter and slot sequence
// already reads 0); `ready` last.
void InitHeader(uint8_t* base, uint64_t file_size, uint32_t slots_per_ring,
                const WriterOptions& options) {
  FileHeader* header = reinterpret_cast<FileHeader*>(base);
  memcpy(header->magic, kMagic, sizeof(kMagic));
  header->version = kFormatVersion;
  header->header_size = kHeaderSize;
  header->file_size = file_size;
  header->ring_count = options.ring_count;
  header->slots_per_ring = slots_per_ring;
  header->slot_size = options.slot_size;
  header->control_offset = kHeaderSize;
  header->slots_offset = SlotsOffsetFor(options.ring_count);
  header->pid =
      options.pid != 0 ? options.pid : static_cast<uint32_t>(getpid());
  header->process_start_ticks = options.process_start_ticks;
  header->created_monotonic_ns = ClockNs(CLOCK_MONOTONIC);
  header->created_realtime_ns = ClockNs(CLOCK_REALTIME);
  CopyPadded(header->service_name, kServiceNameSize, options.service_name);
  CopyPadded(header->executable, kExecutableSize, options.executable);
  header->ready.store(kReadyMagic, std::memory_order_release);
}

// Reserves the blocks of a file sized (sparse) to `file_size` and mapped at
// `base`: the header's, and with a kernel that has MADV_POPULATE_WRITE
// (probed on the header's pages) and a filesystem with room for the whole
// file now, nothing more, which *all_reserved = false says; else the whole
// file (so that a disk too full for it fails creation, as without
// reserve_as_written). 0 or an errno value.
int ReserveHeader(int fd, uint64_t header_size, uint64_t file_size,
                  const uint8_t* base, bool* all_reserved) {
  const int err = posix_fallocate(fd, 0, static_cast<off_t>(header_size));
  if (err != 0) return err;
  struct statfs fs;
  // f_blocks 0: no limit (a tmpfs mounted without size=).
  const bool room =
      fstatfs(fd, &fs) != 0 || fs.f_blocks == 0 ||
      static_cast<uint64_t>(fs.f_bavail) * fs.f_bsize >= file_size;
  if (room && PopulateWrite(base, base + header_size, getpagesize()) == 0) {
    *all_reserved = false;
    return 0;
  }
  return posix_fallocate(fd, 0, static_cast<off_t>(file_size));
}

// Creates, sizes, maps and initialises the file; *base on success and
// whether every block is reserved. Returns 0, an errno value, or
// kUnnamedUnsupported (nothing left behind).
int MakeFile(const WriterOptions& options, uint64_t file_size,
             uint32_t slots_per_ring, bool unnamed, void** base_out,
             bool* all_reserved) {
  const int fd = unnamed
                     ? OpenUnnamed(options.path, options.mode)
                     : open(options.path,
                            O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                            options.mode);
  if (fd < 0) return unnamed ? kUnnamedUnsupported : errno;
  // Reserve the blocks now (all, or the header's and then the slots' as
  // they are reached: Reserve): on a full disk or tmpfs this fails here or
  // in Reserve, never as SIGBUS in the middle of an append.
  const bool lazily = options.reserve_as_written && !options.populate;
  *all_reserved = true;
  int err = 0;
  if (!lazily) {
    err = posix_fallocate(fd, 0, static_cast<off_t>(file_size));
  } else if (ftruncate(fd, static_cast<off_t>(file_size)) != 0) {
    err = errno;
  }
  void* base = MAP_FAILED;
  if (err == 0) {
    // MAP_POPULATE (WriterOptions::populate): fault every page in now, so
    // that no append (inside malloc, or in a signal handler) ever enters the
    // kernel for a page fault; under gVisor a fault costs microseconds.
    base = mmap(nullptr, file_size, PROT_READ | PROT_WRITE,
                MAP_SHARED | (options.populate ? MAP_POPULATE : 0), fd, 0);
    if (base == MAP_FAILED) err = errno;
  }
  if (err == 0 && lazily) {
    NoReadAround(base, file_size);
    err = ReserveHeader(fd, SlotsOffsetFor(options.ring_count), file_size,
                        static_cast<const uint8_t*>(base), all_reserved);
  }
  if (err == 0) {
    InitHeader(static_cast<uint8_t*>(base), file_size, slots_per_ring, options);
    // Published complete: readers never see it half-made.
    if (unnamed) err = LinkUnnamed(fd, options.path);
  }
  close(fd);
  if (err != 0) {
    if (base != MAP_FAILED) munmap(base, file_size);
    if (!unnamed) unlink(options.path);
    return err;
  }
  *base_out = base;
  return 0;
}

}  // namespace

RingWriter::~RingWriter() { Close(); }

int RingWriter::Create(const WriterOptions& options) {
  if (base_ != nullptr) return EBUSY;
  if (options.path == nullptr || options.ring_count == 0 ||
      options.ring_count > kMaxRings || options.slot_size < kMinSlotSize ||
      options.slot_size > kMaxSlotSize ||
      options.slot_size % kSlotAlignment != 0 ||
      options.slots_per_ring > kMaxSlotsPerRing) {
    return EINVAL;
  }
  uint32_t slots_per_ring = RoundUpToPowerOfTwo(
      options.slots_per_ring < kMinSlotsPerRing ? kMinSlotsPerRing
                                                : options.slots_per_ring);
  uint64_t file_size =
      FileSizeFor(options.ring_count, slots_per_ring, options.slot_size);
  if (file_size > kMaxFileSize) return EFBIG;

  void* base = nullptr;
  bool all_reserved = true;
  int err = MakeFile(options, file_size, slots_per_ring, /*unnamed=*/true,
                     &base, &all_reserved);
  if (err == kUnnamedUnsupported) {
    err = MakeFile(options, file_size, slots_per_ring, /*unnamed=*/false, &base,
                   &all_reserved);
  }
  if (err != 0) return err;

  base_ = static_cast<uint8_t*>(base);
  size_ = file_size;
  header_ = reinterpret_cast<FileHeader*>(base_);
  control_ = reinterpret_cast<RingControl*>(base_ + kHeaderSize);
  slots_ = base_ + SlotsOffsetFor(options.ring_count);
  ring_count_ = options.ring_count;
  slots_per_ring_ = slots_per_ring;
  slot_size_ = options.slot_size;
  page_size_ = static_cast<uint32_t>(getpagesize());
  for (std::atomic<uint64_t>& reserved : reserved_) {
    reserved.store(all_reserved ? kAllReserved : 0, std::memory_order_relaxed);
  }
  return 0;
}

bool RingWriter::Reserve(uint32_t ring, uint64_t index) {
  const uint64_t position = index & (slots_per_ring_ - 1);
  uint64_t reserved = reserved_[ring].load(std::memory_order_acquire);
  if (position < reserved) return true;
  // From the first slot not yet backed to the end of the chunk holding
  // `position`: below the mark every slot stays backed.
  const uint64_t chunk_slots =
      kReserveChunkBytes / slot_size_ > 0 ? kReserveChunkBytes / slot_size_ : 1;
  uint64_t end = position + chunk_slots;
  if (end > slots_per_ring_) end = slots_per_ring_;
  const uint8_t* ring_base =
      slots_ + uint64_t{ring} * slots_per_ring_ * slot_size_;
  if (PopulateWrite(ring_base + reserved * slot_size_,
                    ring_base + end * slot_size_, page_size_) != 0) {
    return false;
  }
  const uint64_t mark = end == slots_per_ring_ ? kAllReserved : end;
  while (reserved < mark && !reserved_[ring].compare_exchange_weak(
                                reserved, mark, std::memory_order_release,
                                std::memory_order_acquire)) {
  }
  return true;
}

bool RingWriter::TryAppend(RecordType type, const void* head,
                           uint32_t head_size, const void* tail,
                           uint32_t tail_size, uint32_t shard_hint) {
  if (base_ == nullptr) return false;
  const uint32_t ring = shard_hint % ring_count_;
  RingControl& control = control_[ring];
  const uint64_t payload_size = uint64_t{head_size} + tail_size;
  if (payload_size > slot_size_ - kSlotHeaderSize) {
    control.dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }

  const uint64_t index =
      control.next_index.fetch_add(1, std::memory_order_relaxed);
  // Given up, like a busy slot, when its blocks cannot be had.
  if (index >= reserved_[ring].load(std::memory_order_acquire) &&
      !Reserve(ring, index)) {
    return false;
  }
  uint8_t* slot_base = Slot(ring, index);
  SlotHeader* slot = reinterpret_cast<SlotHeader*>(slot_base);

  // Claim the slot: only from a committed (even) older lap. An odd value is
  // a writer still busy with an older lap (stalled, interrupted or dead); a
  // newer value means a later lap already took the slot. Either way this
  // record is given up: the reader sees the gap at `index` and counts it.
  const uint64_t writing = kWritingSequence(index);
  uint64_t seen = slot->sequence.load(std::memory_order_relaxed);
  do {
    if ((seen & 1) != 0 || seen >= writing) return false;
  } while (!slot->sequence.compare_exchange_weak(
      seen, writing, std::memory_order_relaxed, std::memory_order_relaxed));
  // Orders the odd sequence before the payload stores (seqlock writer).
  std::atomic_thread_fence(std::memory_order_release);

  uint64_t* words = reinterpret_cast<uint64_t*>(slot_base + sizeof(uint64_t));
  WordStreamWriter stream(words);
  const uint64_t type_and_size =
      static_cast<uint64_t>(type) | (payload_size << 32);
  stream.Append(reinterpret_cast<const uint8_t*>(&type_and_size),
                sizeof(type_and_size));
  if (head_size != 0) {
    stream.Append(static_cast<const uint8_t*>(head), head_size);
  }
  if (tail_size != 0) {
    stream.Append(static_cast<const uint8_t*>(tail), tail_size);
  }
  stream.Finish();

  slot->sequence.store(kCommittedSequence(index), std::memory_order_release);
  return true;
}

void RingWriter::PrefetchNextSlot(uint32_t shard_hint) const {
  if (base_ == nullptr) return;
  const uint32_t ring = shard_hint % ring_count_;
  const uint8_t* slot_base =
      Slot(ring, control_[ring].next_index.load(std::memory_order_relaxed));
  const uint32_t bytes =
      slot_size_ < kPrefetchBytes ? slot_size_ : kPrefetchBytes;
  for (uint32_t offset = 0; offset < bytes; offset += 64) {
    __builtin_prefetch(slot_base + offset, 1, 3);
  }
}

void RingWriter::MarkProcessEnded() {
  if (base_ == nullptr) return;
  header_->flags.fetch_or(kFlagProcessEnded, std::memory_order_release);
}

void RingWriter::Close() {
  if (base_ == nullptr) return;
  munmap(base_, size_);
  base_ = nullptr;
  size_ = 0;
  header_ = nullptr;
  control_ = nullptr;
  slots_ = nullptr;
}

uint32_t RingWriter::max_payload_size() const {
  return base_ == nullptr ? 0 : slot_size_ - kSlotHeaderSize;
}

}  // namespace ringfile
}  // namespace ringprof
