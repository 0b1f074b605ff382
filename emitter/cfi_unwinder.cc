#include "emitter/cfi_unwinder.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/ucontext.h>

#include <atomic>
#include <cstddef>
#include <cstring>

#include "emitter/libc_features.h"

namespace ringprof {
namespace emitter {
namespace {

// "mov $15, %rax; syscall" (rt_sigreturn): the kernel's signal trampoline.
constexpr uint8_t kRtSigreturn[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00,
                                    0x00, 0x00, 0x0f, 0x05};

// ---------------------------------------------------------------------------
// Rules and their cache.

// x86-64 DWARF register numbers.
constexpr uint64_t kRbp = 6;
constexpr uint64_t kRsp = 7;
constexpr uint64_t kReturnAddress = 16;

struct Rule {
  // kSignalFrame: the kernel's rt_sigreturn trampoline (glibc's
  // __restore_rt); the interrupted registers are in the ucontext_t the
  // kernel pushed, which starts at the trampoline frame's stack pointer.
  enum Kind : uint8_t {
    kUnsupported,
    kOutermost,
    kStep,
    kSignalFrame
  } kind = kUnsupported;
  bool cfa_from_rbp = false;
  uint32_t cfa_offset = 0;  // CFA = (rbp or rsp) + cfa_offset
  uint32_t rbp_slot = 0;    // 0: rbp unchanged; n: saved at CFA - 8n
};

// One word per entry: tag (pc >> 12, 36 bits) << 28 | rbp_slot (8 bits) << 20
// | cfa_offset (19 bits) << 1 | cfa_from_rbp. cfa_offset 0 means outermost
// frame, 1 unsupported, 2 signal frame (none is a valid step: a CFA is at
// least 8 bytes above the stack pointer, the return address). A word is only
// ever replaced whole, so a reader sees some entry's complete rule and the tag
// tells whether it is this pc's.
constexpr int kCacheBits = 12;
constexpr uint64_t kMaxCfaOffset = (1u << 19) - 1;
std::atomic<uint64_t> g_rule_cache[1 << kCacheBits];

constexpr uint64_t kUnsupportedOffset = 1;
constexpr uint64_t kSignalFrameOffset = 2;

uint64_t Encode(uint64_t pc, const Rule& rule) {
  uint64_t offset = rule.cfa_offset;
  if (rule.kind == Rule::kOutermost) offset = 0;
  if (rule.kind == Rule::kUnsupported) offset = kUnsupportedOffset;
  if (rule.kind == Rule::kSignalFrame) offset = kSignalFrameOffset;
  return (pc >> kCacheBits) << 28 | uint64_t{rule.rbp_slot} << 20 |
         offset << 1 | (rule.cfa_from_rbp ? 1 : 0);
}

bool Decode(uint64_t pc, uint64_t word, Rule* rule) {
  if (word == 0 || (word >> 28) != (pc >> kCacheBits)) return false;
  const uint64_t offset = (word >> 1) & kMaxCfaOffset;
  rule->cfa_from_rbp = (word & 1) != 0;
  rule->rbp_slot = static_cast<uint32_t>((word >> 20) & 0xff);
  rule->cfa_offset = static_cast<uint32_t>(offset);
  rule->kind = offset == 0                    ? Rule::kOutermost
               : offset == kUnsupportedOffset ? Rule::kUnsupported
               : offset == kSignalFrameOffset ? Rule::kSignalFrame
                                              : Rule::kStep;
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
  uint64_t cfa_register = kRsp;
  int64_t cfa_offset = 8;
  bool rbp_saved = false;
  int64_t rbp_offset = 0;
  bool ra_undefined = false;
  bool ra_saved = false;
  int64_t ra_offset = 0;
};

// Runs CFA instructions until the location passes `target`. False for any
// instruction outside the supported subset.
bool Execute(Reader& reader, uint64_t code_align, int64_t data_align,
             uint64_t location, uint64_t target, const Row& initial, Row& row) {
  Row stack[4];
  int depth = 0;
  auto set_offset = [&](uint64_t reg, int64_t offset) {
    if (reg == kRbp) {
      row.rbp_saved = true;
      row.rbp_offset = offset;
    } else if (reg == kReturnAddress) {
      row.ra_saved = true;
      row.ra_undefined = false;
      row.ra_offset = offset;
    }
    return true;
  };
  auto restore = [&](uint64_t reg) {
    if (reg == kRbp) {
      row.rbp_saved = initial.rbp_saved;
      row.rbp_offset = initial.rbp_offset;
    } else if (reg == kReturnAddress) {
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
        if (reg == kReturnAddress) row.ra_undefined = true;
        if (reg == kRbp) return false;
        break;
      }
      case 0x08: {  // same_value
        const uint64_t reg = reader.Uleb();
        if (reg == kRbp) row.rbp_saved = false;
        if (reg == kReturnAddress) return false;
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
        // Expressions, register-to-register rules, val_* rules, ...
        // Registers we do not track are harmless only for the ops above.
        return false;
    }
  }
  return reader.ok();
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
  if (ra_register != kReturnAddress) return rule;
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
    // Only the kernel's trampoline is understood: "mov $15, %rax; syscall"
    // (rt_sigreturn) at the return address, i.e. at pc + 1. The bytes are
    // inside the FDE's range of a loaded object, so readable.
    if (pc + 1 + sizeof(kRtSigreturn) <= pc_begin + pc_range &&
        memcmp(reinterpret_cast<const void*>(pc + 1), kRtSigreturn,
               sizeof(kRtSigreturn)) == 0) {
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
  if (!row.ra_saved || row.ra_offset != -8) return rule;
  if (row.cfa_register != kRsp && row.cfa_register != kRbp) return rule;
  if (row.cfa_offset < 8 ||  // 8: at a function's first instruction
      static_cast<uint64_t>(row.cfa_offset) > kMaxCfaOffset) {
    return rule;
  }
  if (row.rbp_saved) {
    if (row.rbp_offset >= 0 || row.rbp_offset % 8 != 0 ||
        -row.rbp_offset / 8 > 255) {
      return rule;
    }
    rule.rbp_slot = static_cast<uint32_t>(-row.rbp_offset / 8);
  }
  rule.kind = Rule::kStep;
  rule.cfa_from_rbp = row.cfa_register == kRbp;
  rule.cfa_offset = static_cast<uint32_t>(row.cfa_offset);
  return rule;
}

Rule RuleFor(uint64_t pc) {
  std::atomic<uint64_t>& slot = g_rule_cache[pc & ((1u << kCacheBits) - 1)];
  Rule rule;
  if (Decode(pc, slot.load(std::memory_order_relaxed), &rule)) return rule;
  rule = ComputeRule(pc);
  slot.store(Encode(pc, rule), std::memory_order_relaxed);
  return rule;
}

// Whether the return address `pc` is musl's __restore_rt, which has no
// unwind table there: the kernel's trampoline bytes at pc, inside an object
// FindObject knows (so readable).
bool IsUntabledSigreturn(uint64_t pc) {
  dl_find_object object;
  if (FindObject(reinterpret_cast<void*>(pc), &object) != 0) return false;
  return pc + sizeof(kRtSigreturn) <=
             reinterpret_cast<uint64_t>(object.dlfo_map_end) &&
         memcmp(reinterpret_cast<const void*>(pc), kRtSigreturn,
                sizeof(kRtSigreturn)) == 0;
}

// Whether the bytes before `address` end in a call instruction: call rel32
// (e8), call through a register or memory operand (ff /2 in its 2, 3, 6
// and 7 byte forms).
bool FollowsCall(uint64_t address) {
  const auto* code = reinterpret_cast<const uint8_t*>(address);
  if (code[-5] == 0xe8) return true;
  static constexpr int kLengths[] = {2, 3, 6, 7};
  for (int length : kLengths) {
    if (code[-length] == 0xff && ((code[1 - length] >> 3) & 7) == 2) {
      return true;
    }
  }
  return false;
}

constexpr int kScanWords = 256;

// A return address into code with unwind tables, just past a call.
bool IsReturnAddress(uint64_t value, Rule* rule) {
  dl_find_object object;
  // The 7 bytes before it must be on its page (mapped): never read across
  // a page boundary into what may be a hole between segments.
  if ((value & 4095) < 7 ||
      FindObject(reinterpret_cast<void*>(value), &object) != 0 ||
      object.dlfo_eh_frame == nullptr) {
    return false;
  }
  *rule = RuleFor(value - 1);
  return (rule->kind == Rule::kStep || rule->kind == Rule::kOutermost) &&
         FollowsCall(value);
}

// The nearest word above rsp that is a return address whose frame unwinds
// one step further to another return address (or is outermost): a stale
// return address left in the libc frame by an earlier call rarely does.
// A frame whose CFA is rbp-based needs the program's rbp: the register's
// value `*rbp` if the libc code left it alone, else one of the words just
// below the return address, where the libc function's prologue pushed the
// callee-saved registers; *rbp is updated to the one that fits.
constexpr int kSavedRegisterWords = 6;

bool ScanForReturnAddress(uint64_t rsp, uint64_t* rbp, uint64_t stack_low,
                          uint64_t stack_high, uint64_t* slot,
                          uint64_t* return_address) {
  const auto in_stack = [&](uint64_t address) {
    return address >= rsp && address + 8 <= stack_high &&
           (stack_low == 0 || address >= stack_low);
  };
  // Whether the frame of return address slot `at` with `rule` unwinds to
  // another return address when rbp is `frame`.
  const auto steps = [&](uint64_t at, const Rule& rule, uint64_t frame) {
    const uint64_t cfa = (rule.cfa_from_rbp ? frame : at + 8) + rule.cfa_offset;
    if (cfa <= at + 8 || !in_stack(cfa - 8)) return false;
    uint64_t next;
    memcpy(&next, reinterpret_cast<const void*>(cfa - 8), 8);
    Rule next_rule;
    return next == 0 || IsReturnAddress(next, &next_rule);
  };
  for (int i = 0; i < kScanWords; ++i) {
    const uint64_t at = rsp + 8 * static_cast<uint64_t>(i);
    if (!in_stack(at)) break;
    uint64_t value;
    memcpy(&value, reinterpret_cast<const void*>(at), 8);
    Rule rule;
    if (!IsReturnAddress(value, &rule)) continue;
    bool fits = rule.kind == Rule::kOutermost || steps(at, rule, *rbp);
    for (int k = 1; !fits && rule.cfa_from_rbp && k <= kSavedRegisterWords;
         ++k) {
      const uint64_t saved_at = at - 8 * static_cast<uint64_t>(k);
      if (!in_stack(saved_at)) break;
      uint64_t saved;
      memcpy(&saved, reinterpret_cast<const void*>(saved_at), 8);
      if (steps(at, rule, saved)) {
        *rbp = saved;
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

}  // namespace

void FlushUnwindRules() {
  for (std::atomic<uint64_t>& word : g_rule_cache) {
    if (word.load(std::memory_order_relaxed) != 0) {
      word.store(0, std::memory_order_relaxed);
    }
  }
}

int CfiWalk(const UnwindStart& start, uint64_t* frames, int max_frames,
            int skip, bool* truncated, uint64_t stack_low, uint64_t stack_high,
            CfiWalkStop* stop) {
  uint64_t pc = start.pc, rsp = start.rsp, rbp = start.rbp;
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
  // Every address this reads is checked against [rsp, stack_high).
  auto in_stack = [&](uint64_t address) {
    return address >= rsp && address + 8 <= stack_high &&
           (stack_low == 0 || address >= stack_low);
  };
  // False for the frame a signal interrupted: its pc is the exact
  // instruction, not a return address.
  bool pc_is_return_address = true;
  // musl: the words below the return address the last scan found.
  uint64_t saved_words[kSavedRegisterWords];
  int saved_count = 0;
  for (int steps = 0; steps < 4096; ++steps) {
    if (pc == 0) return count;
    if (skip > 0) {
      --skip;
    } else if (count == max_frames) {
      *truncated = true;
      return count;
    } else {
      frames[count++] = pc;
    }
    // A return address's call instruction is at pc - 1.
    const Rule rule = RuleFor(pc_is_return_address ? pc - 1 : pc);
    pc_is_return_address = true;
    if (rule.kind == Rule::kOutermost) return count;
    const bool signal_frame =
        rule.kind == Rule::kSignalFrame ||
        (rule.kind == Rule::kUnsupported && FramePointerFallback() &&
         IsUntabledSigreturn(pc));
    if (signal_frame) {
      // The ucontext_t the kernel pushed starts at the stack pointer.
      constexpr uint64_t kGregs = offsetof(ucontext_t, uc_mcontext.gregs);
      const uint64_t context = rsp;
      if (!in_stack(context + kGregs + 8 * REG_RBP) ||
          !in_stack(context + kGregs + 8 * REG_RSP) ||
          !in_stack(context + kGregs + 8 * REG_RIP)) {
        return fail();
      }
      uint64_t interrupted_rsp;
      memcpy(&interrupted_rsp,
             reinterpret_cast<const void*>(context + kGregs + 8 * REG_RSP), 8);
      memcpy(&rbp,
             reinterpret_cast<const void*>(context + kGregs + 8 * REG_RBP), 8);
      memcpy(&pc, reinterpret_cast<const void*>(context + kGregs + 8 * REG_RIP),
             8);
      if (interrupted_rsp <= context || interrupted_rsp >= stack_high) {
        return fail();
      }
      rsp = interrupted_rsp;
      pc_is_return_address = false;
      crossed_signal_frame = true;
      continue;
    }
    if (rule.kind != Rule::kStep) {
      // musl's libc has no unwind tables (nor frame pointers): find the
      // return address its code was called from, the nearest word above
      // rsp that points just past a call instruction in code that has
      // them, and go on from there.
      if (!FramePointerFallback()) return fail();
      uint64_t slot = 0;
      if (!ScanForReturnAddress(rsp, &rbp, stack_low, stack_high, &slot, &pc)) {
        return fail();
      }
      // Where the libc function saved the callee-saved registers: the
      // program's rbp may be among them, for a later rbp-based frame.
      saved_count = 0;
      for (int k = 1; k <= kSavedRegisterWords; ++k) {
        const uint64_t at = slot - 8 * static_cast<uint64_t>(k);
        if (!in_stack(at)) break;
        memcpy(&saved_words[saved_count++], reinterpret_cast<const void*>(at),
               8);
      }
      rsp = slot + 8;
      continue;
    }
    uint64_t cfa = (rule.cfa_from_rbp ? rbp : rsp) + rule.cfa_offset;
    if (rule.cfa_from_rbp && (cfa <= rsp || !in_stack(cfa - 8))) {
      // rbp clobbered by libc code without unwind tables (musl): try the
      // registers it saved.
      for (int k = 0; k < saved_count; ++k) {
        const uint64_t candidate = saved_words[k] + rule.cfa_offset;
        if (candidate <= rsp || !in_stack(candidate - 8)) continue;
        uint64_t next;
        memcpy(&next, reinterpret_cast<const void*>(candidate - 8), 8);
        Rule next_rule;
        if (next != 0 && !IsReturnAddress(next, &next_rule)) continue;
        rbp = saved_words[k];
        cfa = candidate;
        break;
      }
    }
    if (cfa <= rsp || !in_stack(cfa - 8)) return fail();
    uint64_t next_pc;
    memcpy(&next_pc, reinterpret_cast<const void*>(cfa - 8), 8);
    if (rule.rbp_slot != 0) {
      const uint64_t slot = cfa - 8 * uint64_t{rule.rbp_slot};
      if (!in_stack(slot)) return fail();
      memcpy(&rbp, reinterpret_cast<const void*>(slot), 8);
    }
    rsp = cfa;
    pc = next_pc;
  }
  return fail();
}

}  // namespace emitter
}  // namespace ringprof
