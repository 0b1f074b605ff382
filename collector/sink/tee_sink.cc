#include "collector/sink/tee_sink.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "collector/base/log.h"

namespace ringprof {
namespace collector {

void TeeSink::Submit(WindowProfile profile) {
  if (!local_dir_.empty()) {
    const absl::TimeZone utc = absl::UTCTimeZone();
    LogInfo(absl::StrCat(
        "pid ", profile.pid, " (", profile.service_name,
        "): ", KindName(profile.kind), " ",
        absl::FormatTime("%H:%M:%S", absl::FromUnixNanos(profile.from_unix_ns),
                         utc),
        "-",
        absl::FormatTime("%H:%M:%S", absl::FromUnixNanos(profile.until_unix_ns),
                         utc),
        " UTC, ", profile.profile->ByteSizeLong(), " bytes -> ", local_dir_,
        "/"));
  }
  for (size_t i = 0; i + 1 < sinks_.size(); ++i) sinks_[i]->Submit(profile);
  if (!sinks_.empty()) sinks_.back()->Submit(std::move(profile));
}

absl::Status TeeSink::Flush(int64_t deadline) {
  absl::Status status;
  for (ProfileSink* sink : sinks_) status.Update(sink->Flush(deadline));
  return status;
}

}  // namespace collector
}  // namespace ringprof
