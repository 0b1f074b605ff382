// The symbolizer on the addresses of real profiles, against llvm-symbolizer
// and GNU addr2line on the same addresses, all measured in one run.
//
//   symbolizer_benchmark [--reps=N] PROFILE.pb.gz...
//
// Takes every distinct (mapping, address) of the profiles' locations whose
// mapping names a file, and times, interleaved over N repetitions (medians
// reported), the CPU (user + system) of:
//   cold  a new Symbolizer resolving every address: opening and indexing
//         each module included, as the collector's first window pays;
//   warm  the same Symbolizer again: each address answered from its cache,
//         as every later window;
//   llvm-symbolizer / addr2line  one process per module reading all of its
//         addresses on stdin (--inlining / -i, demangled), as a batch
//         symbolizer would be used.
// Run by tools/bench.d/symbolizer on profiles of clang++ and python3.
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collector/pprof/pprof_io.h"
#include "collector/symbolize/symbolizer.h"

namespace ringprof {
namespace collector {
namespace {

struct Module {
  ModuleInfo info;
  std::vector<uint64_t> addresses;  // runtime
};

double CpuSeconds(int who) {
  struct rusage usage;
  getrusage(who, &usage);
  return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 +
         usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

// Load bias of the file at `path` given that file offset `offset` is
// mapped at `start`: start minus that offset's virtual address.
bool LoadBias(const std::string& path, uint64_t start, uint64_t offset,
              uint64_t* bias) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  bool found = false;
  size_t count = 0;
  if (elf != nullptr && elf_getphdrnum(elf, &count) == 0) {
    for (size_t i = 0; i < count && !found; ++i) {
      GElf_Phdr phdr;
      if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr ||
          phdr.p_type != PT_LOAD || offset < phdr.p_offset ||
          offset >= phdr.p_offset + phdr.p_filesz) {
        continue;
      }
      *bias = start - (phdr.p_vaddr + (offset - phdr.p_offset));
      found = true;
    }
  }
  if (elf != nullptr) elf_end(elf);
  close(fd);
  return found;
}

std::vector<Module> ModulesOf(const std::vector<std::string>& profiles) {
  std::map<std::string, Module> by_key;  // build-id or path
  std::map<std::string, std::vector<uint64_t>> seen;
  for (const std::string& path : profiles) {
    absl::StatusOr<perftools::profiles::Profile> profile =
        ReadProfileFile(path);
    if (!profile.ok()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(),
                   std::string(profile.status().message()).c_str());
      std::exit(2);
    }
    std::map<uint64_t, const perftools::profiles::Mapping*> mappings;
    for (const auto& mapping : profile->mapping()) {
      mappings[mapping.id()] = &mapping;
    }
    for (const auto& location : profile->location()) {
      auto it = mappings.find(location.mapping_id());
      if (it == mappings.end() || location.address() == 0) continue;
      const auto& mapping = *it->second;
      const std::string file = profile->string_table(mapping.filename());
      const std::string id = profile->string_table(mapping.build_id());
      if (file.empty() || file[0] != '/') continue;
      const std::string key = id.empty() ? file : id;
      Module& module = by_key[key];
      if (module.info.path.empty()) {
        module.info.path = file;
        module.info.build_id_hex = id;
        module.info.start = mapping.memory_start();
        module.info.size = mapping.memory_limit() - mapping.memory_start();
        module.info.file_offset = mapping.file_offset();
        module.info.pid = static_cast<uint32_t>(getpid());
        if (!LoadBias(file, mapping.memory_start(), mapping.file_offset(),
                      &module.info.load_bias)) {
          by_key.erase(key);
          continue;
        }
      }
      // Another run of the same binary may have loaded it elsewhere: keep
      // file-relative addresses, rebased to the first run's bias.
      uint64_t bias = 0;
      if (!LoadBias(file, mapping.memory_start(), mapping.file_offset(),
                    &bias)) {
        continue;
      }
      module.addresses.push_back(location.address() - bias +
                                 module.info.load_bias);
    }
  }
  std::vector<Module> modules;
  for (auto& [key, module] : by_key) {
    std::sort(module.addresses.begin(), module.addresses.end());
    module.addresses.erase(
        std::unique(module.addresses.begin(), module.addresses.end()),
        module.addresses.end());
    modules.push_back(std::move(module));
  }
  return modules;
}

// CPU seconds of `tool` (its command line before the object and the
// addresses) over every module, run as child processes.
double RunTool(const std::vector<Module>& modules, const std::string& tool,
               const std::string& object_flag, const std::string& scratch) {
  const double before = CpuSeconds(RUSAGE_CHILDREN);
  for (size_t i = 0; i < modules.size(); ++i) {
    const Module& module = modules[i];
    const std::string input = absl::StrCat(scratch, "/addresses.", i);
    {
      std::ofstream out(input);
      for (uint64_t address : module.addresses) {
        out << absl::StrFormat("0x%x\n", address - module.info.load_bias);
      }
    }
    const std::string command =
        absl::StrCat(tool, " ", object_flag, "'", module.info.path, "' < '",
                     input, "' > /dev/null 2>&1");
    if (std::system(command.c_str()) != 0) {
      std::fprintf(stderr, "failed: %s\n", command.c_str());
    }
  }
  return CpuSeconds(RUSAGE_CHILDREN) - before;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

int Main(int argc, char** argv) {
  int reps = 3;
  std::vector<std::string> profiles;
  for (int i = 1; i < argc; ++i) {
    if (absl::StartsWith(argv[i], "--reps=")) {
      reps = std::max(1, std::atoi(argv[i] + 7));
    } else {
      profiles.push_back(argv[i]);
    }
  }
  if (profiles.empty()) {
    std::fprintf(stderr, "usage: %s [--reps=N] PROFILE.pb.gz...\n", argv[0]);
    return 2;
  }
  const std::vector<Module> modules = ModulesOf(profiles);
  size_t addresses = 0;
  for (const Module& module : modules) addresses += module.addresses.size();
  char scratch[] = "/tmp/symbolizer_benchmark.XXXXXX";
  if (mkdtemp(scratch) == nullptr) return 2;

  std::vector<double> cold, warm, llvm, addr2line;
  size_t resolved = 0, frames = 0;
  for (int rep = 0; rep < reps; ++rep) {
    SymbolizerOptions options;
    options.use_debuginfod = false;  // local files only, as the tools
    double start = CpuSeconds(RUSAGE_SELF);
    std::unique_ptr<Symbolizer> symbolizer = Symbolizer::Create(options);
    resolved = frames = 0;
    for (const Module& module : modules) {
      for (uint64_t address : module.addresses) {
        std::vector<SymbolizedFrame> result =
            symbolizer->Symbolize(module.info, address);
        resolved += !result.empty();
        frames += result.size();
      }
    }
    cold.push_back(CpuSeconds(RUSAGE_SELF) - start);
    start = CpuSeconds(RUSAGE_SELF);
    for (const Module& module : modules) {
      for (uint64_t address : module.addresses) {
        symbolizer->Symbolize(module.info, address);
      }
    }
    warm.push_back(CpuSeconds(RUSAGE_SELF) - start);
    llvm.push_back(RunTool(modules,
                           "/usr/lib/llvm-14/bin/llvm-symbolizer --inlining "
                           "--demangle --functions=linkage",
                           "--obj=", scratch));
    addr2line.push_back(RunTool(modules, "addr2line -f -i -C", "-e ", scratch));
  }
  std::string rm = absl::StrCat("rm -rf '", scratch, "'");
  std::system(rm.c_str());

  // What each module's index costs, alone.
  for (const Module& module : modules) {
    SymbolizerOptions options;
    options.use_debuginfod = false;
    std::unique_ptr<Symbolizer> alone = Symbolizer::Create(options);
    for (uint64_t address : module.addresses) {
      alone->Symbolize(module.info, address);
    }
    std::printf(
        "  %-40s %6zu addresses, cache %7.2f MiB\n",
        module.info.path.substr(module.info.path.rfind('/') + 1).c_str(),
        module.addresses.size(), alone->stats().cache_bytes / 1048576.0);
  }
  const double c = Median(cold), w = Median(warm), l = Median(llvm),
               a = Median(addr2line);
  std::printf(
      "%zu distinct addresses in %zu modules; ringprof resolved %.0f%% "
      "(%.2f frames each)\n",
      addresses, modules.size(), 100.0 * resolved / addresses,
      static_cast<double>(frames) / std::max<size_t>(1, resolved));
  std::printf("  ringprof cold   %8.3f s CPU  (%6.1f us/address)\n", c,
              1e6 * c / addresses);
  std::printf("  ringprof warm   %8.3f s CPU  (%6.3f us/address)\n", w,
              1e6 * w / addresses);
  std::printf(
      "  llvm-symbolizer %8.3f s CPU  -> ringprof cold is %.1fx faster\n", l,
      l / c);
  std::printf(
      "  addr2line       %8.3f s CPU  -> ringprof cold is %.1fx faster\n", a,
      a / c);
  return 0;
}

}  // namespace
}  // namespace collector
}  // namespace ringprof

int main(int argc, char** argv) {
  return ringprof::collector::Main(argc, argv);
}
