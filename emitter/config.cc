#include "emitter/config.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

#include "emitter/plain_string.h"
#include "emitter/stderr_line.h"

namespace ringprof {
namespace emitter {
namespace {

// A bounded, allocation-free line under construction.
void ReportBad(ReportLine report, const char* name, const char* value,
               const char* expected, const char* fallback) {
  StderrLine line;
  line.Add("ringprof: ignoring ")
      .Add(name)
      .Add("='")
      .Add(value)
      .Add("' (expected ")
      .Add(expected)
      .Add("); using ")
      .Add(fallback);
  report(line.Finish());
}

// Parses a decimal (base 10) or octal (base 8) unsigned number made only of
// digits; false on empty input, stray characters or overflow past `max`.
bool ParseUnsigned(const char* s, int base, uint64_t max, uint64_t* out) {
  if (s == nullptr || *s == '\0') return false;
  uint64_t value = 0;
  for (; *s != '\0'; ++s) {
    if (*s < '0' || *s >= '0' + base) return false;
    const uint64_t digit = static_cast<uint64_t>(*s - '0');
    if (value > (max - digit) / base) return false;
    value = value * base + digit;
  }
  *out = value;
  return true;
}

void FormatUnsigned(uint64_t value, int base, char* buf, size_t size) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % base);
    value /= base;
  } while (value != 0 && n < 23);
  size_t pos = 0;
  if (base == 8 && pos + 1 < size) buf[pos++] = '0';
  while (n > 0 && pos + 1 < size) buf[pos++] = digits[--n];
  buf[pos] = '\0';
}

void ReadRange(EnvLookup lookup, ReportLine report, const char* name,
               uint64_t min, uint64_t max, const char* expected,
               int64_t* value) {
  const char* text = lookup(name);
  if (text == nullptr) return;
  uint64_t parsed = 0;
  if (ParseUnsigned(text, 10, max, &parsed) && parsed >= min) {
    *value = static_cast<int64_t>(parsed);
    return;
  }
  char fallback[24];
  FormatUnsigned(static_cast<uint64_t>(*value), 10, fallback, sizeof(fallback));
  ReportBad(report, name, text, expected, fallback);
}

void ReadRange(EnvLookup lookup, ReportLine report, const char* name,
               uint64_t min, uint64_t max, const char* expected, int* value) {
  int64_t wide = *value;
  ReadRange(lookup, report, name, min, max, expected, &wide);
  *value = static_cast<int>(wide);
}

// Copies a service name, keeping only characters that are safe in a file
// name component; false when nothing usable is left.
bool CopyServiceName(const char* from, char* to, size_t size) {
  size_t n = 0;
  for (; *from != '\0' && n + 1 < size; ++from) {
    const char c = *from;
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                      c == '.';
    to[n++] = safe ? c : '_';
  }
  to[n] = '\0';
  // "." and ".." are not names.
  return n > 0 && strcmp(to, ".") != 0 && strcmp(to, "..") != 0;
}

const char* Basename(const char* path) { return AfterLastSlash(path); }

// Parses an optionally signed decimal integer made only of digits.
bool ParseInt(const char* s, int64_t* out) {
  bool negative = false;
  if (*s == '-' || *s == '+') negative = *s++ == '-';
  if (*s == '\0') return false;
  int64_t value = 0;
  for (; *s != '\0'; ++s) {
    if (*s < '0' || *s > '9' || value > 100000000) return false;
    value = value * 10 + (*s - '0');
  }
  *out = negative ? -value : value;
  return true;
}

// Offset from SIGRTMAX of the default signal. Applications that use
// real-time signals conventionally allocate them upwards from SIGRTMIN
// (glibc's own two sit just below it), so the top of the range is the least
// likely to collide; the sampler's collision check covers the rest.
constexpr int kDefaultSignalBelowRtMax = 4;
constexpr int kMaxCpuHz = 1000;

int ReadCpuHz(EnvLookup lookup, ReportLine report, int fallback) {
  const char* value = lookup("RINGPROF_CPU_HZ");
  if (value == nullptr || *value == '\0') return fallback;
  int64_t hz = 0;
  if (!ParseInt(value, &hz) || hz < 0 || hz > kMaxCpuHz) {
    char text[24];
    FormatUnsigned(static_cast<uint64_t>(fallback), 10, text, sizeof(text));
    ReportBad(report, "RINGPROF_CPU_HZ", value, "0 (off) to 1000", text);
    return fallback;
  }
  return static_cast<int>(hz);
}

int ReadCpuSignal(EnvLookup lookup, ReportLine report) {
  const int fallback = SIGRTMAX - kDefaultSignalBelowRtMax;
  const char* value = lookup("RINGPROF_CPU_SIGNAL");
  if (value == nullptr || *value == '\0') return fallback;
  const char* s = value;
  if (strncmp(s, "SIG", 3) == 0) s += 3;
  int64_t signo = -1;
  int64_t offset = 0;
  if (strncmp(s, "RTMIN", 5) == 0) {
    signo = SIGRTMIN;
    if (s[5] != '\0' && !ParseInt(s + 5, &offset)) signo = -1;
  } else if (strncmp(s, "RTMAX", 5) == 0) {
    signo = SIGRTMAX;
    if (s[5] != '\0' && !ParseInt(s + 5, &offset)) signo = -1;
  } else if (!ParseInt(s, &signo)) {
    signo = -1;
  }
  signo += offset;
  if (signo < SIGRTMIN || signo > SIGRTMAX) {
    char text[24];
    FormatUnsigned(static_cast<uint64_t>(fallback), 10, text, sizeof(text));
    ReportBad(report, "RINGPROF_CPU_SIGNAL", value,
              "a real-time signal, e.g. SIGRTMAX-4 or 60", text);
    return fallback;
  }
  return static_cast<int>(signo);
}

// A switch: 1/true/yes or 0/false/no (empty: the default, `*value`).
void LoadSwitch(EnvLookup lookup, ReportLine report, const char* name,
                bool* value) {
  const char* text = lookup(name);
  if (text == nullptr || text[0] == '\0') return;
  if (strcmp(text, "1") == 0 || strcmp(text, "true") == 0 ||
      strcmp(text, "yes") == 0) {
    *value = true;
  } else if (strcmp(text, "0") == 0 || strcmp(text, "false") == 0 ||
             strcmp(text, "no") == 0) {
    *value = false;
  } else {
    ReportBad(report, name, text, "1/true/yes or 0/false/no",
              *value ? "1 (on)" : "0 (off)");
  }
}

// The RINGPROF_ entries of the environment (LookupRingprofEnv); more than
// kMaxRingprofEntries: the rest are looked up with getenv.
constexpr int kMaxRingprofEntries = 24;
struct RingprofEntries {
  bool scanned;
  bool overflowed;
  int count;
  const char* entries[kMaxRingprofEntries];
};
RingprofEntries g_ringprof_env;

constexpr char kPrefix[] = "RINGPROF_";
constexpr size_t kPrefixSize = sizeof(kPrefix) - 1;

// The value of `entry` ("NAME=value") if its name is `name`, else null.
const char* ValueIfNamed(const char* entry, const char* name) {
  while (*name != '\0' && *entry == *name) {
    ++entry;
    ++name;
  }
  return *name == '\0' && *entry == '=' ? entry + 1 : nullptr;
}

void ScanEnvironment() {
  RingprofEntries& env = g_ringprof_env;
  env.scanned = true;
  env.overflowed = false;
  env.count = 0;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (!HasPrefix(*entry, kPrefix, kPrefixSize)) continue;
    if (env.count == kMaxRingprofEntries) {
      env.overflowed = true;
      return;
    }
    env.entries[env.count++] = *entry;
  }
}

}  // namespace

void RefreshRingprofEnv() { ScanEnvironment(); }

const char* LookupRingprofEnv(const char* name) {
  if (!g_ringprof_env.scanned) ScanEnvironment();
  if (g_ringprof_env.overflowed || !HasPrefix(name, kPrefix, kPrefixSize)) {
    return getenv(name);
  }
  for (int i = 0; i < g_ringprof_env.count; ++i) {
    if (const char* value = ValueIfNamed(g_ringprof_env.entries[i], name)) {
      return value;
    }
  }
  return nullptr;
}

void ReportToStderr(const char* line) {
  size_t left = strlen(line);
  while (left > 0) {
    const ssize_t n = write(STDERR_FILENO, line, left);
    if (n <= 0) return;
    line += n;
    left -= static_cast<size_t>(n);
  }
}

bool LogToStderrInEnvironment(EnvLookup lookup) {
  const char* text = lookup("RINGPROF_LOG");
  return text != nullptr && strcmp(text, "stderr") == 0;
}

bool DisabledInEnvironment(EnvLookup lookup) {
  const char* text = lookup("RINGPROF_DISABLE");
  return text != nullptr &&
         (strcmp(text, "1") == 0 || strcmp(text, "true") == 0 ||
          strcmp(text, "yes") == 0);
}

void LoadConfig(EnvLookup lookup, ReportLine report,
                const char* executable_path, Config* config) {
  *config = Config();

  if (const char* text = lookup("RINGPROF_DISABLE")) {
    if (DisabledInEnvironment(lookup)) {
      config->disabled = true;
    } else if (!(text[0] == '\0' || strcmp(text, "0") == 0 ||
                 strcmp(text, "false") == 0 || strcmp(text, "no") == 0)) {
      ReportBad(report, "RINGPROF_DISABLE", text, "1/true/yes or 0/false/no",
                "0 (enabled)");
    }
  }

  if (const char* text = lookup("RINGPROF_LOG")) {
    if (strcmp(text, "stderr") == 0) {
      config->log_stderr = true;
    } else if (!(text[0] == '\0' || strcmp(text, "off") == 0)) {
      ReportBad(report, "RINGPROF_LOG", text, "stderr or off", "off");
    }
  }

  LoadSwitch(lookup, report, "RINGPROF_TRACK_FREES", &config->track_frees);
  LoadSwitch(lookup, report, "RINGPROF_PTRACER_ANY", &config->ptracer_any);

  if (const char* text = lookup("RINGPROF_DIR")) {
    const size_t n = strlen(text);
    if (text[0] == '/' && n < sizeof(config->dir)) {
      memcpy(config->dir, text, n + 1);
      // A trailing slash would double in file names.
      for (size_t i = n; i > 1 && config->dir[i - 1] == '/'; --i) {
        config->dir[i - 1] = '\0';
      }
    } else {
      ReportBad(report, "RINGPROF_DIR", text,
                "an absolute path shorter than 512 bytes", config->dir);
    }
  }

  const char* default_name =
      executable_path != nullptr && *executable_path != '\0'
          ? Basename(executable_path)
          : "unknown";
  if (!CopyServiceName(default_name, config->service_name,
                       sizeof(config->service_name))) {
    CopyServiceName("unknown", config->service_name,
                    sizeof(config->service_name));
  }
  if (const char* text = lookup("RINGPROF_SERVICE_NAME")) {
    char name[kMaxServiceNameSize];
    if (strlen(text) < sizeof(name) &&
        CopyServiceName(text, name, sizeof(name))) {
      memcpy(config->service_name, name, sizeof(name));
    } else {
      ReportBad(report, "RINGPROF_SERVICE_NAME", text,
                "1 to 63 bytes, not '.' or '..'", config->service_name);
    }
  }

  ReadRange(lookup, report, "RINGPROF_SAMPLE_BYTES", 1, uint64_t{1} << 40,
            "bytes in [1, 2^40]", &config->sample_bytes);
  ReadRange(lookup, report, "RINGPROF_MAX_FRAMES", 1, 1000,
            "a depth in [1, 1000]", &config->max_frames);
  ReadRange(lookup, report, "RINGPROF_RING_KIB", 256, 1024 * 1024,
            "KiB in [256, 1048576]", &config->ring_kib);
  ReadRange(lookup, report, "RINGPROF_DIR_MAX_MIB", 0, 1024 * 1024,
            "MiB in [0, 1048576]", &config->dir_max_mib);
  ReadRange(lookup, report, "RINGPROF_MIN_SAMPLES_PER_SEC", 0, 1000,
            "a rate in [0, 1000]", &config->min_samples_per_sec);
  ReadRange(lookup, report, "RINGPROF_MAX_SAMPLES_PER_SEC", 1, 1000000,
            "a rate in [1, 1000000]", &config->max_samples_per_sec);
  ReadRange(lookup, report, "RINGPROF_MUTEX_SAMPLE_NS", 0, 1'000'000'000'000,
            "ns in [0, 10^12]", &config->mutex_sample_ns);
  ReadRange(lookup, report, "RINGPROF_BLOCK_SAMPLE_NS", 0, 1'000'000'000'000,
            "ns in [0, 10^12]", &config->block_sample_ns);

  if (const char* text = lookup("RINGPROF_FILE_MODE")) {
    uint64_t mode = 0;
    if (ParseUnsigned(text, 8, 07777, &mode) && (mode & 0600) == 0600 &&
        (mode & ~uint64_t{0666}) == 0) {
      config->file_mode = static_cast<uint32_t>(mode);
    } else {
      ReportBad(report, "RINGPROF_FILE_MODE", text,
                "octal bits within 0666 including 0600, e.g. 0640", "0600");
    }
  }
}

void LoadCpuTimerConfig(EnvLookup lookup, ReportLine report,
                        CpuTimerConfig* config) {
  config->hz = ReadCpuHz(lookup, report, config->hz);
  config->signal = ReadCpuSignal(lookup, report);
}

}  // namespace emitter
}  // namespace ringprof
