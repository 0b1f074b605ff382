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
  // The names: the whole string table copied once (the linker already
  // stored each name once), with a NUL after it so that every offset inside
  // it starts a terminated string.
  Elf_Scn* strings_scn = elf_getscn(elf, table_shdr.sh_link);
  GElf_Shdr strings_shdr;
  Elf_Data* strings =
      strings_scn == nullptr ? nullptr : elf_getdata(strings_scn, nullptr);
  if (strings == nullptr || strings->d_buf == nullptr ||
      gelf_getshdr(strings_scn, &strings_shdr) == nullptr ||
      strings_shdr.sh_type != SHT_STRTAB ||
      names_.size() + strings->d_size + 1 > UINT32_MAX) {
    return false;
  }
  const size_t names_base = names_.size();
  const size_t names_size = strings->d_size;
  names_.reserve(names_.size() + names_size + 1);
  names_.append(static_cast<const char*>(strings->d_buf), names_size);
  names_.push_back('\0');
  const size_t count = data->d_size / entry_size;
  for (size_t i = 1; i < count; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
    const int type = GELF_ST_TYPE(sym.st_info);
    if (sym.st_shndx == SHN_UNDEF || type == STT_SECTION || type == STT_FILE ||
        type == STT_TLS || sym.st_name == 0 || sym.st_name >= names_size) {
      continue;
    }
    const bool absolute = sym.st_shndx == SHN_ABS;
    if (!absolute && SectionOf(sym.st_value) < 0) continue;
    const uint32_t name = static_cast<uint32_t>(names_base + sym.st_name);
    if (names_[name] == '\0') continue;
    Symbol symbol;
    symbol.address = sym.st_value;
    symbol.size = sym.st_size;
    symbol.max_end = 0;
    symbol.name = name;
    symbol.order = static_cast<uint32_t>(i);
    symbol.rank = BindingRank(sym);
    symbol.absolute = absolute;
    (sym.st_size > 0 ? sized_ : sizeless_).push_back(symbol);
  }
  return true;
}

namespace {

// Reads the little-endian integer of `bytes` bytes at `p`.
uint64_t ReadLe(const uint8_t* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i)
    value |= static_cast<uint64_t>(p[i]) << (8 * i);
  return value;
}

// The section named `name`, or null.
Elf_Scn* SectionNamed(Elf* elf, const char* name, GElf_Shdr* shdr) {
  size_t names = 0;
  if (elf_getshdrstrndx(elf, &names) != 0) return nullptr;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    if (gelf_getshdr(scn, shdr) == nullptr) continue;
    const char* scn_name = elf_strptr(elf, names, shdr->sh_name);
    if (scn_name != nullptr && strcmp(scn_name, name) == 0 &&
        shdr->sh_type != SHT_NOBITS) {
      return scn;
    }
  }
  return nullptr;
}

}  // namespace

bool SymbolTable::AddFunctionStarts(Elf* elf, bool use_eh_frame_hdr) {
  const char* ident = elf_getident(elf, nullptr);
  if (ident == nullptr || ident[EI_DATA] != ELFDATA2LSB) return false;
  const bool elf64 = ident[EI_CLASS] == ELFCLASS64;
  GElf_Shdr shdr;
  Elf_Scn* eh_frame = SectionNamed(elf, ".eh_frame", &shdr);
  if (eh_frame == nullptr) return false;
  Elf_Data* data = elf_getdata(eh_frame, nullptr);
  if (data == nullptr || data->d_buf == nullptr) return false;
  if (use_eh_frame_hdr && AddFdesOfHeaderTable(elf, shdr, *data)) return true;
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
          AddFde(cie->second, elf64, shdr.sh_addr + (start - base), start,
                 entry.fde.end);
        }
      }
    }
    offset = next;
  }
  return true;
}

bool SymbolTable::AddFde(uint8_t encoding, bool elf64, uint64_t field_address,
                         const uint8_t* start, const uint8_t* end,
                         uint64_t* pc_out) {
  EhReader reader(start, end, elf64);
  uint64_t pc = 0, range = 0;
  const uint8_t application = encoding & 0x70;
  if ((application != DW_EH_PE_absptr && application != DW_EH_PE_pcrel) ||
      (encoding & DW_EH_PE_indirect) != 0 || !reader.Raw(encoding, &pc) ||
      !reader.Raw(encoding & 0x0f, &range)) {
    return false;
  }
  if (application == DW_EH_PE_pcrel) pc += field_address;
  if (pc_out != nullptr) *pc_out = pc;
  if (range > 0 && pc + range > pc) functions_.push_back({pc, pc + range});
  return true;
}

bool SymbolTable::AddFdesOfHeaderTable(Elf* elf, const GElf_Shdr& frame_shdr,
                                       const Elf_Data& frame) {
  // .eh_frame_hdr: version 1, three encodings, the (skipped) .eh_frame
  // pointer, the FDE count, then (start, FDE address) pairs sorted by start,
  // each a 4-byte offset from the header's own address: the table the
  // unwinder searches. Anything else: false (the caller walks .eh_frame).
  const char* ident = elf_getident(elf, nullptr);
  const bool elf64 = ident[EI_CLASS] == ELFCLASS64;
  GElf_Shdr hdr_shdr;
  Elf_Scn* hdr_scn = SectionNamed(elf, ".eh_frame_hdr", &hdr_shdr);
  Elf_Data* hdr = hdr_scn == nullptr ? nullptr : elf_getdata(hdr_scn, nullptr);
  if (hdr == nullptr || hdr->d_buf == nullptr || hdr->d_size < 4) return false;
  const auto* h = static_cast<const uint8_t*>(hdr->d_buf);
  constexpr uint8_t kDatarelSdata4 = DW_EH_PE_datarel | DW_EH_PE_sdata4;
  if (h[0] != 1 || h[3] != kDatarelSdata4 || (h[2] & 0x70) != 0) return false;
  EhReader fields(h + 4, h + hdr->d_size, elf64);
  uint64_t ignored = 0, count = 0;
  if (h[1] == DW_EH_PE_omit || !fields.Raw(h[1], &ignored) ||
      h[2] == DW_EH_PE_omit || !fields.Raw(h[2], &count)) {
    return false;
  }
  const uint8_t* table = fields.position();
  if (count == 0 ||
      count > static_cast<uint64_t>(h + hdr->d_size - table) / 8) {
    return false;
  }
  const auto* base = static_cast<const uint8_t*>(frame.d_buf);
  const uint64_t size = frame.d_size;
  absl::flat_hash_map<uint64_t, int> encodings;  // CIE offset -> encoding
  functions_.reserve(functions_.size() + count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t start =
        hdr_shdr.sh_addr + static_cast<int32_t>(ReadLe(table + 8 * i, 4));
    const uint64_t fde_address =
        hdr_shdr.sh_addr + static_cast<int32_t>(ReadLe(table + 8 * i + 4, 4));
    // The FDE: length, CIE pointer (back from itself), then start, range.
    const uint64_t fde = fde_address - frame_shdr.sh_addr;
    if (fde_address < frame_shdr.sh_addr || fde >= size || size - fde < 8) {
      continue;
    }
    uint64_t length = ReadLe(base + fde, 4);
    uint64_t at = fde + 4;
    int id_bytes = 4;
    if (length == 0xffffffff) {
      if (size - fde < 20) continue;
      length = ReadLe(base + fde + 4, 8);
      at = fde + 12;
      id_bytes = 8;
    }
    if (length < static_cast<uint64_t>(id_bytes) || length > size - at) {
      continue;
    }
    const uint64_t end = at + length;
    const uint64_t cie_pointer = ReadLe(base + at, id_bytes);
    if (cie_pointer == 0 || cie_pointer > at) continue;  // 0: a CIE
    const uint64_t cie = at - cie_pointer;
    auto [it, inserted] = encodings.try_emplace(cie, -1);
    if (inserted) {
      Dwarf_Off next = 0;
      Dwarf_CFI_Entry entry;
      uint8_t encoding;
      if (dwarf_next_cfi(reinterpret_cast<const unsigned char*>(ident),
                         const_cast<Elf_Data*>(&frame), /*eh_frame_p=*/true,
                         cie, &next, &entry) == 0 &&
          dwarf_cfi_cie_p(&entry) && FdeEncoding(entry.cie, elf64, &encoding)) {
        it->second = encoding;
      }
    }
    if (it->second < 0) continue;
    at += id_bytes;
    uint64_t pc = 0;
    const size_t before = functions_.size();
    // The table's start must be the FDE's own: a mismatch is a corrupt
    // table or FDE, and neither is trusted.
    if (AddFde(static_cast<uint8_t>(it->second), elf64, frame_shdr.sh_addr + at,
               base + at, base + end, &pc) &&
        pc != start) {
      functions_.resize(before);
    }
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
  // .eh_frame_hdr's table comes sorted.
  auto by_start = [](const Range& a, const Range& b) {
    return a.start < b.start;
  };
  if (!std::is_sorted(functions_.begin(), functions_.end(), by_start)) {
    std::sort(functions_.begin(), functions_.end(), by_start);
  }
  sized_.shrink_to_fit();
  sizeless_.shrink_to_fit();
  functions_.shrink_to_fit();
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
