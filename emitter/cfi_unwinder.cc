#include "emitter/cfi_unwinder.h"

#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstring>

#include "emitter/arch/arch.h"
#include "emitter/large_table.h"
#include "emitter/libc_features.h"

namespace ringprof {
namespace emitter {
namespace {

using arch::kDwarfFp;
using arch::kDwarfReturnAddress;
using arch::kDwarfSp;

uint64_t Load(uint64_t address) {
  uint64_t value;
  memcpy(&value, reinterpret_cast<const void*>(address), 8);
  return value;
}

// A return address as the frame saved it, without its pointer-authentication
// code.
uint64_t LoadReturnAddress(uint64_t address) {
  return arch::StripReturnAddress(Load(address));
}

// ---------------------------------------------------------------------------
// Rules and their cache.

struct Rule {
  // kSignalFrame: the kernel's rt_sigreturn trampoline; the interrupted
  // registers are in the ucontext_t the kernel pushed, at the trampoline
  // frame's stack pointer + arch::kSignalContextOffset.
  enum Kind : uint8_t {
    kUnsupported,
    kOutermost,
    kStep,
    kSignalFrame
  } kind = kUnsupported;
  bool cfa_from_fp = false;
  uint32_t cfa_offset = 0;  // CFA = (fp or sp) + cfa_offset
  uint32_t fp_slot = 0;     // 0: fp unchanged; n: saved at CFA - 8n
  uint32_t ra_slot = 0;     // n: return address at CFA - 8n; 0: in the
                            // link register (arch::kReturnAddressInRegister)
};

// Two words per entry, each tagged with its pc (pc >> 12, 36 bits, in the
// top bits):
//   word 0: tag << 28 | kind << 20 | cfa_from_fp << 19 | cfa_offset (19 bits)
//   word 1: tag << 28 | fp_slot (14 bits) << 14 | ra_slot (14 bits)
// A word is only ever replaced whole, and a reader uses an entry only when
// both words carry its pc's tag. They may have been written by different
// threads, but the rule of a pc is always the same, so they agree. Pcs at
// or above 2^48 are not cached.
constexpr int kCacheBits = 12;
constexpr int kTagShift = 28;
constexpr uint64_t kMaxCfaOffset = (1u << 19) - 1;
constexpr uint32_t kMaxSlot = (1u << 14) - 1;
struct alignas(16) CacheEntry {
  std::atomic<uint64_t> words[2];
};
RINGPROF_LARGE_TABLE CacheEntry g_rule_cache[1 << kCacheBits];

bool Cacheable(uint64_t pc) { return (pc >> 48) == 0 && (pc >> 12) != 0; }

void Encode(uint64_t pc, const Rule& rule, uint64_t words[2]) {
  const uint64_t tag = (pc >> kCacheBits) << kTagShift;
  words[0] = tag | uint64_t{rule.kind} << 20 |
             uint64_t{rule.cfa_from_fp ? 1u : 0u} << 19 | rule.cfa_offset;
  words[1] = tag | uint64_t{rule.fp_slot} << 14 | rule.ra_slot;
}

bool Decode(uint64_t pc, const uint64_t words[2], Rule* rule) {
  const uint64_t tag = pc >> kCacheBits;
  if ((words[0] >> kTagShift) != tag || (words[1] >> kTagShift) != tag) {
    return false;
  }
  rule->kind = static_cast<Rule::Kind>((words[0] >> 20) & 3);
  rule->cfa_from_fp = ((words[0] >> 19) & 1) != 0;
  rule->cfa_offset = static_cast<uint32_t>(words[0] & kMaxCfaOffset);
  rule->fp_slot = static_cast<uint32_t>((words[1] >> 14) & kMaxSlot);
  rule->ra_slot = static_cast<uint32_t>(words[1] & kMaxSlot);
  return true;
}

// ---------------------------------------------------------------------------
// Reading .eh_frame_hdr and .eh_frame (trusted: they belong to an object the
// loader has mapped).

class Reader {
 public:
  Reader(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}
  bool ok() const { return ok_; }
  const uint8_t* position() const { return p_; }
  bool at_end() const { return p_ >= end_; }

  template <typename T>
  T Fixed() {
    T value = 0;
    if (end_ - p_ < static_cast<ptrdiff_t>(sizeof(T))) {
      ok_ = false;
      return value;
    }
    memcpy(&value, p_, sizeof(T));
    p_ += sizeof(T);
    return value;
  }
  uint64_t Uleb() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t byte = Fixed<uint8_t>();
      value |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return value;
    }
    ok_ = false;
    return value;
  }
  int64_t Sleb() {
    int64_t value = 0;
    int shift = 0;
    uint8_t byte;
    do {
      byte = Fixed<uint8_t>();
      value |= int64_t{byte & 0x7f} << shift;
      shift += 7;
    } while ((byte & 0x80) != 0 && shift < 64 && ok_);
    if (shift < 64 && (byte & 0x40) != 0) value |= -(int64_t{1} << shift);
    return value;
  }
  // A DW_EH_PE-encoded pointer; `data_base` for datarel.
  uint64_t Encoded(uint8_t encoding, uint64_t data_base = 0) {
    if (encoding == 0xff) return 0;  // omit
    const uint64_t field = reinterpret_cast<uintptr_t>(p_);
    uint64_t value = 0;
    switch (encoding & 0x0f) {
      case 0x00:
        value = Fixed<uint64_t>();
        break;
      case 0x01:
        value = Uleb();
        break;
      case 0x02:
        value = Fixed<uint16_t>();
        break;
      case 0x03:
        value = Fixed<uint32_t>();
        break;
      case 0x04:
        value = Fixed<uint64_t>();
        break;
      case 0x09:
        value = static_cast<uint64_t>(Sleb());
        break;
      case 0x0a:
        value = static_cast<uint64_t>(int64_t{Fixed<int16_t>()});
        break;
      case 0x0b:
        value = static_cast<uint64_t>(int64_t{Fixed<int32_t>()});
        break;
      case 0x0c:
        value = Fixed<uint64_t>();
        break;
      default:
        ok_ = false;
        return 0;
    }
    switch (encoding & 0x70) {
      case 0x00:
        break;
      case 0x10:
        value += field;
        break;
      case 0x30:
        value += data_base;
        break;
      default:
        ok_ = false;
        return 0;
    }
    if ((encoding & 0x80) != 0) ok_ = false;  // indirect: not for us
    return value;
  }
  void Skip(uint64_t n) {
    if (static_cast<uint64_t>(end_ - p_) < n) {
      ok_ = false;
      p_ = end_;
    } else {
      p_ += n;
    }
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

// Finds the FDE covering pc through the object's .eh_frame_hdr binary
// search table. Returns nullptr when there is none (or an unusual layout).
const uint8_t* FindFde(uint64_t pc) {
  dl_find_object object;
  if (FindObject(reinterpret_cast<void*>(pc), &object) != 0) {
    return nullptr;
  }
  const auto* hdr = static_cast<const uint8_t*>(object.dlfo_eh_frame);
  if (hdr == nullptr || hdr[0] != 1) return nullptr;
  const uint8_t eh_frame_ptr_enc = hdr[1], count_enc = hdr[2],
                table_enc = hdr[3];
  // The linker's layout: a table of (initial location, FDE) sdata4 pairs
  // relative to the header. Anything else: let libgcc handle it.
  if (table_enc != 0x3b) return nullptr;
  Reader reader(hdr + 4, hdr + 4 + 32);
  reader.Encoded(eh_frame_ptr_enc);
  const uint64_t count = reader.Encoded(count_enc);
  if (!reader.ok() || count == 0) return nullptr;
  const auto* table = reinterpret_cast<const int32_t*>(reader.position());
  const int64_t base = reinterpret_cast<intptr_t>(hdr);
  // Last entry with initial location <= pc.
  uint64_t lo = 0, hi = count;
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (static_cast<uint64_t>(base + table[2 * mid]) <= pc) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  if (static_cast<uint64_t>(base + table[2 * lo]) > pc) return nullptr;
  return reinterpret_cast<const uint8_t*>(base + table[2 * lo + 1]);
}

struct Row {
  uint64_t cfa_register = kDwarfSp;
  int64_t cfa_offset = 0;
  bool fp_saved = false;
  int64_t fp_offset = 0;
  bool ra_undefined = false;
  bool ra_saved = false;  // else in its register (the link register)
  int64_t ra_offset = 0;
};

// Runs CFA instructions until the location passes `target`. False for any
// instruction outside the supported subset.
bool Execute(Reader& reader, uint64_t code_align, int64_t data_align,
             uint64_t location, uint64_t target, const Row& initial, Row& row) {
  Row stack[4];
  int depth = 0;
  auto set_offset = [&](uint64_t reg, int64_t offset) {
    if (reg == kDwarfFp) {
      row.fp_saved = true;
      row.fp_offset = offset;
    } else if (reg == kDwarfReturnAddress) {
      row.ra_saved = true;
      row.ra_undefined = false;
      row.ra_offset = offset;
    }
    return true;
  };
  auto restore = [&](uint64_t reg) {
    if (reg == kDwarfFp) {
      row.fp_saved = initial.fp_saved;
      row.fp_offset = initial.fp_offset;
    } else if (reg == kDwarfReturnAddress) {
      row.ra_saved = initial.ra_saved;
      row.ra_offset = initial.ra_offset;
      row.ra_undefined = initial.ra_undefined;
    }
  };
  while (!reader.at_end() && reader.ok()) {
    const uint8_t op = reader.Fixed<uint8_t>();
    const uint8_t high = op & 0xc0, low = op & 0x3f;
    if (high == 0x40) {  // advance_loc
      location += low * code_align;
      if (location > target) return true;
      continue;
    }
    if (high == 0x80) {  // offset
      set_offset(low, static_cast<int64_t>(reader.Uleb()) * data_align);
      continue;
    }
    if (high == 0xc0) {  // restore
      restore(low);
      continue;
    }
    switch (op) {
      case 0x00:  // nop
        break;
      case 0x02:
        location += reader.Fixed<uint8_t>() * code_align;
        if (location > target) return true;
        break;
      case 0x03:
        location += reader.Fixed<uint16_t>() * code_align;
        if (location > target) return true;
        break;
      case 0x04:
        location += reader.Fixed<uint32_t>() * code_align;
        if (location > target) return true;
        break;
      case 0x05: {  // offset_extended
        const uint64_t reg = reader.Uleb();
        set_offset(reg, static_cast<int64_t>(reader.Uleb()) * data_align);
        break;
      }
      case 0x06:  // restore_extended
        restore(reader.Uleb());
        break;
      case 0x07: {  // undefined
        const uint64_t reg = reader.Uleb();
        if (reg == kDwarfReturnAddress) row.ra_undefined = true;
        if (reg == kDwarfFp) return false;
        break;
      }
      case 0x08: {  // same_value
        const uint64_t reg = reader.Uleb();
        if (reg == kDwarfFp) row.fp_saved = false;
        if (reg == kDwarfReturnAddress) {
          if (!arch::kReturnAddressInRegister) return false;
          row.ra_saved = false;
          row.ra_undefined = false;
        }
        break;
      }
      case 0x0a:  // remember_state
        if (depth == 4) return false;
        stack[depth++] = row;
        break;
      case 0x0b:  // restore_state
        if (depth == 0) return false;
        {
          // The CFA rule is part of the state too (DWARF 5 6.4.2.4).
          row = stack[--depth];
        }
        break;
      case 0x0c:  // def_cfa
        row.cfa_register = reader.Uleb();
        row.cfa_offset = static_cast<int64_t>(reader.Uleb());
        break;
      case 0x0d:  // def_cfa_register
        row.cfa_register = reader.Uleb();
        break;
      case 0x0e:  // def_cfa_offset
        row.cfa_offset = static_cast<int64_t>(reader.Uleb());
        break;
      case 0x11: {  // offset_extended_sf
        const uint64_t reg = reader.Uleb();
        set_offset(reg, reader.Sleb() * data_align);
        break;
      }
      case 0x12:  // def_cfa_sf
        row.cfa_register = reader.Uleb();
        row.cfa_offset = reader.Sleb() * data_align;
        break;
      case 0x13:  // def_cfa_offset_sf
        row.cfa_offset = reader.Sleb() * data_align;
        break;
      case 0x2e:  // GNU_args_size
        reader.Uleb();
        break;
      default:
        // Return-address signing (AArch64's negate_ra_state) changes where
        // nothing is: the walker strips every return address it reads.
        if (op == arch::kNegateRaStateOpcode && op != 0) break;
        // Expressions, register-to-register rules, val_* rules, ...
        // Registers we do not track are harmless only for the ops above.
        return false;
    }
  }
  return reader.ok();
}

// A saved register's slot (CFA - 8 * slot) from its CFA-relative offset, or
// 0 when it cannot be one.
uint32_t SlotOf(int64_t offset) {
  if (offset >= 0 || offset % 8 != 0 || -offset / 8 > kMaxSlot) return 0;
  return static_cast<uint32_t>(-offset / 8);
}

// Interprets the CFI covering pc into a Rule.
Rule ComputeRule(uint64_t pc) {
  Rule rule;
  const uint8_t* fde = FindFde(pc);
  if (fde == nullptr) return rule;
  uint32_t fde_length;
  memcpy(&fde_length, fde, 4);
  if (fde_length == 0 || fde_length == 0xffffffff) return rule;
  Reader fde_reader(fde + 4, fde + 4 + fde_length);
  const uint32_t cie_pointer = fde_reader.Fixed<uint32_t>();
  if (cie_pointer == 0) return rule;  // a CIE, not an FDE
  const uint8_t* cie = fde + 4 - cie_pointer;

  uint32_t cie_length;
  memcpy(&cie_length, cie, 4);
  if (cie_length == 0 || cie_length == 0xffffffff) return rule;
  Reader cie_reader(cie + 4, cie + 4 + cie_length);
  if (cie_reader.Fixed<uint32_t>() != 0) return rule;  // CIE id
  const uint8_t version = cie_reader.Fixed<uint8_t>();
  if (version != 1 && version != 3) return rule;
  char augmentation[8];
  size_t n = 0;
  for (char c; (c = static_cast<char>(cie_reader.Fixed<uint8_t>())) != '\0';) {
    if (n + 1 >= sizeof(augmentation) || !cie_reader.ok()) return rule;
    augmentation[n++] = c;
  }
  augmentation[n] = '\0';
  const uint64_t code_align = cie_reader.Uleb();
  const int64_t data_align = cie_reader.Sleb();
  const uint64_t ra_register =
      version == 1 ? cie_reader.Fixed<uint8_t>() : cie_reader.Uleb();
  if (ra_register != kDwarfReturnAddress) return rule;
  uint8_t fde_encoding = 0;
  bool has_augmentation_data = false;
  bool signal_frame = false;
  if (augmentation[0] == 'z') {
    has_augmentation_data = true;
    const uint64_t length = cie_reader.Uleb();
    const uint8_t* data_end = cie_reader.position() + length;
    for (size_t i = 1; i < n; ++i) {
      switch (augmentation[i]) {
        case 'R':
          fde_encoding = cie_reader.Fixed<uint8_t>();
          break;
        case 'P': {
          const uint8_t encoding = cie_reader.Fixed<uint8_t>();
          // The personality pointer's value is not needed; skip it
          // (indirection only changes what it points at, not its size).
          cie_reader.Encoded(encoding & 0x7f);
          break;
        }
        case 'L':
          cie_reader.Fixed<uint8_t>();
          break;
        case 'S':
          signal_frame = true;
          break;
        case 'B':  // AArch64: return addresses signed with the B key
          break;
        default:  // anything unknown
          return rule;
      }
    }
    if (!cie_reader.ok() || cie_reader.position() != data_end) return rule;
  } else if (n != 0) {
    return rule;
  }

  const uint64_t pc_begin = fde_reader.Encoded(fde_encoding);
  const uint64_t pc_range = fde_reader.Encoded(fde_encoding & 0x0f);
  if (!fde_reader.ok() || pc < pc_begin || pc >= pc_begin + pc_range) {
    return rule;
  }
  if (has_augmentation_data) fde_reader.Skip(fde_reader.Uleb());
  if (signal_frame) {
    // Only the kernel's trampoline is understood: rt_sigreturn's
    // instructions at the return address, i.e. at pc + 1. The bytes are
    // inside the FDE's range of a loaded object, so readable.
    if (pc + 1 + sizeof(arch::kSigreturnCode) <= pc_begin + pc_range &&
        memcmp(reinterpret_cast<const void*>(pc + 1), arch::kSigreturnCode,
               sizeof(arch::kSigreturnCode)) == 0) {
      rule.kind = Rule::kSignalFrame;
    }
    return rule;
  }

  Row row;
  if (!Execute(cie_reader, code_align, data_align, 0, ~uint64_t{0}, row, row)) {
    return rule;
  }
  const Row initial = row;
  if (!Execute(fde_reader, code_align, data_align, pc_begin, pc, initial,
               row)) {
    return rule;
  }

  if (row.ra_undefined) {
    rule.kind = Rule::kOutermost;
    return rule;
  }
  if (row.ra_saved) {
    rule.ra_slot = SlotOf(row.ra_offset);
    if (rule.ra_slot == 0) return rule;
  } else if (!arch::kReturnAddressInRegister) {
    return rule;
  }
  if (row.cfa_register != kDwarfSp && row.cfa_register != kDwarfFp) {
    return rule;
  }
  if (row.cfa_offset < arch::kMinCfaOffset ||  // at a function's first insn
      static_cast<uint64_t>(row.cfa_offset) > kMaxCfaOffset) {
    return rule;
  }
  if (row.fp_saved) {
    rule.fp_slot = SlotOf(row.fp_offset);
    if (rule.fp_slot == 0) return rule;
  }
  rule.kind = Rule::kStep;
  rule.cfa_from_fp = row.cfa_register == kDwarfFp;
  rule.cfa_offset = static_cast<uint32_t>(row.cfa_offset);
  return rule;
}

Rule RuleFor(uint64_t pc) {
  if (!Cacheable(pc)) return ComputeRule(pc);
  CacheEntry& entry = g_rule_cache[pc & ((1u << kCacheBits) - 1)];
  uint64_t words[2] = {entry.words[0].load(std::memory_order_relaxed),
                       entry.words[1].load(std::memory_order_relaxed)};
  Rule rule;
  if (Decode(pc, words, &rule)) return rule;
  rule = ComputeRule(pc);
  Encode(pc, rule, words);
  entry.words[0].store(words[0], std::memory_order_relaxed);
  entry.words[1].store(words[1], std::memory_order_relaxed);
  return rule;
}

// Whether the return address `pc` is an rt_sigreturn trampoline without an
// unwind table (musl's __restore_rt): the kernel's trampoline bytes at pc,
// inside an object FindObject knows (so readable).
bool IsUntabledSigreturn(uint64_t pc) {
  dl_find_object object;
  if (FindObject(reinterpret_cast<void*>(pc), &object) != 0) return false;
  return pc + sizeof(arch::kSigreturnCode) <=
             reinterpret_cast<uint64_t>(object.dlfo_map_end) &&
         memcmp(reinterpret_cast<const void*>(pc), arch::kSigreturnCode,
                sizeof(arch::kSigreturnCode)) == 0;
}

// A return address into code with unwind tables, just past a call.
bool IsReturnAddress(uint64_t value, Rule* rule) {
  dl_find_object object;
  // The bytes of the call before it must be on its page (mapped): never
  // read across a page boundary into what may be a hole between segments.
  if ((value & 4095) < static_cast<uint64_t>(arch::kMaxCallBytes) ||
      FindObject(reinterpret_cast<void*>(value), &object) != 0 ||
      object.dlfo_eh_frame == nullptr) {
    return false;
  }
  *rule = RuleFor(value - 1);
  return (rule->kind == Rule::kStep || rule->kind == Rule::kOutermost) &&
         arch::FollowsCall(value);
}

// The stack a walk may read: [sp, stack_high), and not below stack_low.
struct StackBounds {
  uint64_t low;
  uint64_t high;
  bool Holds(uint64_t address, uint64_t sp, uint64_t size = 8) const {
    return address >= sp && address + size <= high &&
           (low == 0 || address >= low);
  }
};

// The registers of the frame being left.
struct Frame {
  uint64_t pc;
  uint64_t sp;
  uint64_t fp;
  uint64_t lr;
  bool lr_known;     // lr holds the link register's value (signal context)
  bool interrupted;  // pc is the interrupted instruction, not a return
};

// ---------------------------------------------------------------------------
// The kernel's signal frame.

// Whether the return address `pc`, outside every object, is an rt_sigreturn
// trampoline (qemu-user maps its own page for it): the stack at `sp` holds
// a signal frame whose saved context names the frame record at `fp` as the
// kernel writes it ({the interrupted x29, x30}), and the trampoline's bytes
// are at pc (read only then: the handler returns there, so it is mapped).
bool IsUnknownSigreturn(const Frame& frame, const StackBounds& stack) {
  if (!arch::kSignalFrameHasFrameRecord) return false;
  dl_find_object object;
  if (FindObject(reinterpret_cast<void*>(frame.pc), &object) == 0) {
    return false;
  }
  const uint64_t context = frame.sp + arch::kSignalContextOffset;
  if (arch::kContextLrOffset < 0 ||
      !stack.Holds(context + arch::kContextFpOffset, frame.sp) ||
      !stack.Holds(context + arch::kContextLrOffset, frame.sp) ||
      frame.fp <= context || !stack.Holds(frame.fp, frame.sp, 16)) {
    return false;
  }
  return Load(frame.fp + arch::kFrameRecordFpOffset) ==
             Load(context + arch::kContextFpOffset) &&
         Load(frame.fp + arch::kFrameRecordRaOffset) ==
             Load(context + arch::kContextLrOffset) &&
         memcmp(reinterpret_cast<const void*>(frame.pc), arch::kSigreturnCode,
                sizeof(arch::kSigreturnCode)) == 0;
}

// Steps from a signal trampoline's frame into the interrupted one.
bool StepIntoInterrupted(Frame& frame, const StackBounds& stack) {
  const uint64_t context = frame.sp + arch::kSignalContextOffset;
  if (!stack.Holds(context + arch::kContextFpOffset, frame.sp) ||
      !stack.Holds(context + arch::kContextSpOffset, frame.sp) ||
      !stack.Holds(context + arch::kContextPcOffset, frame.sp) ||
      (arch::kContextLrOffset >= 0 &&
       !stack.Holds(context + arch::kContextLrOffset, frame.sp))) {
    return false;
  }
  const uint64_t interrupted_sp = Load(context + arch::kContextSpOffset);
  if (interrupted_sp <= context || interrupted_sp >= stack.high) return false;
  frame.fp = Load(context + arch::kContextFpOffset);
  frame.pc = Load(context + arch::kContextPcOffset);
  frame.lr_known = arch::kContextLrOffset >= 0;
  frame.lr = frame.lr_known ? Load(context + arch::kContextLrOffset) : 0;
  frame.sp = interrupted_sp;
  frame.interrupted = true;
  return true;
}

// ---------------------------------------------------------------------------
// musl: frames in code without unwind tables.

// Where a call instruction pushes the return address (x86-64): the nearest
// word above sp that is a return address whose frame unwinds one step
// further to another return address (or is outermost): a stale return
// address left in the libc frame by an earlier call rarely does. A frame
// whose CFA is fp-based needs the program's fp: the register's value `*fp`
// if the libc code left it alone, else one of the words just below the
// return address, where the libc function's prologue pushed the
// callee-saved registers; *fp is updated to the one that fits.
constexpr int kScanWords = 256;
constexpr int kSavedRegisterWords = 6;

bool ScanForReturnAddress(uint64_t sp, uint64_t* fp, const StackBounds& stack,
                          uint64_t* slot, uint64_t* return_address) {
  // Whether the frame of return address slot `at` with `rule` unwinds to
  // another return address when fp is `frame`.
  const auto steps = [&](uint64_t at, const Rule& rule, uint64_t frame) {
    const uint64_t cfa = (rule.cfa_from_fp ? frame : at + 8) + rule.cfa_offset;
    const uint64_t next_at = cfa - 8 * uint64_t{rule.ra_slot};
    if (rule.ra_slot == 0 || cfa <= at + 8 || !stack.Holds(next_at, sp)) {
      return false;
    }
    const uint64_t next = LoadReturnAddress(next_at);
    Rule next_rule;
    return next == 0 || IsReturnAddress(next, &next_rule);
  };
  for (int i = 0; i < kScanWords; ++i) {
    const uint64_t at = sp + 8 * static_cast<uint64_t>(i);
    if (!stack.Holds(at, sp)) break;
    const uint64_t value = LoadReturnAddress(at);
    Rule rule;
    if (!IsReturnAddress(value, &rule)) continue;
    bool fits = rule.kind == Rule::kOutermost || steps(at, rule, *fp);
    for (int k = 1; !fits && rule.cfa_from_fp && k <= kSavedRegisterWords;
         ++k) {
      const uint64_t saved_at = at - 8 * static_cast<uint64_t>(k);
      if (!stack.Holds(saved_at, sp)) break;
      const uint64_t saved = Load(saved_at);
      if (steps(at, rule, saved)) {
        *fp = saved;
        fits = true;
      }
    }
    if (!fits) continue;
    *slot = at;
    *return_address = value;
    return true;
  }
  return false;
}

// Whether `value` is a return address into a known object, just past a
// call (the caller may lack unwind tables itself).
bool IsCallSite(uint64_t value) {
  dl_find_object object;
  return (value & 4095) >= static_cast<uint64_t>(arch::kMaxCallBytes) &&
         FindObject(reinterpret_cast<void*>(value), &object) == 0 &&
         arch::FollowsCall(value);
}

// Whether the frame of return address `pc` (whose rule is `rule`) unwinds
// one step further from CFA `cfa`: the return address it saved there is 0
// (outermost) or another return address just past a call. A stale return
// address, or a wrong CFA, rarely passes.
bool UnwindsFurther(const Rule& rule, uint64_t cfa, uint64_t floor,
                    const StackBounds& stack) {
  if (rule.kind == Rule::kOutermost) return true;
  if (rule.kind != Rule::kStep || rule.ra_slot == 0) return false;
  const uint64_t at = cfa - 8 * uint64_t{rule.ra_slot};
  if (cfa < floor + rule.cfa_offset || !stack.Holds(at, floor)) return false;
  const uint64_t next = LoadReturnAddress(at);
  Rule next_rule;
  return next == 0 || IsReturnAddress(next, &next_rule) || IsCallSite(next);
}

// The interrupted frame of code without unwind tables, where a call leaves
// the return address in the link register (AArch64): a PLT stub, or a leaf
// written in assembly, has touched neither sp nor fp nor the link register,
// which then points just past the call in its caller. A stale link register
// (the untabled function made a call since) points back into the untabled
// code and is not taken. Updates `frame` to the caller.
bool StepThroughLinkRegister(Frame& frame, const StackBounds& stack) {
  if (!arch::kReturnAddressInRegister || !frame.interrupted ||
      !frame.lr_known) {
    return false;
  }
  const uint64_t pc = arch::StripReturnAddress(frame.lr);
  Rule rule;
  if (!IsReturnAddress(pc, &rule)) return false;
  const uint64_t cfa =
      (rule.cfa_from_fp ? frame.fp : frame.sp) + rule.cfa_offset;
  if (!UnwindsFurther(rule, cfa, frame.sp, stack)) return false;
  frame = {pc, frame.sp, frame.fp, 0, false, false};
  return true;
}

// musl on AArch64: its libc keeps frame records but has no unwind tables.
// The interrupted frame's caller is the link register's address when it is
// a call site (a leaf, or a function still in its prologue, returns there;
// one that made calls since has a stale link register pointing back into
// itself, which makes it its own caller once, and its record then leads
// on); any other frame's is the one in the frame record x29 points at (a
// function that made calls). A caller with unwind tables then gets its
// stack pointer from its own rule: its CFA is fp + offset when fp-based, or
// the address of its frame record (its x29) + 8 * the slot its rule saves
// x29 in, or, for code that keeps no frame record (-fomit-frame-pointer),
// the nearest 16-byte-aligned stack pointer above the callee's record from
// which the caller's frame unwinds one step further. Updates `frame` to the
// caller.
constexpr int kScanSlots = kScanWords / 2;  // 16-byte stack slots

// The caller's frame, given its return address `pc`, its fp and the lowest
// address its stack pointer can have.
bool EnterCaller(uint64_t pc, uint64_t fp, uint64_t floor,
                 const StackBounds& stack, Frame& frame) {
  Rule rule;
  if (!IsReturnAddress(pc, &rule)) {
    // Another untabled frame (libc calling libc): its record is above.
    if (!IsCallSite(pc)) return false;
    frame = {pc, floor, fp, 0, false, false};
    return true;
  }
  uint64_t sp = floor;
  if (rule.kind == Rule::kStep) {
    const uint64_t cfa = rule.cfa_from_fp    ? fp + rule.cfa_offset
                         : rule.fp_slot != 0 ? fp + 8 * uint64_t{rule.fp_slot}
                                             : 0;
    if (cfa != 0 && UnwindsFurther(rule, cfa, floor, stack)) {
      sp = cfa - rule.cfa_offset;
    } else if (rule.cfa_from_fp) {
      return false;
    } else {
      int i = 0;
      for (; i < kScanSlots; ++i) {
        const uint64_t candidate = floor + 16 * static_cast<uint64_t>(i);
        if (!stack.Holds(candidate, floor)) return false;
        if (UnwindsFurther(rule, candidate + rule.cfa_offset, candidate,
                           stack)) {
          break;
        }
      }
      if (i == kScanSlots) return false;
      sp = floor + 16 * static_cast<uint64_t>(i);
    }
  }
  frame = {pc, sp, fp, 0, false, false};
  return true;
}

bool StepThroughFrameRecord(Frame& frame, const StackBounds& stack) {
  const bool record = stack.Holds(frame.fp, frame.sp, 16);
  if (frame.interrupted && frame.lr_known) {
    const uint64_t pc = arch::StripReturnAddress(frame.lr);
    // Still in its prologue, with its record pushed: the caller's fp is
    // the record's.
    const bool pushed =
        record &&
        LoadReturnAddress(frame.fp + arch::kFrameRecordRaOffset) == pc;
    const uint64_t fp =
        pushed ? Load(frame.fp + arch::kFrameRecordFpOffset) : frame.fp;
    if (EnterCaller(pc, fp, frame.sp, stack, frame)) return true;
  }
  if (!record) return false;
  const uint64_t pc = LoadReturnAddress(frame.fp + arch::kFrameRecordRaOffset);
  const uint64_t fp = Load(frame.fp + arch::kFrameRecordFpOffset);
  if (fp != 0 && fp <= frame.fp) return false;  // records go up the stack
  return EnterCaller(pc, fp, frame.fp + 16, stack, frame);
}

}  // namespace

void FlushUnwindRules() {
  for (CacheEntry& entry : g_rule_cache) {
    for (std::atomic<uint64_t>& word : entry.words) {
      if (word.load(std::memory_order_relaxed) != 0) {
        word.store(0, std::memory_order_relaxed);
      }
    }
  }
}

int CfiWalk(const UnwindStart& start, uint64_t* frames, int max_frames,
            int skip, bool* truncated, uint64_t stack_low, uint64_t stack_high,
            CfiWalkStop* stop) {
  Frame frame = {start.pc, start.sp, start.fp, 0, false, false};
  const StackBounds stack = {stack_low, stack_high};
  int count = 0;
  *truncated = false;
  bool crossed_signal_frame = false;
  auto fail = [&] {
    if (stop != nullptr) {
      stop->frames_written = count;
      stop->crossed_signal_frame = crossed_signal_frame;
    }
    return -1;
  };
  // Every address this reads is checked against [sp, stack_high).
  auto in_stack = [&](uint64_t address) {
    return stack.Holds(address, frame.sp);
  };
  // musl on x86-64: the words below the return address the last scan found.
  uint64_t saved_words[kSavedRegisterWords];
  int saved_count = 0;
  for (int steps = 0; steps < 4096; ++steps) {
    if (frame.pc == 0) return count;
    if (skip > 0) {
      --skip;
    } else if (count == max_frames) {
      *truncated = true;
      return count;
    } else {
      frames[count++] = frame.pc;
    }
    // A return address's call instruction is at pc - 1.
    const Rule rule = RuleFor(frame.interrupted ? frame.pc : frame.pc - 1);
    if (rule.kind == Rule::kOutermost) return count;
    const bool signal_frame =
        rule.kind == Rule::kSignalFrame ||
        (rule.kind == Rule::kUnsupported &&
         ((FramePointerFallback() && IsUntabledSigreturn(frame.pc)) ||
          IsUnknownSigreturn(frame, stack)));
    if (signal_frame) {
      if (!StepIntoInterrupted(frame, stack)) return fail();
      crossed_signal_frame = true;
      continue;
    }
    if (rule.kind != Rule::kStep) {
      // Interrupted in a PLT stub or an untabled leaf: its caller is in
      // the link register.
      if (StepThroughLinkRegister(frame, stack)) continue;
      // musl's libc has no unwind tables: find the return address its code
      // was called from, and go on from there.
      if (!FramePointerFallback()) return fail();
      if (!arch::kCallPushesReturnAddress) {
        if (!StepThroughFrameRecord(frame, stack)) return fail();
        continue;
      }
      uint64_t slot = 0;
      if (!ScanForReturnAddress(frame.sp, &frame.fp, stack, &slot, &frame.pc)) {
        return fail();
      }
      // Where the libc function saved the callee-saved registers: the
      // program's fp may be among them, for a later fp-based frame.
      saved_count = 0;
      for (int k = 1; k <= kSavedRegisterWords; ++k) {
        const uint64_t at = slot - 8 * static_cast<uint64_t>(k);
        if (!in_stack(at)) break;
        saved_words[saved_count++] = Load(at);
      }
      frame.sp = slot + 8;
      frame.interrupted = false;
      frame.lr_known = false;
      continue;
    }
    uint64_t cfa = (rule.cfa_from_fp ? frame.fp : frame.sp) + rule.cfa_offset;
    const auto ra_at = [&rule](uint64_t at) {
      return at - 8 * uint64_t{rule.ra_slot};
    };
    if (rule.cfa_from_fp && rule.ra_slot != 0 &&
        (cfa <= frame.sp || !in_stack(ra_at(cfa)))) {
      // fp clobbered by libc code without unwind tables (musl): try the
      // registers it saved.
      for (int k = 0; k < saved_count; ++k) {
        const uint64_t candidate = saved_words[k] + rule.cfa_offset;
        if (candidate <= frame.sp || !in_stack(ra_at(candidate))) continue;
        const uint64_t next = LoadReturnAddress(ra_at(candidate));
        Rule next_rule;
        if (next != 0 && !IsReturnAddress(next, &next_rule)) continue;
        frame.fp = saved_words[k];
        cfa = candidate;
        break;
      }
    }
    if (cfa < frame.sp + arch::kMinCfaOffset) return fail();
    uint64_t next_pc;
    if (rule.ra_slot == 0) {
      // In the link register: only the interrupted frame's is known.
      if (!frame.interrupted || !frame.lr_known) return fail();
      next_pc = arch::StripReturnAddress(frame.lr);
    } else {
      if (!in_stack(ra_at(cfa))) return fail();
      next_pc = LoadReturnAddress(ra_at(cfa));
    }
    if (rule.fp_slot != 0) {
      const uint64_t slot = cfa - 8 * uint64_t{rule.fp_slot};
      if (!in_stack(slot)) return fail();
      frame.fp = Load(slot);
    }
    frame.sp = cfa;
    frame.pc = next_pc;
    frame.interrupted = false;
    frame.lr_known = false;
  }
  return fail();
}

}  // namespace emitter
}  // namespace ringprof
