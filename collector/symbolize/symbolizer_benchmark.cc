// Symbolizer throughput on this benchmark's own executable: the collector's
// steady state (every address already cached) against first-time
// resolution through libdwfl, and against a naive cache (a hash map of
// frame vectors, copied out on every lookup).
// Run by tools/bench.d/symbolizer.
#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "benchmark/benchmark.h"
#include "collector/symbolize/symbolizer.h"

namespace ringprof {
namespace collector {
namespace {

constexpr int kAddresses = 4096;

struct Executable {
  ModuleInfo module;
  std::vector<uint64_t> addresses;  // spread over the executable segment
};

int FindTextSegment(struct dl_phdr_info* info, size_t, void* data) {
  auto* executable = static_cast<Executable*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& phdr = info->dlpi_phdr[i];
    if (phdr.p_type != PT_LOAD || (phdr.p_flags & PF_X) == 0) continue;
    executable->module.load_bias = info->dlpi_addr;
    executable->module.start = info->dlpi_addr + phdr.p_vaddr;
    executable->module.size = phdr.p_memsz;
    executable->module.file_offset = phdr.p_offset;
    return 1;  // the main program comes first
  }
  return 0;
}

const Executable& Self() {
  static const Executable* const self = [] {
    auto* executable = new Executable;
    dl_iterate_phdr(FindTextSegment, executable);
    char path[4096];
    ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
    executable->module.path.assign(path, length > 0 ? length : 0);
    executable->module.pid = static_cast<uint32_t>(getpid());
    const uint64_t step = executable->module.size / kAddresses;
    for (int i = 0; i < kAddresses; ++i) {
      executable->addresses.push_back(executable->module.start + i * step);
    }
    return executable;
  }();
  return *self;
}

void BM_SymbolizeCached(benchmark::State& state) {
  const Executable& self = Self();
  auto symbolizer = Symbolizer::Create({});
  size_t frames = 0;
  for (uint64_t address : self.addresses) {
    frames += symbolizer->Symbolize(self.module, address).size();
  }
  size_t next = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        symbolizer->Symbolize(self.module, self.addresses[next]));
    next = (next + 1) % self.addresses.size();
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["resolved_share"] =
      1.0 - static_cast<double>(symbolizer->misses()) / kAddresses;
  state.counters["frames_per_address"] =
      static_cast<double>(frames) / kAddresses;
}
BENCHMARK(BM_SymbolizeCached);

void BM_SymbolizeFirstTime(benchmark::State& state) {
  const Executable& self = Self();
  for (auto _ : state) {
    // One symbolizer per pass over the addresses: opening the module is
    // part of the cost, as it is for the collector.
    auto symbolizer = Symbolizer::Create({});
    for (uint64_t address : self.addresses) {
      benchmark::DoNotOptimize(symbolizer->Symbolize(self.module, address));
    }
  }
  state.SetItemsProcessed(state.iterations() * self.addresses.size());
}
BENCHMARK(BM_SymbolizeFirstTime)->Unit(benchmark::kMillisecond);

void BM_HashMapCopyBaseline(benchmark::State& state) {
  const Executable& self = Self();
  auto symbolizer = Symbolizer::Create({});
  absl::flat_hash_map<uint64_t, std::vector<SymbolizedFrame>> map;
  for (uint64_t address : self.addresses) {
    map[address] = symbolizer->Symbolize(self.module, address);
  }
  size_t next = 0;
  for (auto _ : state) {
    std::vector<SymbolizedFrame> copy = map.find(self.addresses[next])->second;
    benchmark::DoNotOptimize(copy);
    next = (next + 1) % self.addresses.size();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HashMapCopyBaseline);

}  // namespace
}  // namespace collector
}  // namespace ringprof

BENCHMARK_MAIN();
