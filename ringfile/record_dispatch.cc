#include "ringfile/record_dispatch.h"

#include "absl/strings/str_cat.h"

namespace ringprof {
namespace ringfile {
namespace {

// Decodes with `decode` and calls `on` with the view, or OnMalformed.
template <typename Decode, typename On>
absl::Status Deliver(const RecordView& record, RecordHandler& handler,
                     Decode decode, On on) {
  auto decoded = decode(record);
  if (!decoded.ok()) {
    handler.OnMalformed(record, decoded.status());
    return decoded.status();
  }
  (handler.*on)(record, *decoded);
  return absl::OkStatus();
}

}  // namespace

absl::Status DispatchRecord(const RecordView& record, RecordHandler& handler) {
  using H = RecordHandler;
  switch (record.type) {
    case RecordType::kAllocSample:
      return Deliver(record, handler, DecodeAllocSample, &H::OnAllocSample);
    case RecordType::kFreeSampled:
      return Deliver(record, handler, DecodeFreeSampled, &H::OnFreeSampled);
    case RecordType::kCpuSample:
      return Deliver(record, handler, DecodeCpuSample, &H::OnCpuSample);
    case RecordType::kModuleMap:
      return Deliver(record, handler, DecodeModuleMap, &H::OnModuleMap);
    case RecordType::kModuleUnmap:
      return Deliver(record, handler, DecodeModuleUnmap, &H::OnModuleUnmap);
    case RecordType::kThreadName:
      return Deliver(record, handler, DecodeThreadName, &H::OnThreadName);
    case RecordType::kLabel:
      return Deliver(record, handler, DecodeLabel, &H::OnLabel);
    case RecordType::kLostSamples:
      return Deliver(record, handler, DecodeLostSamples, &H::OnLostSamples);
    case RecordType::kProcessEnd:
      return Deliver(record, handler, DecodeProcessEnd, &H::OnProcessEnd);
    case RecordType::kThreadExit:
      return Deliver(record, handler, DecodeThreadExit, &H::OnThreadExit);
    case RecordType::kLiveSweepEnd:
      return Deliver(record, handler, DecodeLiveSweepEnd, &H::OnLiveSweepEnd);
    case RecordType::kLiveSample:
      return Deliver(record, handler, DecodeLiveSample, &H::OnLiveSample);
    case RecordType::kTagSet:
      return Deliver(record, handler, DecodeTagSet, &H::OnTagSet);
    case RecordType::kWaitSample:
      return Deliver(record, handler, DecodeWaitSample, &H::OnWaitSample);
    case RecordType::kEnvironmentFact:
      return Deliver(record, handler, DecodeEnvironmentFact,
                     &H::OnEnvironmentFact);
  }
  handler.OnUnknownType(record);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown record type ", static_cast<uint32_t>(record.type)));
}

}  // namespace ringfile
}  // namespace ringprof
