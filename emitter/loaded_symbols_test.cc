// LookUpSymbols must answer what the dynamic loader answers: compared with
// dlsym / dlvsym for the names libringprof.so looks up and for the corner
// cases (IFUNCs, hidden versions, names nobody defines).
#include "emitter/loaded_symbols.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace ringprof {
namespace emitter {
namespace {

void* Look(const char* name, SymbolScope scope, const char* version = nullptr,
           const char* object = nullptr) {
  SymbolRequest request{name, scope, version, object};
  LookUpSymbols(&request, 1);
  return request.address;
}

TEST(LoadedSymbolsTest, NextMatchesDlsymNext) {
  // The test binary holds this code, so kNext starts after it, as RTLD_NEXT
  // from here does.
  for (const char* name : {"malloc",
                           "free",
                           "calloc",
                           "realloc",
                           "memalign",
                           "posix_memalign",
                           "aligned_alloc",
                           "malloc_usable_size",
                           "execve",
                           "execvpe",
                           "sigaction",
                           "signal",
                           "setuid",
                           "chroot",
                           "pthread_create",
                           "pthread_setname_np",
                           "_Znwm",
                           "_ZdlPv",
                           "_ZnwmSt11align_val_t",
                           "strlen" /* an IFUNC */,
                           "memcpy" /* two versions */}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(Look(name, SymbolScope::kNext), dlsym(RTLD_NEXT, name));
  }
}

TEST(LoadedSymbolsTest, FirstMatchesDlsymDefault) {
  for (const char* name : {"malloc", "pthread_key_create", "dl_iterate_phdr",
                           "strlen", "memcpy", "gtest_test_only_absent"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(Look(name, SymbolScope::kFirst), dlsym(RTLD_DEFAULT, name));
  }
}

TEST(LoadedSymbolsTest, VersionsMatchDlvsym) {
  // fmemopen@GLIBC_2.2.5 (x86-64; @GLIBC_2.17 on AArch64, glibc's first
  // version there) is the hidden old version, fmemopen@@GLIBC_2.22 the
  // default, with other code; dlsym gives the default one.
  const char* old_version = nullptr;
  for (const char* version : {"GLIBC_2.2.5", "GLIBC_2.17"}) {
    if (dlvsym(RTLD_DEFAULT, "fmemopen", version) != nullptr) {
      old_version = version;
      break;
    }
  }
  ASSERT_NE(old_version, nullptr);
  void* old_fmemopen = Look("fmemopen", SymbolScope::kFirst, old_version);
  ASSERT_NE(old_fmemopen, nullptr);
  EXPECT_EQ(old_fmemopen, dlvsym(RTLD_DEFAULT, "fmemopen", old_version));
  EXPECT_EQ(Look("fmemopen", SymbolScope::kFirst, "GLIBC_2.22"),
            dlvsym(RTLD_DEFAULT, "fmemopen", "GLIBC_2.22"));
  EXPECT_NE(old_fmemopen, Look("fmemopen", SymbolScope::kFirst));
  EXPECT_EQ(Look("_dl_find_object", SymbolScope::kFirst, "GLIBC_2.35"),
            dlvsym(RTLD_DEFAULT, "_dl_find_object", "GLIBC_2.35"));
  EXPECT_EQ(Look("malloc", SymbolScope::kFirst, "GLIBC_9.99"), nullptr);
}

TEST(LoadedSymbolsTest, AbsentNamesAreNull) {
  EXPECT_EQ(Look("mallocx", SymbolScope::kNext), nullptr);
  EXPECT_EQ(Look("no_such_symbol_anywhere", SymbolScope::kFirst), nullptr);
  EXPECT_EQ(NextSymbol("no_such_symbol_anywhere"), nullptr);
}

TEST(LoadedSymbolsTest, ObjectsAreReported) {
  SymbolRequest requests[] = {
      {"malloc", SymbolScope::kNext},
      {"free", SymbolScope::kObjectNamed, nullptr, "libc.so.6"},
      {"free", SymbolScope::kObjectNamed, nullptr, "libnot-loaded.so.1"},
  };
  LookUpSymbols(requests, 3);
  // (Under a sanitizer, the next malloc is its runtime's.)
  ASSERT_NE(requests[0].address, nullptr);
  Dl_info info;
  ASSERT_NE(dladdr(requests[0].address, &info), 0);
  EXPECT_EQ(requests[0].object_base, info.dli_fbase);
  ASSERT_NE(requests[0].object_path, nullptr);
  EXPECT_STREQ(requests[0].object_path, info.dli_fname);
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc, nullptr);
  EXPECT_EQ(requests[1].address, dlsym(libc, "free"));
  dlclose(libc);
  EXPECT_EQ(requests[2].address, nullptr);
  EXPECT_EQ(requests[2].object_path, nullptr);
  EXPECT_TRUE(ObjectLoaded("libc.so.6"));
  EXPECT_FALSE(ObjectLoaded("libnot-loaded.so.1"));
}

TEST(LoadedSymbolsTest, CompileTimeHashesFindTheSameDefinitions) {
  static_assert(GnuSymbolHash("") == 5381, "the GNU hash's seed");
  for (const char* name : {"malloc", "pthread_mutex_lock", "_ZdlPv"}) {
    SCOPED_TRACE(name);
    SymbolRequest hashed{name, SymbolScope::kFirst};
    hashed.gnu_hash = GnuSymbolHash(name);
    LookUpSymbols(&hashed, 1);
    EXPECT_EQ(hashed.address, Look(name, SymbolScope::kFirst));
  }
}

TEST(LoadedSymbolsTest, BeforeSelfSearchesOnlyObjectsAheadOfThisCode) {
  // This code is in the main program, which comes first: nothing is ahead
  // of it, while libc defines malloc behind it.
  EXPECT_EQ(Look("malloc", SymbolScope::kBeforeSelf), nullptr);
  EXPECT_NE(Look("malloc", SymbolScope::kFirst), nullptr);
}

TEST(LoadedSymbolsTest, NothingIsAheadOfTheProgram) {
  // As BeforeSelf finds nothing ahead of this code, the hash-only check
  // answers "certainly not" for names libc defines and names nobody does.
  const uint32_t hashes[] = {GnuSymbolHash("malloc"), GnuSymbolHash("free"),
                             GnuSymbolHash("_Znwm"),
                             GnuSymbolHash("no_such_symbol_anywhere")};
  EXPECT_FALSE(MaybeDefined(SymbolScope::kBeforeSelf, hashes, 4));
  EXPECT_FALSE(MaybeDefined(SymbolScope::kBeforeSelf, hashes, 0));
  // After it, libc defines malloc and free; nobody the made-up name.
  EXPECT_TRUE(MaybeDefined(SymbolScope::kNext, hashes, 4));
  EXPECT_TRUE(MaybeDefined(SymbolScope::kNext, hashes, 1));
  EXPECT_FALSE(MaybeDefined(SymbolScope::kNext, hashes + 3, 1));
  EXPECT_TRUE(MaybeDefined(SymbolScope::kFirst, hashes + 3, 1));  // can't tell
}

std::string PayloadPath() {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* workspace = getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" +
         (workspace ? workspace : "ringprof") +
         "/examples/workloads/libdlopen_payload.so";
}

TEST(LoadedSymbolsTest, ObjectsLoadedAndUnloadedBetweenPassesAreSeen) {
  // The passes reuse what they read of the loaded objects while none is
  // added or removed: a later dlopen and dlclose must show.
  EXPECT_EQ(Look("PayloadAllocate", SymbolScope::kFirst), nullptr);
  void* library = dlopen(PayloadPath().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  void* function = Look("PayloadAllocate", SymbolScope::kFirst);
  EXPECT_NE(function, nullptr);
  EXPECT_EQ(function, dlsym(library, "PayloadAllocate"));
  ASSERT_EQ(dlclose(library), 0);
  EXPECT_EQ(Look("PayloadAllocate", SymbolScope::kFirst), nullptr);
  EXPECT_NE(Look("malloc", SymbolScope::kNext), nullptr);
}

// What the emitter looks up at start and on first use: its wait wrappers'
// table (wait_next.h), allocator, exec and signal interposers, and the names
// nobody defines in a C program.
constexpr const char* kInterposedNames[] = {
    "pthread_mutex_lock",
    "pthread_mutex_trylock",
    "pthread_mutex_timedlock",
    "pthread_mutex_clocklock",
    "pthread_rwlock_rdlock",
    "pthread_rwlock_tryrdlock",
    "pthread_rwlock_timedrdlock",
    "pthread_rwlock_clockrdlock",
    "pthread_rwlock_wrlock",
    "pthread_rwlock_trywrlock",
    "pthread_rwlock_timedwrlock",
    "pthread_rwlock_clockwrlock",
    "pthread_spin_lock",
    "pthread_spin_trylock",
    "pthread_cond_wait" /* two versions */,
    "pthread_cond_timedwait",
    "pthread_cond_clockwait",
    "pthread_join",
    "pthread_testcancel",
    "sem_wait",
    "sem_trywait",
    "sem_timedwait",
    "sem_clockwait",
    "nanosleep",
    "clock_nanosleep",
    "poll",
    "__poll_chk",
    "ppoll",
    "__ppoll_chk",
    "select",
    "pselect",
    "epoll_wait",
    "epoll_pwait",
    "wait",
    "waitpid",
    "wait4",
    "read",
    "__read_chk",
    "readv",
    "pread",
    "pread64",
    "recv",
    "__recv_chk",
    "recvfrom",
    "recvmsg",
    "write",
    "writev",
    "send",
    "sendto",
    "sendmsg",
    "accept",
    "accept4",
    "connect",
    "close",
    "dup2",
    "dup3",
    "dup",
    "fclose",
    "pclose",
    "fileno",
    "closedir",
    "dirfd",
    "pipe",
    "pipe2",
    "socket",
    "socketpair",
    "malloc",
    "free",
    "calloc",
    "realloc",
    "memalign",
    "posix_memalign",
    "aligned_alloc",
    "valloc",
    "pvalloc",
    "malloc_usable_size",
    "free_sized",
    "mallocx",
    "sdallocx",
    "_Znwm",
    "_ZdlPv",
    "_ZdaPvSt11align_val_tRKSt9nothrow_t",
    "__libc_start_main",
    "execve",
    "execv",
    "execvp",
    "execvpe",
    "fexecve",
    "execveat",
    "sigaction",
    "signal",
    "sigprocmask",
    "pthread_sigmask",
    "pthread_create",
    "pthread_atfork",
    "strlen" /* an IFUNC */,
    "memcpy" /* two versions */};

SymbolRequest StartLook(const char* name, SymbolScope scope,
                        const char* version = nullptr) {
  SymbolRequest request{name, scope, version};
  request.gnu_hash = GnuSymbolHash(name);
  EXPECT_TRUE(LookUpStartSymbols(&request, 1));
  return request;
}

TEST(LoadedSymbolsTest, StartObjectsAnswerAsTheLoaderDoes) {
  ASSERT_TRUE(RecordStartObjects());
  ASSERT_TRUE(RecordStartObjects());  // once is enough; again is a no-op
  for (const char* name : kInterposedNames) {
    SCOPED_TRACE(name);
    for (SymbolScope scope : {SymbolScope::kNext, SymbolScope::kFirst,
                              SymbolScope::kBeforeSelf, SymbolScope::kSelf}) {
      const SymbolRequest start = StartLook(name, scope);
      SymbolRequest live{name, scope};
      LookUpSymbols(&live, 1);
      EXPECT_EQ(start.address, live.address);
      EXPECT_EQ(start.object_base, live.object_base);
    }
    EXPECT_EQ(StartLook(name, SymbolScope::kNext).address,
              dlsym(RTLD_NEXT, name));
    EXPECT_EQ(StartLook(name, SymbolScope::kFirst).address,
              dlsym(RTLD_DEFAULT, name));
  }
  // Versions as dlvsym picks them; several requests in one call, more of
  // them than it keeps hashes for.
  // (x86-64: fmemopen@GLIBC_2.2.5 and @@GLIBC_2.22, memcpy@GLIBC_2.2.5 and
  // @@GLIBC_2.14; AArch64: each only at GLIBC_2.17.)
  const char* const kVersions[] = {"GLIBC_2.2.5", "GLIBC_2.14", "GLIBC_2.17",
                                   "GLIBC_2.22"};
  SymbolRequest requests[12];
  for (int i = 0; i < 12; ++i) {
    requests[i] = {i % 2 == 0 ? "fmemopen" : "memcpy", SymbolScope::kFirst,
                   kVersions[(i / 2) % 4]};
  }
  ASSERT_TRUE(LookUpStartSymbols(requests, 12));
  for (const SymbolRequest& request : requests) {
    SCOPED_TRACE(std::string(request.name) + "@" + request.version);
    EXPECT_EQ(request.address,
              dlvsym(RTLD_DEFAULT, request.name, request.version));
  }
  EXPECT_EQ(StartLook("malloc", SymbolScope::kFirst, "GLIBC_9.99").address,
            nullptr);
  EXPECT_EQ(NextSymbol("sigaction"), dlsym(RTLD_NEXT, "sigaction"));
}

TEST(LoadedSymbolsTest, StartObjectsLeaveOutWhatWasLoadedSince) {
  ASSERT_TRUE(RecordStartObjects());
  void* library = dlopen(PayloadPath().c_str(), RTLD_NOW | RTLD_GLOBAL);
  ASSERT_NE(library, nullptr) << dlerror();
  EXPECT_NE(Look("PayloadAllocate", SymbolScope::kFirst), nullptr);
  EXPECT_EQ(StartLook("PayloadAllocate", SymbolScope::kFirst).address, nullptr);
  SymbolRequest at_start{"PayloadAllocate", SymbolScope::kFirst};
  LookUpSymbolsAtStart(&at_start, 1);
  EXPECT_EQ(at_start.address, nullptr);
  EXPECT_EQ(StartLook("malloc", SymbolScope::kFirst).address,
            dlsym(RTLD_DEFAULT, "malloc"));
  ASSERT_EQ(dlclose(library), 0);
}

TEST(LoadedSymbolsTest, StartObjectsNeedNoLoaderLock) {
  // One thread holds the loader's lock (inside dl_iterate_phdr's callback)
  // until another has looked a name up: a lookup that took the lock would
  // never finish (the wait below is only a bound on the failure).
  ASSERT_TRUE(RecordStartObjects());
  struct Shared {
    std::mutex mutex;
    std::condition_variable changed;
    bool holding = false;
    bool looked_up = false;
  } shared;
  std::thread holder([&shared] {
    dl_iterate_phdr(
        [](dl_phdr_info*, size_t, void* data) {
          Shared& s = *static_cast<Shared*>(data);
          std::unique_lock<std::mutex> lock(s.mutex);
          s.holding = true;
          s.changed.notify_all();
          s.changed.wait_for(lock, std::chrono::seconds(30),
                             [&s] { return s.looked_up; });
          return 1;
        },
        &shared);
  });
  {
    std::unique_lock<std::mutex> lock(shared.mutex);
    shared.changed.wait(lock, [&shared] { return shared.holding; });
  }
  const SymbolRequest found =
      StartLook("pthread_cond_wait", SymbolScope::kNext);
  {
    std::lock_guard<std::mutex> lock(shared.mutex);
    shared.looked_up = true;
    shared.changed.notify_all();
  }
  holder.join();
  EXPECT_EQ(found.address, dlsym(RTLD_NEXT, "pthread_cond_wait"));
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof
