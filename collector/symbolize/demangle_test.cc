#include "collector/symbolize/demangle.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

std::string Demangled(const char* name) {
  std::string out = "(not demangled)";
  Demangle(name, &out);
  return out;
}

// Names from programs built by rustc 1.95 (std-only, -O and -C
// opt-level=0); the expected text is what rustfilt prints, which for v0
// LLVM's llvm-cxxfilt prints too.
TEST(DemangleTest, RustLegacyNamesAsRustfiltPrintsThem) {
  EXPECT_EQ(Demangled("_ZN5churn9churn_map17ha6c73bb49ed6f118E"),
            "churn::churn_map");
  EXPECT_EQ(Demangled("_ZN4core5slice3cmp81_$LT$impl$u20$core..cmp.."
                      "PartialEq$LT$$u5b$U$u5d$$GT$$u20$for$u20$$u5b$T$u5d$"
                      "$GT$2eq17ha17fd8437ec7a96fE"),
            "core::slice::cmp::<impl core::cmp::PartialEq<[U]> for [T]>::eq");
  EXPECT_EQ(Demangled("_ZN46_$LT$churn..Square$u20$as$u20$churn..Shape$GT$"
                      "4area17h0d06fa6792f745e4E"),
            "<churn::Square as churn::Shape>::area");
  EXPECT_EQ(Demangled("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$"
                      "17ha215d1b7a97f030eE"),
            "std::rt::lang_start::{{closure}}");
  // LLVM's local-symbol suffix is dropped, as rustfilt drops it.
  EXPECT_EQ(Demangled("_ZN5churn9churn_map17ha6c73bb49ed6f118E.llvm.5553"),
            "churn::churn_map");
}

TEST(DemangleTest, RustV0NamesAsRustfiltPrintsThem) {
  EXPECT_EQ(Demangled("_RNvCsdPXbkOLhrRO_5churn9churn_map"),
            "churn::churn_map");
  EXPECT_EQ(Demangled("_RNvXNtNtCsgEmfK2I1SDS_4core5slice3cmpSmNtNtB6_3cmp9"
                      "PartialEq2eqCsdPXbkOLhrRO_5churn"),
            "<[u32] as core::cmp::PartialEq>::eq");
  EXPECT_EQ(Demangled("_RNvXs7_NtNtCsgEmfK2I1SDS_4core3cmp5implsRSmNtB7_9"
                      "PartialEq2eqCsdPXbkOLhrRO_5churn"),
            "<&[u32] as core::cmp::PartialEq>::eq");
  EXPECT_EQ(
      Demangled("_RINvCsdPXbkOLhrRO_5churn12generic_workNtB2_6SquareEB2_"),
      "churn::generic_work::<churn::Square>");
  EXPECT_EQ(Demangled("_RINvMNtCsgEmfK2I1SDS_4core6optionINtB3_6OptionNtNtCsl"
                      "NYArtu3iFV_5alloc6string6StringE8and_thendNCNvCsdPXbkOL"
                      "hrRO_5churn4main0EB1z_"),
            "<core::option::Option<alloc::string::String>>::and_then::<f64, "
            "churn::main::{closure#0}>");
  // Punycode identifiers (fn grüße) and LLVM's suffixes.
  EXPECT_EQ(Demangled("_RNvCs4eYjyvNHrqb_3uniu9gre_6ka8l"), "uni::grüße");
  EXPECT_EQ(Demangled("_RNvCsdPXbkOLhrRO_5churn9churn_map.llvm.1234"),
            "churn::churn_map");
}

TEST(DemangleTest, CxxNamesAsCxxFiltPrintsThem) {
  EXPECT_EQ(Demangled("_ZN13ringprof_test6MiddleEi"),
            "ringprof_test::Middle(int)");
  EXPECT_EQ(Demangled("_ZN13ringprof_test5InnerIlEEPvT_"),
            "void* ringprof_test::Inner<long>(long)");
  // A C++ function whose last name part looks like a Rust hash but is not
  // one (Rust's hash has at least 5 distinct hex digits) stays C++.
  EXPECT_EQ(Demangled("_ZN1a17h0000000000000000E"), "a::h0000000000000000");
}

TEST(DemangleTest, PlainNamesAreNotDemangled) {
  for (const char* name : {"main", "malloc", "", "_R", "_Rfoo", "_ZN",
                           "_ZN4main9churn_map17hE", "_RNvC", "_R\xff"}) {
    std::string out = "unchanged";
    EXPECT_FALSE(Demangle(name, &out)) << name;
    EXPECT_EQ(out, "unchanged");
  }
}

// "_RINvC1a1b" <types> "E": a function whose generic arguments are pairs,
// each pair's halves back-references to the pair before it: the last of
// `depth` + 1 pairs prints 2^depth copies of `(u8, u8)`.
std::string ExponentialV0Name(int depth) {
  auto backref = [](size_t position) {
    const char* digits =
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    if (position == 0) return std::string("_");
    std::string encoded;
    for (size_t n = position - 1;; n /= 62) {
      encoded.insert(encoded.begin(), digits[n % 62]);
      if (n < 62) break;
    }
    return encoded + "_";
  };
  std::string body = "INvC1a1b";
  size_t inner = body.size();
  body += "ThhE";
  for (int i = 0; i < depth; ++i) {
    const size_t here = body.size();
    body += "TB" + backref(inner) + "B" + backref(inner) + "E";
    inner = here;
  }
  return "_R" + body + "E";
}

TEST(DemangleTest, ExponentialV0NamesStopAtTheCap) {
  // 2^11 pairs and their predecessors print 49 KiB: under the cap.
  std::string out;
  ASSERT_TRUE(Demangle(ExponentialV0Name(11).c_str(), &out));
  EXPECT_GT(out.size(), size_t{32} << 10);
  EXPECT_LE(out.size(), kMaxDemangledBytes);
  EXPECT_EQ(out.substr(0, 40), "a::b::<(u8, u8), ((u8, u8), (u8, u8)), (");
  // 2^13 pairs would print 160 KiB; 2^64, what no machine can. Both stop
  // once the cap is reached (an unbounded demangler never returns here).
  for (int depth : {13, 64, 200}) {
    std::string bomb = ExponentialV0Name(depth);
    out = "unchanged";
    EXPECT_FALSE(Demangle(bomb.c_str(), &out)) << depth;
    EXPECT_EQ(out, "unchanged");
  }
}

TEST(DemangleTest, OverlongLegacyNamesAreLeftToTheCxxDemangler) {
  // Over half the cap, a legacy name is not read as Rust (its output could
  // pass the cap): what it shows is what the Itanium demangler makes of it.
  const std::string segment(kMaxDemangledBytes / 2, 'a');
  for (const std::string& name : {"_ZN" + std::to_string(segment.size()) +
                                      segment + "17ha6c73bb49ed6f118E",
                                  "_ZN5churn" + std::to_string(segment.size()) +
                                      segment + "17ha6c73bb49ed6f118E"}) {
    std::string out;
    int status = 0;
    char* cxx = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    EXPECT_EQ(Demangle(name.c_str(), &out), cxx != nullptr);
    if (cxx != nullptr) EXPECT_EQ(out, cxx);
    std::free(cxx);
  }
}

// Counts the C++ names in `path`'s .symtab that demangle exactly as
// abi::__cxa_demangle alone demangles them (a name that differs fails).
size_t CompareWithCxxDemangler(const std::string& path) {
  elf_version(EV_CURRENT);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0) << path;
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  EXPECT_NE(elf, nullptr) << path;
  size_t compared = 0;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_SYMTAB) {
      continue;
    }
    Elf_Data* data = elf_getdata(scn, nullptr);
    for (size_t i = 0; data != nullptr && i < shdr.sh_size / shdr.sh_entsize;
         ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
      const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (name == nullptr || name[0] != '_' || name[1] != 'Z') continue;
      int status = 0;
      char* expected = abi::__cxa_demangle(name, nullptr, nullptr, &status);
      std::string actual;
      EXPECT_EQ(Demangle(name, &actual), expected != nullptr) << name;
      if (expected != nullptr) {
        EXPECT_EQ(actual, expected) << name;
        ++compared;
      }
      std::free(expected);
    }
  }
  elf_end(elf);
  close(fd);
  return compared;
}

// Every C++ name of the C++ test programs (this test, with gtest, gmock and
// libstdc++ templates; the symbolizer's test program) demangles exactly as
// before Rust was demangled: the Rust demangler tried first takes none.
TEST(DemangleTest, CxxNamesOfTheTestProgramsAreUnchanged) {
  EXPECT_GT(CompareWithCxxDemangler("/proc/self/exe"), 1000u);
  const std::string program =
      std::string(getenv("TEST_SRCDIR")) +
      "/ringprof/collector/symbolize/testdata/symbolizer/"
      "symbolizer_test_program";
  EXPECT_GE(CompareWithCxxDemangler(program), 5u);
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
