// SymbolTable: a sorted address → function index of one ELF, built once
// per build-id so each lookup is a binary search (libdwfl's
// dwfl_module_addrinfo scans the whole symbol table per address: on
// libLLVM's 100,000 symbols that cost more CPU than the profiled compile).
//
// It holds the symbols of the ELF's .symtab (or .dynsym) that lie in
// executable sections, and, for binaries stripped to .dynsym, the function
// ranges that .eh_frame describes (unnamed: Lookup then reports only the
// function's start). The symbol table's string table is copied into one
// owned buffer; nothing points into the ELF afterwards.
//
// The choice among symbols is libdwfl's: the sized global or weak symbol
// containing the address with the highest start (then the strongest
// binding, then the largest size, then the first in the table), else the
// same among local symbols; without one, the closest sizeless symbol (an
// assembly label) in the same section that no sized symbol ends after.
//
// Thread-compatible; immutable (and so safe to share) once Finish() ran.
#ifndef RINGPROF_COLLECTOR_SYMBOLIZE_SYMBOL_TABLE_H_
#define RINGPROF_COLLECTOR_SYMBOLIZE_SYMBOL_TABLE_H_

#include <gelf.h>
#include <libelf.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ringprof {
namespace collector {

class SymbolTable {
 public:
  // Adds the symbols of `elf`'s section of `section_type` (SHT_SYMTAB or
  // SHT_DYNSYM). False when there is no such section.
  bool AddSymbols(Elf* elf, uint32_t section_type);

  // Adds the functions .eh_frame describes (FDE ranges): those that
  // .eh_frame_hdr's search table lists when it has the usual layout (no
  // walk over .eh_frame, no sort), else every FDE of .eh_frame (also with
  // `use_eh_frame_hdr` false). False without a usable .eh_frame. Only
  // little-endian ELF.
  bool AddFunctionStarts(Elf* elf, bool use_eh_frame_hdr = true);

  // Sorts; call once after the Add calls and before Lookup.
  void Finish();

  struct Hit {
    const char* name = nullptr;  // null: only the function's start is known
    uint64_t start = 0;
  };
  // What covers `address` (an ELF virtual address); false when nothing does.
  bool Lookup(uint64_t address, Hit* hit) const;

  size_t symbols() const { return sized_.size() + sizeless_.size(); }
  size_t function_starts() const { return functions_.size(); }
  // Heap bytes held.
  size_t bytes() const;

 private:
  struct Symbol {
    uint64_t address;
    uint64_t size;
    uint64_t max_end;  // sized_: largest end of this and earlier symbols
    uint32_t name;     // offset into names_
    uint32_t order;    // position in the ELF table: the earlier wins a tie
    uint8_t rank;      // binding: 3 global, 2 weak, 1 local, 0 other
    bool absolute;     // SHN_ABS: matches its exact address only
  };
  struct Range {
    uint64_t start;
    uint64_t end;
  };

  // Adds the range of the FDE whose start field is at `start` (in memory)
  // and `field_address` (its ELF address), bytes up to `end`, fields in
  // `encoding`; `pc` (optional) gets its start. False when the fields
  // cannot be read.
  bool AddFde(uint8_t encoding, bool elf64, uint64_t field_address,
              const uint8_t* start, const uint8_t* end, uint64_t* pc = nullptr);
  // The FDEs .eh_frame_hdr's table lists; false without a usable table.
  bool AddFdesOfHeaderTable(Elf* elf, const GElf_Shdr& frame_shdr,
                            const Elf_Data& frame);
  // Index of the executable section containing `address`, or -1.
  int SectionOf(uint64_t address) const;
  void AddSections(Elf* elf);

  std::vector<Symbol> sized_;
  std::vector<Symbol> sizeless_;
  std::vector<Range> functions_;  // from .eh_frame
  std::vector<Range> sections_;   // executable sections, sorted
  std::string names_;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SYMBOLIZE_SYMBOL_TABLE_H_
