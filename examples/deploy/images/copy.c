// copy: the emitter image's only program. The image has no shell, no libc
// and no coreutils, so its init container copies the library with this:
//
//   copy SRC DEST
//
// copies the regular file SRC to DEST (mode 0755), through a temporary file
// in DEST's directory that is renamed over DEST once complete, so a reader
// never sees a partial library. Prints one line and exits 0; on failure
// says what failed (with errno's name) on stderr, removes its temporary file
// and exits 1; wrong usage exits 2.
//
// A static executable without any C library: a few system calls through
// inline assembly (x86-64 and AArch64), so the image needs nothing else
// and the program is a few KB. Freestanding: no stdio, no allocation.

#if defined(__x86_64__)
#define NR_read 0
#define NR_write 1
#define NR_close 3
#define NR_fstat 5
#define NR_fchmod 91
#define NR_getpid 39
#define NR_openat 257
#define NR_unlinkat 263
#define NR_renameat 264
#define NR_exit_group 231

static long Syscall(long n, long a, long b, long c, long d) {
  long ret;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
                   : "rcx", "r11", "memory");
  return ret;
}

// The kernel enters with argc at (%rsp), argv after it.
__asm__(
    ".text\n"
    ".global _start\n"
    "_start:\n"
    "  xor %rbp, %rbp\n"
    "  mov %rsp, %rdi\n"
    "  and $-16, %rsp\n"
    "  call Start\n"
    "  hlt\n");
#elif defined(__aarch64__)
#define NR_read 63
#define NR_write 64
#define NR_close 57
#define NR_fstat 80
#define NR_fchmod 52
#define NR_getpid 172
#define NR_openat 56
#define NR_unlinkat 35
#define NR_renameat 38
#define NR_exit_group 94

static long Syscall(long n, long a, long b, long c, long d) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  __asm__ volatile("svc #0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3)
                   : "memory");
  return x0;
}

__asm__(
    ".text\n"
    ".global _start\n"
    "_start:\n"
    "  mov x29, #0\n"
    "  mov x30, #0\n"
    "  mov x0, sp\n"
    "  bl Start\n");
#else
#error "copy.c: add this architecture's system calls"
#endif

#define AT_FDCWD (-100)
#define O_RDONLY 0
#define O_WRONLY 01
#define O_CREAT 0100
#define O_EXCL 0200
#define O_CLOEXEC 02000000
#define S_IFMT 0170000
#define S_IFREG 0100000
#define EINTR 4

// struct stat's st_mode, the only field read: at byte 24 on x86-64, 16 on
// AArch64 (the generic layout); the buffer is larger than either struct.
#if defined(__x86_64__)
#define ST_MODE_OFFSET 24
#else
#define ST_MODE_OFFSET 16
#endif

static unsigned long Length(const char* s) {
  unsigned long n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

static void Write(int fd, const char* s) {
  Syscall(NR_write, fd, (long)s, (long)Length(s), 0);
}

static void Exit(int status) {
  for (;;) Syscall(NR_exit_group, status, 0, 0, 0);
}

// Decimal digits of v into buf (at least 21 bytes); returns buf.
static char* Decimal(unsigned long v, char* buf) {
  char digits[21];
  int n = 0;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  int i = 0;
  while (n > 0) buf[i++] = digits[--n];
  buf[i] = '\0';
  return buf;
}

static const char* ErrnoName(long e) {
  switch (e) {
    case 2: return "ENOENT";
    case 5: return "EIO";
    case 13: return "EACCES";
    case 17: return "EEXIST";
    case 20: return "ENOTDIR";
    case 21: return "EISDIR";
    case 27: return "EFBIG";
    case 28: return "ENOSPC";
    case 30: return "EROFS";
    case 36: return "ENAMETOOLONG";
    case 122: return "EDQUOT";
    default: return 0;
  }
}

static const char* temp_path = 0;

// "copy: WHAT PATH: ENAME (errno N)" on stderr, the temporary file removed,
// exit 1.
static void Fail(const char* what, const char* path, long ret) {
  char number[21];
  Write(2, "copy: ");
  Write(2, what);
  Write(2, " ");
  Write(2, path);
  if (ret < 0) {
    const char* name = ErrnoName(-ret);
    Write(2, ": ");
    Write(2, name ? name : "error");
    Write(2, " (errno ");
    Write(2, Decimal((unsigned long)-ret, number));
    Write(2, ")");
  }
  Write(2, "\n");
  if (temp_path) Syscall(NR_unlinkat, AT_FDCWD, (long)temp_path, 0, 0);
  Exit(1);
}

// Writes all of buf[0..n) to fd, retrying short writes and EINTR.
static long WriteAll(int fd, const char* buf, long n) {
  while (n > 0) {
    long w = Syscall(NR_write, fd, (long)buf, n, 0);
    if (w == -EINTR) continue;
    if (w <= 0) return w < 0 ? w : -28;  // a zero write: out of space
    buf += w;
    n -= w;
  }
  return 0;
}

static char buffer[1 << 16];
// DEST + ".copy-" + pid: the temporary file, in DEST's directory.
static char temp[4096 + 32];

void Start(long* stack) {
  long argc = stack[0];
  char** argv = (char**)(stack + 1);
  if (argc != 3) {
    Write(2, "usage: copy SRC DEST\n");
    Exit(2);
  }
  const char* src = argv[1];
  const char* dest = argv[2];

  long in = Syscall(NR_openat, AT_FDCWD, (long)src, O_RDONLY | O_CLOEXEC, 0);
  if (in < 0) Fail("cannot open", src, in);
  unsigned long st[32];  // struct stat (144 or 128 bytes)
  long r = Syscall(NR_fstat, in, (long)st, 0, 0);
  if (r < 0) Fail("cannot stat", src, r);
  unsigned mode = *(unsigned*)((char*)st + ST_MODE_OFFSET);
  if ((mode & S_IFMT) != S_IFREG) Fail("not a regular file:", src, 0);

  unsigned long dest_length = Length(dest);
  if (dest_length == 0 || dest_length > 4096) Fail("bad destination", dest, 0);
  char number[21];
  Decimal((unsigned long)Syscall(NR_getpid, 0, 0, 0, 0), number);
  unsigned long t = 0;
  for (unsigned long i = 0; i < dest_length; ++i) temp[t++] = dest[i];
  for (const char* s = ".copy-"; *s; ++s) temp[t++] = *s;
  for (const char* s = number; *s; ++s) temp[t++] = *s;
  temp[t] = '\0';

  long out = Syscall(NR_openat, AT_FDCWD, (long)temp,
                     O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
  if (out < 0) Fail("cannot create", temp, out);
  temp_path = temp;
  unsigned long total = 0;
  for (;;) {
    long n = Syscall(NR_read, in, (long)buffer, sizeof buffer, 0);
    if (n == -EINTR) continue;
    if (n < 0) Fail("cannot read", src, n);
    if (n == 0) break;
    r = WriteAll((int)out, buffer, n);
    if (r < 0) Fail("cannot write", temp, r);
    total += (unsigned long)n;
  }
  // An explicit mode: the umask must not make the library unreadable to a
  // workload of another uid.
  r = Syscall(NR_fchmod, out, 0755, 0, 0);
  if (r < 0) Fail("cannot chmod", temp, r);
  r = Syscall(NR_close, out, 0, 0, 0);
  if (r < 0) Fail("cannot write", temp, r);
  r = Syscall(NR_renameat, AT_FDCWD, (long)temp, AT_FDCWD, (long)dest);
  if (r < 0) Fail("cannot rename to", dest, r);
  temp_path = 0;
  Syscall(NR_close, in, 0, 0, 0);

  Write(1, "copy: ");
  Write(1, src);
  Write(1, " -> ");
  Write(1, dest);
  Write(1, " (");
  Write(1, Decimal(total, number));
  Write(1, " bytes)\n");
  Exit(0);
}
