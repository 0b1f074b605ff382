// Self-checking records for the stress and crash tests: the payload of
// record (thread, seq) is a deterministic function of the pair, and carries
// a checksum, so a torn or mixed-up copy cannot pass for a valid record.
#ifndef RINGPROF_RINGFILE_STRESS_RECORD_H_
#define RINGPROF_RINGFILE_STRESS_RECORD_H_

#include <cstdint>

#include "ringfile/reader.h"
#include "ringfile/writer.h"

namespace ringprof {
namespace ringfile {
namespace testing {

// Appends record (thread, seq) with between 0 and max_frames frames to ring
// shard `thread`. Returns TryAppend's result.
bool AppendStressRecord(RingWriter& writer, uint32_t thread, uint64_t seq,
                        uint32_t max_frames);

// Checks a delivered record: an AllocSample that decodes, whose frames and
// checksum are exactly those of (thread, seq) as read from its fields.
// Returns false for anything else (torn, mixed, corrupt).
bool CheckStressRecord(const RecordView& record, uint32_t* thread,
                       uint64_t* seq);

}  // namespace testing
}  // namespace ringfile
}  // namespace ringprof

#endif  // RINGPROF_RINGFILE_STRESS_RECORD_H_
