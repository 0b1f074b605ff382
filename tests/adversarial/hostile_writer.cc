// hostile_writer: ring files as a broken or hostile workload writes them,
// for adversarial_test.py. Each mode is one row of the collector's threat
// model; `steady` is the well-behaved workload whose profile must come out
// complete whatever the others do.
//
//   hostile_writer steady DIR SERVICE SECONDS RATE [SLOTS]   good workload
//       (SLOTS per ring, default 4096); prints "committed N weight W"
//       (allocation samples and their bytes)
//   hostile_writer truncate DIR SECONDS              truncates its ring file
//       and writes it back, in a loop
//   hostile_writer future DIR                        samples stamped in 60,000
//       different windows up to a week ahead, and one present sample
//   hostile_writer labels DIR SECONDS                steady + Label records
//       named like the collector's own labels
//   hostile_writer deep DIR SECONDS RATE             random 128-frame stacks
//       (allocation samples, and every 8th record a wait sample of a
//       random kind, duration and sampling rate, up to absurd ones)
//   hostile_writer junk DIR COUNT                    COUNT small rings of pids
//       that never existed
//   hostile_writer modules DIR SECONDS PATH...       ModuleMap records naming
//       each PATH (FIFOs, devices, secrets, ../), with samples in them
//   hostile_writer libtrunc DIR SECONDS LIB          samples in LIB (a copy of
//       an ELF file) for SECONDS/2, then LIB truncated and rewritten in place
//       while samples go on
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ringfile/format.h"
#include "ringfile/writer.h"

namespace {

using namespace ringprof::ringfile;

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + ts.tv_nsec;
}

uint64_t StartTicks() {
  FILE* f = fopen("/proc/self/stat", "r");
  char buf[1024] = {};
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* p = strrchr(buf, ')');
  unsigned long long ticks = 0;
  int field = 2;
  for (; *p && field < 22; ++p) {
    if (*p == ' ') {
      ++field;
      if (field == 22) sscanf(p + 1, "%llu", &ticks);
    }
  }
  return ticks;
}

std::string SelfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "";
}

struct Writer {
  RingWriter ring;
  std::string path;
};

// A ring file named like the emitter's.
bool Create(Writer& w, const std::string& dir, const std::string& service,
            uint32_t pid, uint64_t start, uint32_t rings = 4,
            uint32_t slots = 4096, uint32_t slot_size = 1152) {
  w.path = dir + "/" + service + "." + std::to_string(pid) + "." +
           std::to_string(start) + ".ring";
  WriterOptions o;
  o.path = w.path.c_str();
  o.ring_count = rings;
  o.slots_per_ring = slots;
  o.slot_size = slot_size;
  o.service_name = service.c_str();
  static std::string exe = SelfExe();
  o.executable = exe.c_str();
  o.pid = pid;
  o.process_start_ticks = start;
  const int error = w.ring.Create(o);
  if (error != 0) {
    fprintf(stderr, "create %s: %s\n", w.path.c_str(), strerror(error));
    return false;
  }
  return true;
}

bool Alloc(Writer& w, uint32_t tid, uint64_t t, const uint64_t* frames,
           uint16_t count, uint64_t weight) {
  AllocSample s = {};
  s.monotonic_ns = t;
  s.tid = tid;
  s.frame_count = count;
  s.weight_bytes = weight;
  s.requested_size = 100;
  s.address = 0x1000 + t;
  return w.ring.TryAppend(RecordType::kAllocSample, &s, sizeof(s), frames,
                          count * 8, tid);
}

void Module(Writer& w, const std::string& path, uint64_t start, uint64_t size,
            uint64_t offset, uint64_t bias) {
  std::vector<uint8_t> tail(path.begin(), path.end());
  ModuleMap m = {};
  m.monotonic_ns = NowNs();
  m.start = start;
  m.size = size;
  m.file_offset = offset;
  m.load_bias = bias;
  m.path_size = static_cast<uint16_t>(tail.size());
  for (uint32_t r = 0; r < 4; ++r) {  // every ring: no sample waits for it
    w.ring.TryAppend(RecordType::kModuleMap, &m, sizeof(m), tail.data(),
                     tail.size(), r);
  }
}

// The executable segment of our own binary, as the emitter reports it.
struct Segment {
  uint64_t start = 0, size = 0, offset = 0, bias = 0;
};
Segment OwnText() {
  Segment seg;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') return 0;
        Segment* s = static_cast<Segment*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
            s->start = info->dlpi_addr + ph.p_vaddr;
            s->size = ph.p_memsz;
            s->offset = ph.p_offset;
            s->bias = info->dlpi_addr;
          }
        }
        return 1;
      },
      &seg);
  return seg;
}

// Three functions whose names the good workload's profile must show.
__attribute__((noinline)) uint64_t SteadyLeafAlpha() {
  return reinterpret_cast<uint64_t>(&SteadyLeafAlpha);
}
__attribute__((noinline)) uint64_t SteadyLeafBeta() {
  return reinterpret_cast<uint64_t>(&SteadyLeafBeta);
}
__attribute__((noinline)) uint64_t SteadyRoot() {
  return reinterpret_cast<uint64_t>(&SteadyRoot);
}

void Pace(uint64_t start, uint64_t done, double rate) {
  const uint64_t due = start + static_cast<uint64_t>(done * 1e9 / rate);
  const uint64_t now = NowNs();
  if (due > now) {
    timespec ts{static_cast<time_t>((due - now) / 1'000'000'000),
                static_cast<long>((due - now) % 1'000'000'000)};
    nanosleep(&ts, nullptr);
  }
}

void End(Writer& w) {
  ProcessEnd end = {};
  end.monotonic_ns = NowNs();
  end.exit_status = 0;
  w.ring.TryAppend(RecordType::kProcessEnd, &end, sizeof(end), nullptr, 0, 0);
  w.ring.MarkProcessEnded();
}

// The good workload: RATE allocation samples per second over 4 threads'
// rings, each 1000 bytes, in two stacks of our own functions.
int Steady(const std::string& dir, const std::string& service, double seconds,
           double rate, bool labels, uint32_t slots = 4096) {
  Writer w;
  if (!Create(w, dir, service, getpid(), StartTicks(), 4, slots)) return 1;
  const Segment text = OwnText();
  Module(w, SelfExe(), text.start, text.size, text.offset, text.bias);
  if (labels) {
    const char* keys[] = {"pod",          "namespace", "hostname", "pid",
                          "service_name", "__name__",  "team"};
    for (const char* key : keys) {
      const std::string value = std::string(key) == "team" ? "blue" : "evil";
      Label l = {};
      l.monotonic_ns = NowNs();
      l.key_size = static_cast<uint16_t>(strlen(key));
      l.value_size = static_cast<uint16_t>(value.size());
      std::string tail = std::string(key) + value;
      w.ring.TryAppend(RecordType::kLabel, &l, sizeof(l), tail.data(),
                       tail.size(), 0);
    }
  }
  const uint64_t a[] = {SteadyLeafAlpha() + 1, SteadyRoot() + 1};
  const uint64_t b[] = {SteadyLeafBeta() + 1, SteadyRoot() + 1};
  const uint64_t start = NowNs();
  const uint64_t until = start + static_cast<uint64_t>(seconds * 1e9);
  uint64_t committed = 0, weight = 0, i = 0;
  while (NowNs() < until) {
    if (Alloc(w, static_cast<uint32_t>(i % 4), NowNs(), i % 3 ? a : b, 2,
              1000)) {
      ++committed;
      weight += 1000;
    }
    ++i;
    Pace(start, i, rate);
  }
  End(w);
  printf("committed %llu weight %llu\n",
         static_cast<unsigned long long>(committed),
         static_cast<unsigned long long>(weight));
  fflush(stdout);
  return 0;
}

int Truncate(const std::string& dir, double seconds) {
  Writer w;
  if (!Create(w, dir, "truncating", getpid(), StartTicks(), 2, 64, 256)) {
    return 1;
  }
  const uint64_t frames[] = {0x1000, 0x2000};
  for (int i = 0; i < 100; ++i) Alloc(w, i % 2, NowNs(), frames, 2, 1000);
  w.ring.Close();
  const int fd = open(w.path.c_str(), O_RDWR);
  struct stat st;
  fstat(fd, &st);
  std::vector<char> content(st.st_size);
  if (pread(fd, content.data(), content.size(), 0) != st.st_size) return 1;
  const uint64_t until = NowNs() + static_cast<uint64_t>(seconds * 1e9);
  while (NowNs() < until) {
    if (ftruncate(fd, 0) != 0 || ftruncate(fd, st.st_size) != 0 ||
        pwrite(fd, content.data(), content.size(), 0) < 0) {
      return 1;
    }
  }
  return 0;
}

int Future(const std::string& dir) {
  Writer w;
  if (!Create(w, dir, "future", getpid(), StartTicks(), 4, 16384, 256)) {
    return 1;
  }
  const uint64_t frames[] = {0x1000, 0x2000};
  const uint64_t now = NowNs();
  uint64_t committed = 0;
  for (uint64_t k = 1; k <= 60000; ++k) {
    // 10 s apart: one window each, from 10 s to a week ahead.
    committed += Alloc(w, k % 4, now + k * 10'000'000'000ull, frames, 2, 1000);
  }
  Alloc(w, 0, now, frames, 2, 1000);
  End(w);
  printf("committed %llu\n", static_cast<unsigned long long>(committed));
  return 0;
}

int Deep(const std::string& dir, double seconds, double rate) {
  Writer w;
  if (!Create(w, dir, "deep", getpid(), StartTicks())) return 1;
  std::mt19937_64 random(getpid());
  uint64_t frames[128];
  const uint64_t start = NowNs();
  const uint64_t until = start + static_cast<uint64_t>(seconds * 1e9);
  uint64_t i = 0;
  while (NowNs() < until) {
    for (uint64_t& f : frames) f = random() | 1;
    if (i % 8 != 7) {
      Alloc(w, static_cast<uint32_t>(i % 4), NowNs(), frames, 128, 1000);
    } else {
      WaitSample s = {};
      s.monotonic_ns = NowNs();
      s.tid = static_cast<uint32_t>(i % 4);
      s.frame_count = 128;
      s.wait_ns = 1 + random() % (uint64_t{1} << (random() % 63));
      s.sample_ns = 1 + random() % (uint64_t{1} << (random() % 63));
      s.kind = static_cast<uint16_t>(1 + (i / 8) % 2);
      w.ring.TryAppend(RecordType::kWaitSample, &s, sizeof(s), frames,
                       sizeof(frames), s.tid);
    }
    ++i;
    Pace(start, i, rate);
  }
  End(w);
  return 0;
}

int Junk(const std::string& dir, int count) {
  // Above any pid_max (2^22): these processes never existed.
  for (int i = 0; i < count; ++i) {
    Writer w;
    if (!Create(w, dir, "junk", 5'000'000 + i, 1, 1, 2, 256)) return 1;
    w.ring.Close();
  }
  return 0;
}

// A ModuleMap record for each spec, PATH or PATH@VADDR@FILE_OFFSET (hex:
// an address in an ELF file and the file offset of its page), each loaded
// at its own 4 GiB-aligned bias, and samples at VADDR (or at 0x1100) in
// every one of them.
int Modules(const std::string& dir, double seconds,
            const std::vector<std::string>& specs) {
  Writer w;
  if (!Create(w, dir, "modules", getpid(), StartTicks())) return 1;
  std::vector<uint64_t> sample_at;
  for (size_t i = 0; i < specs.size(); ++i) {
    const uint64_t bias = (uint64_t{i} + 1) << 32;
    std::string path = specs[i];
    uint64_t vaddr = 0x1100, offset = 0x1000;
    const size_t at = path.find('@');
    if (at != std::string::npos) {
      sscanf(path.c_str() + at + 1, "%lx@%lx", &vaddr, &offset);
      path.resize(at);
    }
    const uint64_t page = vaddr & ~uint64_t{0xfff};
    Module(w, path, bias + page, 0x10000, offset, bias);
    sample_at.push_back(bias + vaddr);
  }
  const uint64_t until = NowNs() + static_cast<uint64_t>(seconds * 1e9);
  uint64_t i = 0;
  while (NowNs() < until) {
    const uint64_t at = sample_at[i % sample_at.size()];
    const uint64_t frames[] = {at + 1, at + 0x21};
    Alloc(w, i % 4, NowNs(), frames, 2, 1000);
    ++i;
    usleep(1000);
  }
  End(w);
  return 0;
}

// Samples in our own functions, attributed to LIB (a copy of this binary):
// the collector symbolizes LIB in the first half; then LIB is truncated and
// rewritten in place, as a deploy's `cp` over a loaded library does.
int LibTrunc(const std::string& dir, double seconds, const std::string& lib) {
  Writer w;
  if (!Create(w, dir, "libtrunc", getpid(), StartTicks())) return 1;
  const Segment text = OwnText();
  Module(w, lib, text.start, text.size, text.offset, text.bias);
  const uint64_t frames[] = {SteadyLeafAlpha() + 1, SteadyRoot() + 1};
  const uint64_t start = NowNs();
  const uint64_t half = start + static_cast<uint64_t>(seconds * 0.5e9);
  const uint64_t until = start + static_cast<uint64_t>(seconds * 1e9);
  bool truncated = false;
  uint64_t i = 0;
  while (NowNs() < until) {
    if (!truncated && NowNs() >= half) {
      truncated = true;
      const int fd = open(lib.c_str(), O_RDWR);
      struct stat st;
      fstat(fd, &st);
      if (ftruncate(fd, 0) != 0) return 1;
      std::vector<char> junk(st.st_size / 2, 'x');
      if (pwrite(fd, junk.data(), junk.size(), 0) < 0) return 1;
      close(fd);
    }
    Alloc(w, i % 4, NowNs(), frames, 2, 1000);
    ++i;
    usleep(1000);
  }
  End(w);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  auto arg = [&](size_t i) { return i < a.size() ? a[i] : std::string(); };
  const std::string mode = arg(0), dir = arg(1);
  if (mode == "steady") {
    return Steady(dir, arg(2), atof(arg(3).c_str()), atof(arg(4).c_str()),
                  false, arg(5).empty() ? 4096 : atoi(arg(5).c_str()));
  }
  if (mode == "labels") {
    return Steady(dir, "labelled", atof(arg(2).c_str()), 500, true);
  }
  if (mode == "truncate") return Truncate(dir, atof(arg(2).c_str()));
  if (mode == "future") return Future(dir);
  if (mode == "deep") {
    return Deep(dir, atof(arg(2).c_str()), atof(arg(3).c_str()));
  }
  if (mode == "junk") return Junk(dir, atoi(arg(2).c_str()));
  if (mode == "modules") {
    return Modules(dir, atof(arg(2).c_str()),
                   std::vector<std::string>(a.begin() + 3, a.end()));
  }
  if (mode == "libtrunc") return LibTrunc(dir, atof(arg(2).c_str()), arg(3));
  fprintf(stderr, "usage: see hostile_writer.cc\n");
  return 2;
}
