#include "collector/symbolize/symbol_table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include <algorithm>
#include <cstring>
#include <tuple>

#include "absl/container/flat_hash_map.h"

namespace ringprof {
namespace collector {
namespace {

uint8_t BindingRank(const GElf_Sym& sym) {
  switch (GELF_ST_BIND(sym.st_info)) {
    case STB_GLOBAL:
      return 3;
    case STB_WEAK:
      return 2;
    case STB_LOCAL:
      return 1;
    default:
      return 0;
  }
}

// Reads pointer-encoded values (DW_EH_PE_*) from .eh_frame bytes in
// [*p, end), little-endian. False on anything it does not handle.
class EhReader {
 public:
  EhReader(const uint8_t* p, const uint8_t* end, bool elf64)
      : p_(p), end_(end), elf64_(elf64) {}

  const uint8_t* position() const { return p_; }

  bool Uleb(uint64_t* value) {
    *value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return false;
      const uint8_t byte = *p_++;
      *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }

  // The value of one encoded field, without applying pc-relativity.
  bool Raw(uint8_t encoding, uint64_t* value) {
    switch (encoding & 0x0f) {
      case DW_EH_PE_absptr:
        return elf64_ ? Fixed(8, false, value) : Fixed(4, false, value);
      case DW_EH_PE_udata2:
        return Fixed(2, false, value);
      case DW_EH_PE_sdata2:
        return Fixed(2, true, value);
      case DW_EH_PE_udata4:
        return Fixed(4, false, value);
      case DW_EH_PE_sdata4:
        return Fixed(4, true, value);
      case DW_EH_PE_udata8:
      case DW_EH_PE_sdata8:
        return Fixed(8, false, value);
      case DW_EH_PE_uleb128:
        return Uleb(value);
      case DW_EH_PE_sleb128: {
        uint64_t raw = 0;
        int shift = 0;
        uint8_t byte = 0;
        do {
          if (p_ >= end_ || shift >= 64) return false;
          byte = *p_++;
          raw |= static_cast<uint64_t>(byte & 0x7f) << shift;
          shift += 7;
        } while (byte & 0x80);
        if (shift < 64 && (byte & 0x40)) raw |= ~uint64_t{0} << shift;
        *value = raw;
        return true;
      }
      default:
        return false;
    }
  }

  bool Skip(size_t bytes) {
    if (static_cast<size_t>(end_ - p_) < bytes) return false;
    p_ += bytes;
    return true;
  }

 private:
  bool Fixed(int bytes, bool is_signed, uint64_t* value) {
    if (end_ - p_ < bytes) return false;
    uint64_t raw = 0;
    for (int i = 0; i < bytes; ++i) {
      raw |= static_cast<uint64_t>(p_[i]) << (8 * i);
    }
    p_ += bytes;
    if (is_signed && bytes < 8 && (raw >> (8 * bytes - 1)) & 1) {
      raw |= ~uint64_t{0} << (8 * bytes);
    }
    *value = raw;
    return true;
  }

  const uint8_t* p_;
  const uint8_t* end_;
  bool elf64_;
};

// The FDE pointer encoding a CIE's augmentation declares ('R'); absptr
// when it declares none; false for augmentations we cannot skip.
bool FdeEncoding(const Dwarf_CIE& cie, bool elf64, uint8_t* encoding) {
  *encoding = DW_EH_PE_absptr;
  const char* aug = cie.augmentation;
  if (aug == nullptr || aug[0] == '\0') return true;
  if (aug[0] != 'z' || cie.augmentation_data == nullptr) return false;
  EhReader data(cie.augmentation_data,
                cie.augmentation_data + cie.augmentation_data_size, elf64);
  for (const char* c = aug + 1; *c != '\0'; ++c) {
    switch (*c) {
      case 'R': {
        const uint8_t* at = data.position();
        if (!data.Skip(1)) return false;
        *encoding = *at;
        return true;  // what follows does not matter here
      }
      case 'P': {
        const uint8_t* at = data.position();
        if (!data.Skip(1)) return false;
        uint64_t ignored;
        if (!data.Raw(*at, &ignored)) return false;
        break;
      }
      case 'L':
        if (!data.Skip(1)) return false;
        break;
      case 'S':
      case 'B':
      case 'G':
        break;
      default:
        return false;
    }
  }
  return true;
}

}  // namespace

void SymbolTable::AddSections(Elf* elf) {
  if (!sections_.empty()) return;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    if ((shdr.sh_flags & SHF_ALLOC) && (shdr.sh_flags & SHF_EXECINSTR) &&
        shdr.sh_size > 0 && shdr.sh_addr + shdr.sh_size > shdr.sh_addr) {
      sections_.push_back({shdr.sh_addr, shdr.sh_addr + shdr.sh_size});
    }
  }
  std::sort(sections_.begin(), sections_.end(),
            [](const Range& a, const Range& b) { return a.start < b.start; });
}

int SymbolTable::SectionOf(uint64_t address) const {
  auto it = std::upper_bound(
      sections_.begin(), sections_.end(), address,
      [](uint64_t value, const Range& range) { return value < range.start; });
  if (it == sections_.begin()) return -1;
  --it;
  return address < it->end ? static_cast<int>(it - sections_.begin()) : -1;
}

bool SymbolTable::AddSymbols(Elf* elf, uint32_t section_type) {
  AddSections(elf);
  Elf_Scn* table = nullptr;
  GElf_Shdr table_shdr;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    if (gelf_getshdr(scn, &table_shdr) != nullptr &&
        table_shdr.sh_type == section_type) {
      table = scn;
      break;
    }
  }
  if (table == nullptr) return false;
  Elf_Data* data = elf_getdata(table, nullptr);
  if (data == nullptr) return false;
  const size_t entry_size = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
  if (entry_size == 0) return false;
  const size_t count = data->d_size / entry_size;
  // Names may repeat (aliases at one address, static functions of the
  // same name in many files): store each once.
  absl::flat_hash_map<size_t, uint32_t> stored;
  for (size_t i = 1; i < count; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
    const int type = GELF_ST_TYPE(sym.st_info);
    if (sym.st_shndx == SHN_UNDEF || type == STT_SECTION || type == STT_FILE ||
        type == STT_TLS || sym.st_name == 0) {
      continue;
    }
    const bool absolute = sym.st_shndx == SHN_ABS;
    if (!absolute && SectionOf(sym.st_value) < 0) continue;
    const char* name = elf_strptr(elf, table_shdr.sh_link, sym.st_name);
    if (name == nullptr || name[0] == '\0') continue;
    auto [it, inserted] = stored.try_emplace(sym.st_name, 0);
    if (inserted) {
      it->second = static_cast<uint32_t>(names_.size());
      names_.append(name);
      names_.push_back('\0');
    }
    Symbol symbol;
    symbol.address = sym.st_value;
    symbol.size = sym.st_size;
    symbol.max_end = 0;
    symbol.name = it->second;
    symbol.order = static_cast<uint32_t>(i);
    symbol.rank = BindingRank(sym);
    symbol.absolute = absolute;
    (sym.st_size > 0 ? sized_ : sizeless_).push_back(symbol);
  }
  return true;
}

bool SymbolTable::AddFunctionStarts(Elf* elf) {
  const char* ident = elf_getident(elf, nullptr);
  if (ident == nullptr || ident[EI_DATA] != ELFDATA2LSB) return false;
  const bool elf64 = ident[EI_CLASS] == ELFCLASS64;
  size_t names = 0;
  if (elf_getshdrstrndx(elf, &names) != 0) return false;
  Elf_Scn* eh_frame = nullptr;
  GElf_Shdr shdr;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* name = elf_strptr(elf, names, shdr.sh_name);
    if (name != nullptr && strcmp(name, ".eh_frame") == 0 &&
        shdr.sh_type != SHT_NOBITS) {
      eh_frame = scn;
      break;
    }
  }
  if (eh_frame == nullptr) return false;
  Elf_Data* data = elf_getdata(eh_frame, nullptr);
  if (data == nullptr || data->d_buf == nullptr) return false;
  const auto* base = static_cast<const uint8_t*>(data->d_buf);
  absl::flat_hash_map<Dwarf_Off, uint8_t> encodings;  // by CIE offset
  Dwarf_Off offset = 0;
  while (offset < data->d_size) {
    Dwarf_Off next = 0;
    Dwarf_CFI_Entry entry;
    const int result =
        dwarf_next_cfi(reinterpret_cast<const unsigned char*>(ident), data,
                       /*eh_frame_p=*/true, offset, &next, &entry);
    if (result > 0) break;
    if (next <= offset || next == static_cast<Dwarf_Off>(-1)) break;
    if (result == 0) {
      if (dwarf_cfi_cie_p(&entry)) {
        uint8_t encoding;
        if (FdeEncoding(entry.cie, elf64, &encoding)) {
          encodings[offset] = encoding;
        }
      } else {
        auto cie = encodings.find(entry.fde.CIE_pointer);
        const uint8_t* start = entry.fde.start;
        if (cie != encodings.end() && start >= base &&
            entry.fde.end <= base + data->d_size && start < entry.fde.end) {
          const uint8_t encoding = cie->second;
          EhReader reader(start, entry.fde.end, elf64);
          uint64_t pc = 0, range = 0;
          const uint64_t field_address = shdr.sh_addr + (start - base);
          const uint8_t application = encoding & 0x70;
          if ((application == DW_EH_PE_absptr ||
               application == DW_EH_PE_pcrel) &&
              (encoding & DW_EH_PE_indirect) == 0 &&
              reader.Raw(encoding, &pc) &&
              reader.Raw(encoding & 0x0f, &range)) {
            if (application == DW_EH_PE_pcrel) pc += field_address;
            if (range > 0 && pc + range > pc)
              functions_.push_back({pc, pc + range});
          }
        }
      }
    }
    offset = next;
  }
  return true;
}

void SymbolTable::Finish() {
  // Ascending preference within one address: the walk back meets the most
  // preferred first.
  auto by_address_then_preference = [](const Symbol& a, const Symbol& b) {
    return std::make_tuple(a.address, a.rank, a.size, ~a.order) <
           std::make_tuple(b.address, b.rank, b.size, ~b.order);
  };
  std::sort(sized_.begin(), sized_.end(), by_address_then_preference);
  std::sort(sizeless_.begin(), sizeless_.end(), by_address_then_preference);
  uint64_t max_end = 0;
  for (Symbol& symbol : sized_) {
    max_end = std::max(max_end, symbol.address + symbol.size);
    symbol.max_end = max_end;
  }
  std::sort(functions_.begin(), functions_.end(),
            [](const Range& a, const Range& b) { return a.start < b.start; });
  sized_.shrink_to_fit();
  sizeless_.shrink_to_fit();
  functions_.shrink_to_fit();
  names_.shrink_to_fit();
}

bool SymbolTable::Lookup(uint64_t address, Hit* hit) const {
  // Sized symbols: walking back from the last one starting at or before
  // the address meets the highest start first and, at one start, the
  // strongest binding and largest size first; the walk ends once no
  // earlier symbol reaches the address.
  auto it = std::upper_bound(
      sized_.begin(), sized_.end(), address,
      [](uint64_t value, const Symbol& s) { return value < s.address; });
  const uint64_t reach = it == sized_.begin() ? 0 : std::prev(it)->max_end;
  // Global and weak symbols first; local ones only when none contains the
  // address (libdwfl searches the locals only then).
  for (const uint8_t min_rank : {2, 0}) {
    for (auto j = it; j != sized_.begin();) {
      --j;
      if (j->max_end <= address) break;
      if (j->rank >= min_rank && address - j->address < j->size &&
          (!j->absolute || j->address == address)) {
        *hit = {names_.data() + j->name, j->address};
        return true;
      }
    }
  }
  auto label = std::upper_bound(
      sizeless_.begin(), sizeless_.end(), address,
      [](uint64_t value, const Symbol& s) { return value < s.address; });
  if (label != sizeless_.begin()) {
    --label;
    const bool same_section =
        label->absolute ? label->address == address
                        : SectionOf(label->address) == SectionOf(address) &&
                              SectionOf(address) >= 0;
    if (label->address >= reach && same_section) {
      *hit = {names_.data() + label->name, label->address};
      return true;
    }
  }
  auto function = std::upper_bound(
      functions_.begin(), functions_.end(), address,
      [](uint64_t value, const Range& r) { return value < r.start; });
  if (function != functions_.begin() && address < std::prev(function)->end) {
    *hit = {nullptr, std::prev(function)->start};
    return true;
  }
  return false;
}

size_t SymbolTable::bytes() const {
  return (sized_.capacity() + sizeless_.capacity()) * sizeof(Symbol) +
         (functions_.capacity() + sections_.capacity()) * sizeof(Range) +
         names_.capacity();
}

}  // namespace collector
}  // namespace ringprof
