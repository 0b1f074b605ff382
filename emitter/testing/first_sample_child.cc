// module_map_first_sample_test's process: a session whose first record is
// made in a signal handler while another thread holds the loader's lock,
// with a library loaded after start. A small program of its own: with only
// a handful of objects loaded at start (no more than the record of them
// holds, loaded_symbols.h), the module table is made where the emitter of a
// typical process makes it.
//
// Usage: first_sample_child sample|record PAYLOAD (RINGPROF_DIR set).
//   sample: the signal handler notes the stack (a frame in PAYLOAD) and
//           creates the ring file, as the CPU sampler's does;
//   record: a first record without a stack creates the file, then a sample
//           in PAYLOAD follows.
// Prints "dl_find_object 0|1", "frame ADDR" and a line "object START SIZE
// PATH" per executable segment loaded at start; exits 0, or 2 when the
// signal handler waited for the loader's lock, 1 on any other failure.
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "emitter/libc_features.h"
#include "emitter/module_map.h"
#include "emitter/runtime.h"
#include "emitter/session.h"

namespace ringprof {
namespace emitter {
namespace {

uint64_t g_frames[1];
bool g_lock_free_lookups = false;

// A sample's part in the module map, as the CPU sampler's handler does it:
// the stack's objects, then the record (which creates the file).
void OnSample(int) {
  if (g_lock_free_lookups) NoteStackModules(g_frames, 1);
  CreatePendingRing();
}

// A first record without a stack: it creates the file.
void OnRecordWithoutStack(int) { CreatePendingRing(); }

// Holds the loader's lock (inside dl_iterate_phdr's callback) from
// construction until Release(), which is false when the bound ran out
// first (something waited for the lock).
class LoaderLockHolder {
 public:
  LoaderLockHolder() : thread_([this] { Hold(); }) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return holding_; });
  }
  bool Release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
      changed_.notify_all();
    }
    thread_.join();
    return !timed_out_;
  }

 private:
  void Hold() {
    dl_iterate_phdr(
        [](dl_phdr_info*, size_t, void* data) {
          auto& self = *static_cast<LoaderLockHolder*>(data);
          std::unique_lock<std::mutex> lock(self.mutex_);
          self.holding_ = true;
          self.changed_.notify_all();
          self.timed_out_ =
              !self.changed_.wait_for(lock, std::chrono::seconds(10),
                                      [&self] { return self.released_; });
          return 1;
        },
        this);
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  bool holding_ = false;
  bool released_ = false;
  bool timed_out_ = false;
  std::thread thread_;
};

int PrintObject(dl_phdr_info* info, size_t, void*) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& phdr = info->dlpi_phdr[i];
    if (phdr.p_type != PT_LOAD || (phdr.p_flags & PF_X) == 0) continue;
    printf("object %llu %llu %s\n",
           static_cast<unsigned long long>(info->dlpi_addr + phdr.p_vaddr),
           static_cast<unsigned long long>(phdr.p_memsz),
           info->dlpi_name != nullptr ? info->dlpi_name : "");
  }
  return 0;
}

void Raise(void (*handler)(int)) {
  struct sigaction action = {};
  action.sa_handler = handler;
  sigaction(SIGUSR1, &action, nullptr);
  raise(SIGUSR1);
}

int Run(bool record_first, const char* payload) {
  dl_iterate_phdr(PrintObject, nullptr);
  StartSession();
  if (!Enabled()) return 1;
  // Loaded after start, before the first sample, which runs in it.
  void* library = dlopen(payload, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return 1;
  void* function = dlsym(library, "PayloadAllocate");
  if (function == nullptr) return 1;
  g_frames[0] = reinterpret_cast<uintptr_t>(function) + 1;
  // Without _dl_find_object the sampled path in a signal handler leaves the
  // stack's objects to a later allocation sample (module_map.h).
  g_lock_free_lookups = HaveDlFindObject();
  printf("dl_find_object %d\nframe %llu\n", g_lock_free_lookups ? 1 : 0,
         static_cast<unsigned long long>(g_frames[0]));
  bool released;
  {
    LoaderLockHolder holder;
    if (record_first) Raise(OnRecordWithoutStack);
    Raise(OnSample);
    released = holder.Release();
  }
  // Not ended (EndSession): its copy of the module map would come last.
  if (!RingFileOpen()) return 1;
  return released ? 0 : 2;
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof

int main(int argc, char** argv) {
  if (argc != 3) return 1;
  const int status =
      ringprof::emitter::Run(strcmp(argv[1], "record") == 0, argv[2]);
  fflush(stdout);
  return status;
}
