// Runs one workload of examples/workloads with libringprof.so preloaded,
// reads every ring file it left, and checks the profile against what the
// workload says it did. Self-contained (its own ELF symbol lookup) so that
// it can run unchanged inside a gVisor sandbox, where the ring files live.
//
// Usage: workload_check <scenario> <libringprof.so> <workload> [arg...]
//   scenario: storm | fork | forkstorm | dlopen | dlopen_cpu | nofp | config
// Prints one `PASS`/`FAIL` line per check; exits 0 iff every check passed.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ringfile/format.h"
#include "ringfile/reader.h"
#include "ringfile/record_dispatch.h"
#include "ringfile/test_util.h"

namespace ringprof {
namespace emitter {
namespace {

int g_failures = 0;

void Check(bool ok, const std::string& name, const std::string& detail) {
  printf("%s %s: %s\n", ok ? "PASS" : "FAIL", name.c_str(), detail.c_str());
  if (!ok) ++g_failures;
}

// ---------------------------------------------------------------------------
// Running the workload.

struct RunResult {
  bool finished = false;  // exited within the deadline
  int exit_code = -1;
  std::string output;
  std::string errors;  // stderr
};

std::string ReadFile(const std::string& path) {
  std::string text;
  FILE* f = fopen(path.c_str(), "r");
  if (f == nullptr) return text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  fclose(f);
  return text;
}

// `pre_exec` runs in the child just before exec (same pid and start time
// as the workload will have).
RunResult RunWorkload(const std::vector<std::string>& argv,
                      const std::vector<std::string>& env, int timeout_s,
                      const std::string& stderr_path,
                      const std::function<void()>& pre_exec = nullptr) {
  RunResult result;
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return result;
  const pid_t pid = fork();
  if (pid == 0) {
    const int err =
        open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (err >= 0) dup2(err, STDERR_FILENO);
    dup2(pipe_fds[1], STDOUT_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    for (const std::string& kv : env) putenv(strdup(kv.c_str()));
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(strdup(a.c_str()));
    args.push_back(nullptr);
    if (pre_exec) pre_exec();
    execv(args[0], args.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
  const time_t deadline = time(nullptr) + timeout_s;
  int status = 0;
  bool exited = false;
  while (true) {
    char buf[4096];
    ssize_t n;
    while ((n = read(pipe_fds[0], buf, sizeof(buf))) > 0) {
      result.output.append(buf, n);
    }
    if (exited) break;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      continue;  // drain the pipe once more
    }
    if (time(nullptr) > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      close(pipe_fds[0]);
      result.errors = ReadFile(stderr_path);
      return result;
    }
    usleep(20 * 1000);
  }
  close(pipe_fds[0]);
  result.errors = ReadFile(stderr_path);
  result.finished = true;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return result;
}

// `key value` lines of the workload's report.
std::multimap<std::string, std::string> ParseReport(const std::string& text) {
  std::multimap<std::string, std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    lines.emplace(line.substr(0, space), line.substr(space + 1));
  }
  return lines;
}

// ---------------------------------------------------------------------------
// Reading ring files.

struct Sample {
  ringfile::AllocSample head;
  std::vector<uint64_t> frames;
};
struct Module {
  ringfile::ModuleMap head;
  std::string path;
};
struct RingContents {
  std::string file;
  ringfile::FileInfo info;
  ringfile::PollStats stats;
  std::vector<Sample> samples;
  std::vector<Module> modules;
  std::map<uint32_t, std::string> thread_names;
  std::set<uint32_t> exited_threads;
  std::vector<uint64_t> freed;  // FreeSampled addresses
  bool process_ended = false;
  int exit_status = -2;
  uint64_t lost_samples = 0;
  int cpu_samples = 0;
  std::vector<std::vector<uint64_t>> cpu_stacks;
  int wait_samples = 0;
  std::vector<std::string> facts;  // EnvironmentFact kind:detail
};

// Fills a RingContents from the records it is handed (malformed ones are
// left out: the checks below count what arrived whole).
class RingCollector : public ringfile::RecordHandler {
 public:
  explicit RingCollector(RingContents& ring) : ring_(ring) {}

  void OnAllocSample(const ringfile::RecordView&,
                     const ringfile::AllocSampleView& s) override {
    ring_.samples.push_back(
        {s.head, std::vector<uint64_t>(s.frames.begin(), s.frames.end())});
  }
  void OnModuleMap(const ringfile::RecordView&,
                   const ringfile::ModuleMapView& m) override {
    ring_.modules.push_back({m.head, std::string(m.path)});
  }
  void OnThreadName(const ringfile::RecordView&,
                    const ringfile::ThreadNameView& t) override {
    ring_.thread_names[t.head.tid] = std::string(t.name);
  }
  void OnThreadExit(const ringfile::RecordView&,
                    const ringfile::ThreadExit& t) override {
    ring_.exited_threads.insert(t.tid);
  }
  void OnFreeSampled(const ringfile::RecordView&,
                     const ringfile::FreeSampled& f) override {
    ring_.freed.push_back(f.address);
  }
  void OnProcessEnd(const ringfile::RecordView&,
                    const ringfile::ProcessEnd& e) override {
    ring_.process_ended = true;
    ring_.exit_status = e.exit_status;
  }
  void OnLostSamples(const ringfile::RecordView&,
                     const ringfile::LostSamples& l) override {
    ring_.lost_samples += l.samples;
  }
  void OnCpuSample(const ringfile::RecordView&,
                   const ringfile::CpuSampleView& s) override {
    ++ring_.cpu_samples;
    ring_.cpu_stacks.emplace_back(s.frames.begin(), s.frames.end());
  }
  void OnWaitSample(const ringfile::RecordView&,
                    const ringfile::WaitSampleView&) override {
    ++ring_.wait_samples;
  }
  void OnEnvironmentFact(const ringfile::RecordView&,
                         const ringfile::EnvironmentFactView& f) override {
    ring_.facts.push_back(absl::StrCat(static_cast<int>(f.head.kind), ":",
                                       std::string(f.detail)));
  }

 private:
  RingContents& ring_;
};

std::vector<RingContents> ReadRings(const std::string& dir) {
  std::vector<RingContents> rings;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return rings;
  while (dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (!absl::EndsWith(name, ".ring")) continue;
    struct stat st;
    if (lstat((dir + "/" + name).c_str(), &st) != 0 || S_ISLNK(st.st_mode)) {
      continue;  // only files the emitter created (see the symlink check)
    }
    RingContents ring;
    ring.file = dir + "/" + name;
    auto reader = ringfile::RingReader::Open(ring.file);
    if (!reader.ok()) {
      Check(false, "open " + name, std::string(reader.status().message()));
      continue;
    }
    ring.info = (*reader)->info();
    auto records = ringfile::testing::ReadAllRecords(ring.file, &ring.stats);
    if (!records.ok()) {
      Check(false, "read " + name, std::string(records.status().message()));
      continue;
    }
    RingCollector collect(ring);
    for (const auto& record : *records) {
      ringfile::DispatchRecord(record.view(), collect).IgnoreError();
    }
    rings.push_back(std::move(ring));
  }
  closedir(d);
  return rings;
}

// ---------------------------------------------------------------------------
// Symbolization: function symbols of an ELF file, by file virtual address.

class ElfSymbols {
 public:
  explicit ElfSymbols(const std::string& path) {
    elf_version(EV_CURRENT);
    const int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) return;
    Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
    Elf_Scn* section = nullptr;
    while (elf != nullptr && (section = elf_nextscn(elf, section)) != nullptr) {
      GElf_Shdr header;
      if (gelf_getshdr(section, &header) == nullptr) continue;
      if (header.sh_type != SHT_SYMTAB && header.sh_type != SHT_DYNSYM) {
        continue;
      }
      Elf_Data* data = elf_getdata(section, nullptr);
      const size_t count =
          header.sh_entsize ? header.sh_size / header.sh_entsize : 0;
      for (size_t i = 0; data != nullptr && i < count; ++i) {
        GElf_Sym symbol;
        if (gelf_getsym(data, static_cast<int>(i), &symbol) == nullptr)
          continue;
        if (GELF_ST_TYPE(symbol.st_info) != STT_FUNC || symbol.st_value == 0) {
          continue;
        }
        const char* name = elf_strptr(elf, header.sh_link, symbol.st_name);
        if (name != nullptr) {
          symbols_.push_back({symbol.st_value, symbol.st_size, name});
        }
      }
    }
    if (elf != nullptr) elf_end(elf);
    close(fd);
    std::sort(
        symbols_.begin(), symbols_.end(),
        [](const Symbol& a, const Symbol& b) { return a.value < b.value; });
  }

  std::string Lookup(uint64_t vaddr) const {
    auto it = std::upper_bound(
        symbols_.begin(), symbols_.end(), vaddr,
        [](uint64_t v, const Symbol& s) { return v < s.value; });
    while (it != symbols_.begin()) {
      --it;
      if (vaddr < it->value + std::max<uint64_t>(it->size, 1)) return it->name;
      if (it->size != 0) break;
    }
    return "";
  }

 private:
  struct Symbol {
    uint64_t value;
    uint64_t size;
    std::string name;
  };
  std::vector<Symbol> symbols_;
};

class Symbolizer {
 public:
  explicit Symbolizer(const RingContents& ring) : ring_(ring) {}

  // "function@basename" or "?".
  std::string Frame(uint64_t pc) {
    const uint64_t address = pc - 1;
    for (const Module& module : ring_.modules) {
      if (address < module.head.start ||
          address >= module.head.start + module.head.size) {
        continue;
      }
      auto& symbols = cache_[module.path];
      if (symbols == nullptr)
        symbols = std::make_unique<ElfSymbols>(module.path);
      const std::string base = module.path.substr(module.path.rfind('/') + 1);
      return symbols->Lookup(address - module.head.load_bias) + "@" + base;
    }
    return "?";
  }

  std::vector<std::string> Stack(const Sample& sample) {
    return Stack(sample.frames);
  }
  std::vector<std::string> Stack(const std::vector<uint64_t>& frames) {
    std::vector<std::string> names;
    for (uint64_t pc : frames) names.push_back(Frame(pc));
    return names;
  }

 private:
  const RingContents& ring_;
  std::map<std::string, std::unique_ptr<ElfSymbols>> cache_;
};

// Index of the first frame whose function name contains `part`, or -1.
int FindFrame(const std::vector<std::string>& stack, const std::string& part) {
  for (size_t i = 0; i < stack.size(); ++i) {
    const std::string function = stack[i].substr(0, stack[i].rfind('@'));
    if (absl::StrContains(function, part)) return static_cast<int>(i);
  }
  return -1;
}

std::string Join(const std::vector<std::string>& stack) {
  std::string out;
  for (const std::string& s : stack)
    absl::StrAppend(&out, out.empty() ? "" : " <- ", s);
  return out;
}

// ---------------------------------------------------------------------------
// Checks shared by the scenarios.

const RingContents* RingOf(const std::vector<RingContents>& rings, int pid,
                           const std::string& executable_suffix) {
  for (const RingContents& ring : rings) {
    if (static_cast<int>(ring.info.pid) == pid &&
        absl::EndsWith(ring.info.executable, executable_suffix)) {
      return &ring;
    }
  }
  return nullptr;
}

// `ends`: false for the image a fork child had before exec, which stops
// without exiting (the exec'd image writes a new file).
void CheckRingBasics(const RingContents& ring, const std::string& what,
                     bool ends = true) {
  Check(ring.stats.lost == 0 && ring.stats.writer_dropped == 0,
        what + " ring complete",
        absl::StrCat("lost=", ring.stats.lost,
                     " writer_dropped=", ring.stats.writer_dropped));
  if (ends) {
    Check(ring.process_ended && ring.exit_status == 0, what + " ProcessEnd",
          absl::StrCat("ended=", ring.process_ended,
                       " status=", ring.exit_status));
  }
  bool has_executable = false;
  for (const Module& m : ring.modules) {
    if (m.path == ring.info.executable && m.head.build_id_size > 0) {
      has_executable = true;
    }
  }
  Check(has_executable, what + " ModuleMap of the executable with build-id",
        ring.info.executable);
}

// ---------------------------------------------------------------------------
// Scenarios.

void CheckStorm(const RunResult& run, const std::vector<RingContents>& rings,
                int pid) {
  const auto report = ParseReport(run.output);
  const RingContents* ring = RingOf(rings, pid, "alloc_storm");
  Check(ring != nullptr, "storm ring file", absl::StrCat("pid ", pid));
  if (ring == nullptr) return;
  CheckRingBasics(*ring, "storm");

  std::set<uint32_t> workers;
  for (auto [it, end] = report.equal_range("worker_tid"); it != end; ++it) {
    workers.insert(static_cast<uint32_t>(std::stoul(it->second)));
  }
  Check(workers.size() == 64, "storm workers reported",
        absl::StrCat(workers.size(), " threads"));

  std::map<uint32_t, int> samples_per_tid;
  uint64_t worker_weight = 0;
  int timing_samples = 0;
  for (const Sample& s : ring->samples) {
    if (s.head.flags & ringfile::kSampleTimingOnly) {
      ++timing_samples;
      if (s.head.weight_bytes != 0) Check(false, "timing weight", "non-zero");
      continue;
    }
    ++samples_per_tid[s.head.tid];
    if (workers.count(s.head.tid)) worker_weight += s.head.weight_bytes;
  }
  int without_samples = 0, without_name = 0, without_exit = 0;
  for (uint32_t tid : workers) {
    if (samples_per_tid[tid] == 0) ++without_samples;
    auto name = ring->thread_names.find(tid);
    if (name == ring->thread_names.end() ||
        !absl::StartsWith(name->second, "storm-")) {
      ++without_name;
    }
    if (!ring->exited_threads.count(tid)) ++without_exit;
  }
  Check(without_samples == 0, "storm every thread sampled",
        absl::StrCat(without_samples, " of ", workers.size(),
                     " threads without allocation samples"));
  Check(without_name == 0, "storm thread names",
        absl::StrCat(without_name, " threads without a storm- name"));
  Check(without_exit == 0, "storm thread exits",
        absl::StrCat(without_exit, " threads without ThreadExit"));

  auto requested = report.find("requested_bytes");
  const double truth =
      requested == report.end() ? 0 : std::stod(requested->second);
  const double ratio = truth > 0 ? worker_weight / truth : 0;
  Check(ratio > 0.9 && ratio < 1.1, "storm sum of weights within 10%",
        absl::StrCat("estimated ", worker_weight, " / allocated ", truth, " = ",
                     ratio, " (", ring->samples.size(), " samples, ",
                     timing_samples, " timing-only, lost ", ring->lost_samples,
                     ")"));

  // In-use tracking is on by default: the storm frees
  // everything, so every recorded allocation sample gets its FreeSampled,
  // and no FreeSampled names an address that was not sampled.
  std::set<uint64_t> sampled_addresses;
  int allocation_samples = 0;
  for (const Sample& s : ring->samples) {
    if (s.head.flags & ringfile::kSampleTimingOnly) continue;
    ++allocation_samples;
    sampled_addresses.insert(s.head.address);
  }
  int unknown_frees = 0;
  for (uint64_t address : ring->freed) {
    unknown_frees += sampled_addresses.count(address) == 0;
  }
  Check(unknown_frees == 0 && ring->freed.size() >= 0.95 * allocation_samples &&
            static_cast<int>(ring->freed.size()) <= allocation_samples,
        "storm FreeSampled for the sampled allocations",
        absl::StrCat(ring->freed.size(), " frees for ", allocation_samples,
                     " allocation samples; ", unknown_frees,
                     " of unsampled addresses"));

  // Every API's landmark allocation, recorded exactly, from
  // AllocateLandmarks called by main.
  Symbolizer symbolizer(*ring);
  for (auto [it, end] = report.equal_range("api"); it != end; ++it) {
    const size_t space = it->second.find(' ');
    const std::string api = it->second.substr(0, space);
    const uint64_t size = std::stoull(it->second.substr(space + 1));
    const Sample* found = nullptr;
    for (const Sample& s : ring->samples) {
      if (s.head.requested_size == size && s.head.weight_bytes == size) {
        found = &s;
      }
    }
    std::string detail = absl::StrCat("size ", size);
    bool ok = found != nullptr;
    if (found != nullptr) {
      const auto stack = symbolizer.Stack(*found);
      const int site = FindFrame(stack, "AllocateLandmarks");
      const int main_frame = FindFrame(stack, "main");
      ok = site >= 0 && main_frame > site &&
           absl::StrContains(stack[0], "libringprof.so");
      detail = Join(stack);
    }
    Check(ok, "storm interposed " + api, detail);
  }
}

void CheckFork(const RunResult& run, const std::vector<RingContents>& rings) {
  const auto report = ParseReport(run.output);
  if (auto quiet = report.find("fork_quiet"); quiet != report.end()) {
    // A child that exits at once has nothing to record, so it creates no
    // file, unless its CPU timer fired: gVisor charges CPU in 10 ms clock
    // steps to the thread running at each step, so even this child can be
    // charged 10-20 ms and take timer samples (seen about once in 12
    // loaded runs). A file of CPU samples alone is then right.
    int files = 0, not_cpu_only = 0;
    std::string contents;
    for (const RingContents& ring : rings) {
      if (static_cast<int>(ring.info.pid) != std::stoi(quiet->second)) continue;
      ++files;
      not_cpu_only += !ring.samples.empty() || ring.wait_samples != 0 ||
                      ring.lost_samples != 0 || ring.cpu_samples == 0;
      absl::StrAppend(&contents, " (", ring.samples.size(), " alloc, ",
                      ring.cpu_samples, " cpu, ", ring.wait_samples,
                      " wait, facts [", absl::StrJoin(ring.facts, ","),
                      "], lost ", ring.lost_samples, ")");
    }
    Check(not_cpu_only == 0,
          "fork child without allocations leaves no file (or CPU samples "
          "only)",
          absl::StrCat(files, " files for pid ", quiet->second, contents));
  } else {
    Check(false, "fork fork_quiet", "not reported");
  }
  for (const char* kind : {"parent", "fork", "fork_exec", "spawn", "vfork"}) {
    auto it = report.find(kind);
    if (it == report.end()) {
      Check(false, absl::StrCat("fork ", kind), "not reported");
      continue;
    }
    const int pid = std::stoi(it->second);
    int files = 0, with_blocks = 0;
    for (const RingContents& ring : rings) {
      if (static_cast<int>(ring.info.pid) != pid) continue;
      ++files;
      int blocks = 0;
      for (const Sample& s : ring.samples) {
        if (s.head.requested_size >= (1 << 20)) ++blocks;
      }
      if (blocks >= 4) ++with_blocks;
      const bool pre_exec_image = std::string(kind) == "fork_exec" &&
                                  !absl::EndsWith(ring.file, ".1.ring");
      CheckRingBasics(ring, absl::StrCat(kind, " (", ring.file, ")"),
                      !pre_exec_image);
    }
    // fork + exec leaves two files: the forked image's and the new one's.
    const int expected = std::string(kind) == "fork_exec" ? 2 : 1;
    Check(files == expected && with_blocks == expected,
          absl::StrCat("fork ", kind, " ring files"),
          absl::StrCat(files, " files for pid ", pid, ", ", with_blocks,
                       " with the 4 recorded blocks; expected ", expected));
  }
}

void CheckDlopen(const RunResult& run, const std::vector<RingContents>& rings,
                 int pid) {
  const RingContents* ring = RingOf(rings, pid, "dlopen_alloc");
  Check(ring != nullptr, "dlopen ring file", absl::StrCat("pid ", pid));
  if (ring == nullptr) return;
  CheckRingBasics(*ring, "dlopen");
  bool mapped = false;
  for (const Module& m : ring->modules) {
    if (absl::EndsWith(m.path, "libdlopen_payload.so") &&
        m.head.build_id_size > 0) {
      mapped = true;
    }
  }
  Check(mapped, "dlopen ModuleMap of the loaded library", "");
  Symbolizer symbolizer(*ring);
  int good = 0, blocks = 0;
  std::string example;
  for (const Sample& s : ring->samples) {
    if (s.head.requested_size < (1 << 20)) continue;
    ++blocks;
    const auto stack = symbolizer.Stack(s);
    const int inner = FindFrame(stack, "PayloadBuildBuffers");
    const int outer = FindFrame(stack, "PayloadAllocate");
    const int main_frame = FindFrame(stack, "main");
    if (inner >= 0 && outer > inner && main_frame > outer) ++good;
    example = Join(stack);
  }
  Check(blocks == 8 && good == 8, "dlopen stacks through the library",
        absl::StrCat(good, " of ", blocks, " blocks; e.g. ", example));
}

// A library loaded after start that only spins (allocates nothing): its
// frames come from CPU samples alone, the first of them taken in the CPU
// timer's signal handler, and its ModuleMap must be recorded by them.
void CheckDlopenCpu(const RunResult& run,
                    const std::vector<RingContents>& rings, int pid) {
  const RingContents* ring = RingOf(rings, pid, "dlopen_alloc");
  Check(ring != nullptr, "dlopen_cpu ring file", absl::StrCat("pid ", pid));
  if (ring == nullptr) return;
  CheckRingBasics(*ring, "dlopen_cpu");
  bool mapped = false;
  for (const Module& m : ring->modules) {
    if (absl::EndsWith(m.path, "libdlopen_payload.so") &&
        m.head.build_id_size > 0) {
      mapped = true;
    }
  }
  Check(mapped, "dlopen_cpu ModuleMap of the loaded library", "");
  // Its file's copy of the module map, then (RINGPROF_TRACK_FREES=0: no
  // copy at exit) the CPU samples' re-recording 100 ms later.
  int executable_copies = 0;
  for (const Module& m : ring->modules) {
    if (m.path == ring->info.executable) ++executable_copies;
  }
  Check(executable_copies >= 2, "dlopen_cpu module map re-recorded",
        absl::StrCat(executable_copies, " copies of the executable's"));
  Symbolizer symbolizer(*ring);
  int in_spin = 0;
  std::string example;
  for (const auto& frames : ring->cpu_stacks) {
    const auto stack = symbolizer.Stack(frames);
    const int outer = FindFrame(stack, "PayloadSpin");
    const int main_frame = FindFrame(stack, "main");
    if (outer >= 0 && main_frame > outer) ++in_spin;
    example = Join(stack);
  }
  // 300 ms of CPU at the default 100 Hz: ~30 samples, nearly all spinning.
  Check(in_spin >= 10 && 2 * in_spin >= ring->cpu_samples,
        "dlopen_cpu CPU stacks through the library",
        absl::StrCat(in_spin, " of ", ring->cpu_samples, " CPU samples; e.g. ",
                     example));
}

void CheckNofp(const RunResult& run, const std::vector<RingContents>& rings,
               int pid) {
  const RingContents* ring = RingOf(rings, pid, "nofp_map");
  Check(ring != nullptr, "nofp ring file", absl::StrCat("pid ", pid));
  if (ring == nullptr) return;
  CheckRingBasics(*ring, "nofp");
  Symbolizer symbolizer(*ring);
  int in_build = 0, complete = 0, through_libstdcxx = 0;
  std::string example, bad;
  for (const Sample& s : ring->samples) {
    const auto stack = symbolizer.Stack(s);
    const int build = FindFrame(stack, "BuildIndex");
    if (build < 0) continue;
    ++in_build;
    const int main_frame = FindFrame(stack, "main");
    if (main_frame > build) {
      ++complete;
    } else {
      bad = Join(stack);
    }
    for (int i = 0; i < build; ++i) {
      if (absl::StrContains(stack[i], "libstdc++")) {
        ++through_libstdcxx;
        example = Join(stack);
        break;
      }
    }
  }
  Check(in_build >= 20, "nofp samples in BuildIndex",
        absl::StrCat(in_build, " of ", ring->samples.size()));
  Check(complete == in_build, "nofp BuildIndex then main in every stack",
        absl::StrCat(complete, " of ", in_build,
                     bad.empty() ? "" : "; bad: ", bad));
  Check(through_libstdcxx > 0, "nofp unwinds through libstdc++",
        absl::StrCat(through_libstdcxx, " stacks; e.g. ", example));
}

int CountLines(const std::string& text, const std::string& prefix) {
  int count = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) count += absl::StartsWith(line, prefix);
  return count;
}

int CountRingFiles(const std::string& dir) {
  int count = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* entry = readdir(d)) {
      count += absl::EndsWith(entry->d_name, ".ring");
    }
    closedir(d);
  }
  return count;
}

// Configuration edge cases: each runs the workload (a small storm) once.
void CheckConfig(const std::string& lib,
                 const std::vector<std::string>& command,
                 const std::string& base_dir) {
  const std::string preload = absl::StrCat("LD_PRELOAD=", lib);
  const std::string err = base_dir + "-stderr.txt";
  {
    // A directory that cannot hold files: the program runs on unaffected.
    const RunResult run = RunWorkload(
        command, {preload, "RINGPROF_DIR=/proc/self/fdinfo/rings"}, 60, err);
    Check(run.finished && run.exit_code == 0, "config unwritable dir: runs",
          absl::StrCat("exit=", run.exit_code));
    Check(CountLines(run.errors, "ringprof: cannot create a ring file") == 1 &&
              CountLines(run.errors, "ringprof:") == 1,
          "config unwritable dir: one line on stderr", run.errors);
  }
  {
    const std::string dir = base_dir + "-disabled";
    const RunResult run = RunWorkload(
        command, {preload, "RINGPROF_DIR=" + dir, "RINGPROF_DISABLE=1"}, 60,
        err);
    Check(run.finished && run.exit_code == 0 && run.errors.empty() &&
              CountRingFiles(dir) == 0,
          "config RINGPROF_DISABLE=1: no file, no output",
          absl::StrCat("exit=", run.exit_code, " files=", CountRingFiles(dir),
                       " stderr=", run.errors));
  }
  {
    const std::string dir = base_dir + "-bad";
    const RunResult run = RunWorkload(
        command,
        {preload, "RINGPROF_DIR=" + dir, "RINGPROF_SAMPLE_BYTES=lots",
         "RINGPROF_MAX_FRAMES=0", "RINGPROF_FILE_MODE=0777"},
        60, err);
    Check(run.finished && run.exit_code == 0 && CountRingFiles(dir) == 1,
          "config bad values: runs and profiles with defaults",
          absl::StrCat("exit=", run.exit_code, " files=", CountRingFiles(dir)));
    Check(CountLines(run.errors, "ringprof: ignoring RINGPROF_") == 3 &&
              CountLines(run.errors, "ringprof:") == 3,
          "config bad values: one line each", run.errors);
  }
  {
    // The name the emitter will want is taken by a symlink to a file it did
    // not create: it must neither follow nor replace it, and use the next
    // name instead.
    const std::string dir = base_dir + "-symlink";
    mkdir(dir.c_str(), 0700);
    const std::string victim = dir + "/victim";
    FILE* f = fopen(victim.c_str(), "w");
    if (f != nullptr) {
      fputs("precious", f);
      fclose(f);
    }
    const std::string service = command[0].substr(command[0].rfind('/') + 1);
    auto plant_symlink = [&] {
      // /proc/self/stat field 22, as the emitter reads it after exec.
      std::string stat = ReadFile("/proc/self/stat");
      std::istringstream fields(stat.substr(stat.rfind(')') + 2));
      std::string field;
      for (int i = 3; i <= 22; ++i) fields >> field;
      const std::string name =
          absl::StrCat(dir, "/", service, ".", getpid(), ".", field, ".ring");
      symlink(victim.c_str(), name.c_str());
    };
    const RunResult run = RunWorkload(command, {preload, "RINGPROF_DIR=" + dir},
                                      60, err, plant_symlink);
    const std::vector<RingContents> rings = ReadRings(dir);
    Check(run.exit_code == 0 && ReadFile(victim) == "precious" &&
              rings.size() == 1 && absl::EndsWith(rings[0].file, ".1.ring"),
          "config symlink at the file name: not followed, not replaced",
          absl::StrCat("exit=", run.exit_code, " victim='", ReadFile(victim),
                       "' files=", rings.size(),
                       rings.empty() ? "" : " " + rings[0].file));
  }
  {
    // A full disk: a 1 MiB tmpfs cannot hold the default 8 MiB ring.
    const std::string dir = base_dir + "-full";
    mkdir(dir.c_str(), 0700);
    if (mount("none", dir.c_str(), "tmpfs", 0, "size=1m") != 0) {
      printf("NOTE config full disk: not run (mount: %s)\n", strerror(errno));
    } else {
      const RunResult run =
          RunWorkload(command, {preload, "RINGPROF_DIR=" + dir}, 60, err);
      const int files = CountRingFiles(dir);
      umount(dir.c_str());
      Check(run.finished && run.exit_code == 0 && files == 0 &&
                CountLines(run.errors, "ringprof: cannot create") == 1,
            "config full disk: runs, no file left, one line",
            absl::StrCat("exit=", run.exit_code, " files=", files,
                         " stderr=", run.errors));
    }
  }
  for (const char* mode : {"0600", "0640"}) {
    const std::string dir = absl::StrCat(base_dir, "-mode", mode);
    const RunResult run =
        RunWorkload(command,
                    {preload, "RINGPROF_DIR=" + dir,
                     absl::StrCat("RINGPROF_FILE_MODE=", mode)},
                    60, err);
    const std::vector<RingContents> rings = ReadRings(dir);
    struct stat st = {};
    const bool ok = rings.size() == 1 &&
                    stat(rings[0].file.c_str(), &st) == 0 &&
                    (st.st_mode & 0777) == std::stoul(mode, nullptr, 8);
    char actual[16];
    snprintf(actual, sizeof(actual), "0%o", st.st_mode & 0777);
    Check(run.exit_code == 0 && ok, absl::StrCat("config file mode ", mode),
          absl::StrCat("files=", rings.size(), " mode=", actual));
  }
}

// Forks under allocation pressure (RINGPROF_SAMPLE_BYTES=4096 makes the
// parent's threads sample constantly): every child finished and wrote its
// file with its two recorded blocks and ProcessEnd.
void CheckForkStorm(const RunResult& run,
                    const std::vector<RingContents>& rings) {
  const auto report = ParseReport(run.output);
  int children = 0, good = 0;
  std::string bad;
  for (auto [it, end] = report.equal_range("child"); it != end; ++it) {
    ++children;
    const int pid = std::stoi(it->second);
    bool ok = false;
    for (const RingContents& ring : rings) {
      if (static_cast<int>(ring.info.pid) != pid) continue;
      int blocks = 0;
      for (const Sample& s : ring.samples) {
        blocks += s.head.requested_size == (1u << 20);
      }
      ok = blocks == 2 && ring.process_ended && ring.exit_status == 0;
    }
    if (ok) {
      ++good;
    } else {
      bad = it->second;
    }
  }
  Check(children == 40 && good == 40, "fork storm children",
        absl::StrCat(good, " of ", children, " children with a complete file",
                     bad.empty() ? "" : "; e.g. not pid ", bad));
}

int Main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr,
            "usage: %s storm|fork|forkstorm|dlopen|dlopen_cpu|nofp|config LIB "
            "WORKLOAD [ARG...]\n",
            argv[0]);
    return 2;
  }
  const std::string scenario = argv[1];
  char lib[4096], workload[4096];
  if (realpath(argv[2], lib) == nullptr ||
      realpath(argv[3], workload) == nullptr) {
    fprintf(stderr, "cannot resolve %s or %s\n", argv[2], argv[3]);
    return 2;
  }
  std::vector<std::string> command = {workload};
  for (int i = 4; i < argc; ++i) {
    char resolved[4096];
    command.push_back(realpath(argv[i], resolved) != nullptr ? resolved
                                                             : argv[i]);
  }
  const char* tmp = getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/rings-",
                                 scenario, "-", getpid());
  std::vector<std::string> env = {
      absl::StrCat("LD_PRELOAD=", lib),
      absl::StrCat("RINGPROF_DIR=", dir),
      // Room for every record of the run: the checks need a complete ring.
      "RINGPROF_RING_KIB=65536",
  };
  if (scenario == "forkstorm") {
    env.push_back("RINGPROF_SAMPLE_BYTES=4096");
    // Small rings: 40 children each populate their own file.
    for (std::string& kv : env) {
      if (absl::StartsWith(kv, "RINGPROF_RING_KIB="))
        kv = "RINGPROF_RING_KIB=1024";
    }
  }
  if (scenario == "dlopen_cpu") env.push_back("RINGPROF_TRACK_FREES=0");
  if (scenario == "config") {
    CheckConfig(lib, command, dir);
    printf("%s: %d check(s) failed\n", scenario.c_str(), g_failures);
    return g_failures == 0 ? 0 : 1;
  }
  const RunResult run = RunWorkload(command, env, 120, dir + "-stderr.txt");
  Check(run.finished && run.exit_code == 0, scenario + " workload ran",
        absl::StrCat("finished=", run.finished, " exit=", run.exit_code,
                     run.errors.empty() ? "" : "; stderr: ", run.errors));
  const std::vector<RingContents> rings = ReadRings(dir);
  // The workload's pid: the ring whose executable is the workload (the
  // first exec'd image for fork_exec's parent).
  int pid = -1;
  for (const RingContents& ring : rings) {
    if (ring.info.executable == workload &&
        (pid < 0 || static_cast<int>(ring.info.pid) < pid)) {
      pid = static_cast<int>(ring.info.pid);
    }
  }
  if (scenario == "storm") {
    CheckStorm(run, rings, pid);
  } else if (scenario == "fork") {
    CheckFork(run, rings);
  } else if (scenario == "dlopen") {
    CheckDlopen(run, rings, pid);
  } else if (scenario == "dlopen_cpu") {
    CheckDlopenCpu(run, rings, pid);
  } else if (scenario == "nofp") {
    CheckNofp(run, rings, pid);
  } else if (scenario == "forkstorm") {
    CheckForkStorm(run, rings);
  } else {
    Check(false, "scenario", "unknown: " + scenario);
  }
  printf("%s: %d check(s) failed\n", scenario.c_str(), g_failures);
  return g_failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof

int main(int argc, char** argv) { return ringprof::emitter::Main(argc, argv); }
