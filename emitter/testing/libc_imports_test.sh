#!/usr/bin/env bash
# libringprof.so must also load under musl (Alpine): every strong import must
# be defined by musl's libc.so (musl's loader refuses a library with an
# undefined strong symbol, and ignores glibc's symbol versions), and it may
# call no fortified `__*_chk` function (glibc's). Everything else is weak or
# looked up at run time (emitter/libc_imports.h). glibc_versions_test checks
# the glibc side and that libc.so.6 is the only NEEDED library (musl maps
# that name to itself; ld-linux-x86-64.so.2 does not exist there).
# Checks the built library, and that the check rejects a library that
# breaks the rule (a strong on_exit, glibc-only).
#
# Usage: libc_imports_test.sh LIBRARY
set -euo pipefail

lib=${1:?libringprof.so}
[[ -f ${lib} ]] || {
  echo "FAIL: ${lib}: no such file"
  exit 1
}
# musl's libc.so of the library's architecture (musl:arm64 for an aarch64
# build).
case $(readelf -h "${lib}" | sed -n 's/^ *Machine: *//p') in
  AArch64) triplet=aarch64-linux-musl ;;
  *) triplet=x86_64-linux-musl ;;
esac
musl_libc=""
for candidate in "/usr/lib/${triplet}/libc.so" "/lib/${triplet}/libc.so" \
  /usr/lib/musl/lib/libc.so; do
  if [[ -f ${candidate} ]]; then
    musl_libc=${candidate}
    break
  fi
done
[[ -n ${musl_libc} ]] || {
  echo "FAIL: musl's libc.so (${triplet}) not found (tools/setup installs musl)"
  exit 1
}
defined=$(mktemp)
trap 'rm -f "${defined}"' EXIT
objdump -T "${musl_libc}" | awk '$0 !~ /\*UND\*/ && NF >= 6 {print $NF}' | sort -u >"${defined}"
echo "musl: ${musl_libc} ($(wc -l <"${defined}") symbols)"

# Prints one line per violation; returns 1 if there is any.
violations() {
  local file=$1 bad=0 symbol
  # Strong undefined: the flags column has no "w".
  for symbol in $(objdump -T "${file}" | awk '$0 ~ /\*UND\*/ && $2 !~ /w/ {print $NF}'); do
    if ! grep -qxF -- "${symbol}" "${defined}"; then
      echo "imports ${symbol} strongly, which musl does not define"
      bad=1
    fi
  done
  local fortified
  fortified=$(objdump -T "${file}" | awk '$0 ~ /\*UND\*/ {print $NF}' | grep -E '^__.*_chk$' || true)
  if [[ -n ${fortified} ]]; then
    echo "imports fortified functions: $(echo ${fortified})"
    bad=1
  fi
  return "${bad}"
}

status=0
echo "== ${lib}"
if out=$(violations "${lib}"); then
  echo "PASS: every strong import is musl's; no _chk imports"
  echo "weak imports: $(objdump -T "${lib}" | awk '$0 ~ /\*UND\*/ && $2 ~ /w/ {print $NF}' | tr '\n' ' ')"
else
  echo "FAIL:"
  echo "${out}"
  status=1
fi

# The check itself: a strong on_exit and a fortified call are rejected.
dir=$(mktemp -d)
gcc -shared -fPIC -O2 -D_FORTIFY_SOURCE=2 -x c -o "${dir}/lib.so" - <<'C'
#include <stdlib.h>
#include <string.h>
static void h(int s, void* a) { (void)s; (void)a; }
char d[16];
int f(const char* s, size_t n) { strncat(d, s, n); return on_exit(h, 0); }
C
echo "== control (strong on_exit, fortified strncat)"
if out=$(violations "${dir}/lib.so"); then
  echo "FAIL: the check accepts it"
  status=1
elif ! grep -q "on_exit" <<<"${out}" || ! grep -q "__strncat_chk" <<<"${out}"; then
  echo "FAIL: the check misses one: ${out}"
  status=1
else
  echo "PASS: the check rejects it: $(echo ${out})"
fi
rm -rf "${dir}"
exit "${status}"
