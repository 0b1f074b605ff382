// LookUpSymbols must answer what the dynamic loader answers: compared with
// dlsym / dlvsym for the names libringprof.so looks up and for the corner
// cases (IFUNCs, hidden versions, names nobody defines).
#include "emitter/loaded_symbols.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <cstring>
#include <string>

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

}  // namespace
}  // namespace emitter
}  // namespace ringprof
