#!/usr/bin/env bash
# libringprof.so must load on every glibc >= 2.17: it may import no symbol
# version newer than GLIBC_2.17 and need no library beyond libc (not even
# the dynamic loader: musl has no ld-linux-x86-64.so.2), nor functions that older glibc keeps elsewhere: in librt,
# libutil or libanl, and in libdl or libpthread, which a process does not
# have loaded unless it uses them itself (the emitter looks those up at run
# time: emitter/loaded_symbols.h). Checks the built library, and that the
# check rejects libraries that break these rules (this machine's libstdc++,
# a small library calling timer_create pinned to librt's old version, and
# one calling dlsym).
#
# Usage: glibc_versions_test.sh LIBRARY
set -euo pipefail

lib=${1:?libringprof.so}
[[ -f ${lib} ]] || {
  echo "FAIL: ${lib}: no such file"
  exit 1
}
max_glibc=2.17
allowed_needed="libc.so.6"
# The pthread_* functions libc.so.6 has exported since glibc 2.2.5 (the rest
# were libpthread's until 2.34).
libc_pthread='^pthread_(attr_(destroy|init|[gs]et(detachstate|inheritsched|schedparam|schedpolicy|scope))|cond(attr)?_[a-z]+|equal|exit|[gs]etschedparam|mutex_(destroy|init|lock|unlock)|self|setcancel(state|type))@'


# Prints one line per violation; returns 1 if there is any.
violations() {
  local file=$1 bad=0
  # Version needs: "Name: GLIBC_2.34  Flags: ..." under .gnu.version_r.
  while read -r version; do
    if [[ ${version} != GLIBC_* ]]; then
      echo "imports version ${version} (not glibc's)"
      bad=1
      continue
    fi
    local number=${version#GLIBC_}
    if [[ $(printf '%s\n%s\n' "${number}" "${max_glibc}" | sort -V | tail -1) != "${max_glibc}" ]]; then
      local symbols
      symbols=$(objdump -T "${file}" | awk -v v="(${version})" '$0 ~ /\*UND\*/ && index($0, v) {print $NF}' | tr '\n' ' ')
      echo "imports ${version} > GLIBC_${max_glibc}: ${symbols}"
      bad=1
    fi
  done < <(readelf -W --version-info "${file}" |
    sed -n '/\.gnu\.version_r/,$p' | grep -o 'Name: [^ ]*' | awk '{print $2}' | sort -u)
  # Functions glibc moved into libc from librt, libutil or libanl (2.17,
  # 2.34): their old versions live in libraries the emitter does not need.
  local moved
  moved=$(objdump -T "${file}" | awk '$0 ~ /\*UND\*/ {print $NF "@" $(NF-1)}' |
    grep -E '^(timer_|mq_|shm_open|shm_unlink|aio_|lio_listio|openpty|forkpty|login_tty|getaddrinfo_a|gai_)|^clock_[a-z]+@\(GLIBC_2\.2\.5\)' || true)
  if [[ -n "${moved}" ]]; then
    echo "imports functions of librt/libutil/libanl on older glibc: $(echo ${moved})"
    bad=1
  fi
  local libdl_libpthread
  libdl_libpthread=$(objdump -T "${file}" | awk '$0 ~ /\*UND\*/ {print $NF "@" $(NF-1)}' |
    grep -E '^(dl[a-z0-9_]*|pthread_[a-z0-9_]*|sem_[a-z]+)@' | grep -vE '^dl_iterate_phdr@' |
    grep -vE "${libc_pthread}" || true)
  if [[ -n "${libdl_libpthread}" ]]; then
    echo "imports functions of libdl/libpthread on older glibc: $(echo ${libdl_libpthread})"
    bad=1
  fi
  while read -r needed; do
    if [[ " ${allowed_needed} " != *" ${needed} "* ]]; then
      echo "needs ${needed} (only ${allowed_needed})"
      bad=1
    fi
  done < <(readelf -W -d "${file}" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  return "${bad}"
}

status=0
echo "== ${lib}"
if out=$(violations "${lib}"); then
  echo "PASS: no version above GLIBC_${max_glibc}, needs only: $(readelf -W -d "${lib}" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
else
  echo "FAIL:"
  echo "${out}"
  status=1
fi

# The check itself: libstdc++ imports GLIBC_2.3x and needs libgcc_s.
control=$(g++ -print-file-name=libstdc++.so.6)
control=$(readlink -f "${control}")
echo "== control ${control}"
if out=$(violations "${control}"); then
  echo "FAIL: the check accepts ${control}"
  status=1
else
  echo "PASS: the check rejects it:"
  echo "${out}" | cut -c1-200
fi
# The check itself on small libraries built from C source (stdin): it must
# reject each of them.
dir=$(mktemp -d)
expect_rejected() {
  local name=$1
  gcc -shared -fPIC -x c -o "${dir}/lib.so" -
  echo "== control ${name}"
  if out=$(violations "${dir}/lib.so"); then
    echo "FAIL: the check accepts it"
    status=1
  else
    echo "PASS: the check rejects it: ${out}"
  fi
}
# timer_create@GLIBC_2.3.3 is librt's before 2.34.
expect_rejected timer_create@GLIBC_2.3.3 <<'EOF'
#include <signal.h>
#include <time.h>
__asm__(".symver timer_create,timer_create@GLIBC_2.3.3");
int f(void) { timer_t t; return timer_create(CLOCK_MONOTONIC, 0, &t); }
EOF
# dlsym is libdl's before 2.34.
expect_rejected dlsym@GLIBC_2.2.5 <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
__asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
void* g(void) { return dlsym(RTLD_NEXT, "malloc"); }
EOF
rm -rf "${dir}"
exit "${status}"
