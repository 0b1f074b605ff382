// Typed record dispatch: DispatchRecord decodes one delivered record and
// hands it, decoded, to the RecordHandler method of its type. It is the one
// switch over RecordType in the tree: a new record type is a Decode
// function (reader.h), a method here and a case in DispatchRecord.
//
// A payload that does not decode goes to OnMalformed (with the decoder's
// status naming the type and the field), never to the type's method, so a
// handler sees each malformed record exactly once and counts it there.
//
// Thread-compatible; allocates only what the decoders allocate (none beyond
// a TagSetView's inline storage). The decoded views point into
// RecordView::payload: valid only during the call.
#ifndef RINGPROF_RINGFILE_RECORD_DISPATCH_H_
#define RINGPROF_RINGFILE_RECORD_DISPATCH_H_

#include "absl/status/status.h"
#include "ringfile/format.h"
#include "ringfile/reader.h"

namespace ringprof {
namespace ringfile {

// One method per record type; each default ignores the record. `record`
// carries where the record was (ring, index) besides its raw payload.
class RecordHandler {
 public:
  virtual ~RecordHandler() = default;

  virtual void OnAllocSample(const RecordView& record,
                             const AllocSampleView& sample) {}
  virtual void OnFreeSampled(const RecordView& record,
                             const FreeSampled& free_sampled) {}
  virtual void OnCpuSample(const RecordView& record,
                           const CpuSampleView& sample) {}
  virtual void OnModuleMap(const RecordView& record, const ModuleMapView& map) {
  }
  virtual void OnModuleUnmap(const RecordView& record,
                             const ModuleUnmap& unmap) {}
  virtual void OnThreadName(const RecordView& record,
                            const ThreadNameView& name) {}
  virtual void OnLabel(const RecordView& record, const LabelView& label) {}
  virtual void OnLostSamples(const RecordView& record,
                             const LostSamples& lost) {}
  virtual void OnProcessEnd(const RecordView& record, const ProcessEnd& end) {}
  virtual void OnThreadExit(const RecordView& record,
                            const ThreadExit& thread_exit) {}
  virtual void OnLiveSweepEnd(const RecordView& record,
                              const LiveSweepEnd& end) {}
  virtual void OnLiveSample(const RecordView& record,
                            const LiveSampleView& sample) {}
  virtual void OnTagSet(const RecordView& record, const TagSetView& tag_set) {}
  virtual void OnWaitSample(const RecordView& record,
                            const WaitSampleView& sample) {}
  virtual void OnEnvironmentFact(const RecordView& record,
                                 const EnvironmentFactView& fact) {}

  // The record's payload did not decode; `status` (InvalidArgument) names
  // the record type and the bad field.
  virtual void OnMalformed(const RecordView& record,
                           const absl::Status& status) {}
  // A type this code does not know. RingReader skips (and counts) those
  // itself; only a hand-made RecordView gets here.
  virtual void OnUnknownType(const RecordView& record) {}
};

// Decodes `record` and calls the handler's method for its type, or
// OnMalformed / OnUnknownType. Returns the decoder's status (OK for a
// record that reached its method; InvalidArgument for malformed, and for an
// unknown type).
absl::Status DispatchRecord(const RecordView& record, RecordHandler& handler);

}  // namespace ringfile
}  // namespace ringprof

#endif  // RINGPROF_RINGFILE_RECORD_DISPATCH_H_
