// RingWriter: creates a ring file and appends records to it.
//
// Thread-safety: TryAppend may be called concurrently from any number of
// threads of the creating process, from inside malloc, and from signal
// handlers (also one that interrupted a TryAppend on the same thread).
// TryAppend is lock-free and allocation-free; it touches only the mapped
// file, and makes a system call only with WriterOptions::reserve_as_written,
// once per chunk of a ring it first reaches (errno kept). It never blocks: when
// the reader falls behind, the oldest records are overwritten (flight recorder)
// and the reader counts the gap; when a slot is still being written by a
// stalled writer, the new record is dropped and likewise shows up as a gap
// (FORMAT.md, "Loss").
//
// Create/Close are not signal-safe and may make syscalls; call them at
// start-up and shut-down. This header depends only on libc and format.h, so
// the LD_PRELOAD emitter can use it without pulling in other libraries.
#ifndef RINGPROF_RINGFILE_WRITER_H_
#define RINGPROF_RINGFILE_WRITER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "ringfile/format.h"

namespace ringprof {
namespace ringfile {

struct WriterOptions {
  const char* path = nullptr;  // created with O_CREAT|O_EXCL|O_NOFOLLOW
  uint32_t mode = 0600;
  uint32_t ring_count = 4;         // shards; a thread writes to tid % count
  uint32_t slots_per_ring = 2048;  // rounded up to a power of two
  uint32_t slot_size = 1152;       // fits a 128-frame sample
  const char* service_name = "";
  const char* executable = "";
  uint32_t pid = 0;
  uint64_t process_start_ticks = 0;
  // MAP_POPULATE: every page faulted in at creation, so that no append ever
  // takes a page fault (where faults are expensive: gVisor). Without it,
  // creation costs a fraction (the 8 MiB default: ~1.7 ms instead of ~5 ms
  // here, and 0.6 ms less to unmap) and the first append to each page
  // faults it in (~1 us natively; only the pages the process uses).
  bool populate = true;
  // Blocks reserved as the appends first reach them rather than all at
  // creation: the header's at creation (posix_fallocate), then each ring's
  // slots kReserveChunkBytes at a time (madvise MADV_POPULATE_WRITE, which
  // fails where a write would raise SIGBUS: the record is then given up, a
  // gap the reader counts). Creation then costs a fraction of the whole
  // file's reservation (8 MiB on tmpfs: ~3 ms, here), which a short-lived
  // process that samples a little would pay for nothing. The whole file is
  // reserved at creation as without it where the kernel lacks
  // MADV_POPULATE_WRITE (Linux < 5.14, gVisor) and where the filesystem has
  // no room for it now (so that creation fails on a full disk as before).
  // The mapping is advised MADV_RANDOM, so that on a disk filesystem a
  // fault brings in its own page and not the device's read-ahead window
  // of the sparse file (8 MiB of zeroed page cache on this machine's ext4,
  // ~3 ms per ring file). Ignored with `populate`.
  bool reserve_as_written = false;
};

// The span of slots reserve_as_written reserves at a time (rounded out to
// whole pages and slots).
inline constexpr uint64_t kReserveChunkBytes = 64 * 1024;

class RingWriter {
 public:
  RingWriter() = default;
  RingWriter(const RingWriter&) = delete;
  RingWriter& operator=(const RingWriter&) = delete;
  ~RingWriter();

  // Creates, sizes (posix_fallocate, so a full disk fails here and never
  // later as SIGBUS; with reserve_as_written only the header, the slots as
  // they are reached), maps (with options.populate, so that appends take no
  // page faults) and initialises the file; writes `ready` last.
  // Returns 0 or an errno value; on failure nothing is left behind.
  int Create(const WriterOptions& options);

  // Appends one record: `head` then `tail` bytes as the payload. Returns
  // true when committed. Records larger than a slot are refused (counted in
  // RingControl::dropped). `shard_hint` picks the ring (the tid is a good one).
  bool TryAppend(RecordType type, const void* head, uint32_t head_size,
                 const void* tail, uint32_t tail_size, uint32_t shard_hint);

  // Starts loading the slot the next TryAppend with `shard_hint` will
  // claim into the cache, so that an append made a little later (after a
  // stack walk) does not wait for memory. Only a hint: changes nothing in
  // the file, and another writer may take that slot first.
  void PrefetchNextSlot(uint32_t shard_hint) const;

  // Marks the header's kFlagProcessEnded (after appending kProcessEnd).
  void MarkProcessEnded();

  // Unmaps and closes; the file stays for the reader.
  void Close();

  bool ok() const { return base_ != nullptr; }
  uint32_t max_payload_size() const;

 private:
  // Where record `index` of ring `ring` goes.
  uint8_t* Slot(uint32_t ring, uint64_t index) const {
    return slots_ + (uint64_t{ring} * slots_per_ring_ +
                     (index & (slots_per_ring_ - 1))) *
                        slot_size_;
  }

  // Backs slots [reserved_[ring], index] of `ring` and the rest of their
  // chunk; false when the blocks cannot be had (the record is given up).
  bool Reserve(uint32_t ring, uint64_t index);

  uint8_t* base_ = nullptr;
  size_t size_ = 0;
  FileHeader* header_ = nullptr;
  RingControl* control_ = nullptr;
  uint8_t* slots_ = nullptr;
  uint32_t ring_count_ = 0;
  uint32_t slots_per_ring_ = 0;
  uint32_t slot_size_ = 0;
  uint32_t page_size_ = 4096;
  // Per ring, the slots below this are backed (kAllReserved: all of them).
  std::atomic<uint64_t> reserved_[kMaxRings] = {};
};

}  // namespace ringfile
}  // namespace ringprof

#endif  // RINGPROF_RINGFILE_WRITER_H_
