#!/usr/bin/env bash
# Binaries stripped the way Fedora, RHEL and Amazon Linux strip them
# (collector/symbolize/testdata/symbolizer/fedora_strip.sh: .symtab and
# DWARF removed, the functions .dynsym lacks kept as MiniDebugInfo in
# .gnu_debugdata) under `ringprof run`: their functions are named. Each
# beside the same binary plainly stripped, which must not be.
#   1. examples/hotloop (its functions, static ones included);
#   2. Debian's own libc.so.6 with libc6-dbg's symbols as its MiniDebugInfo
#      (and another build-id, so that libc6-dbg's debug file does not
#      match it): glibc's internal functions (_int_malloc, _int_free, ...).
set -uo pipefail
source "${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}/tests/symbols/lib.sh"
need objcopy
need xz
fedora_strip="${runfiles}/collector/symbolize/testdata/symbolizer/fedora_strip.sh"
hotloop="${runfiles}/examples/hotloop/hotloop"
rounds=150

echo "--- examples/hotloop stripped the Fedora way"
mkdir -p "${tmp}/fedora" "${tmp}/plain"
"${fedora_strip}" "${hotloop}" "${tmp}/fedora/hotloop" || fail "fedora_strip.sh hotloop"
strip --strip-all -o "${tmp}/plain/hotloop" "${hotloop}"
readelf -SW "${tmp}/fedora/hotloop" >"${tmp}/sections" 2>/dev/null
grep -q '\.gnu_debugdata' "${tmp}/sections" || fail "no .gnu_debugdata in the Fedora-stripped hotloop"
! grep -qE '\.symtab|\.debug_info' "${tmp}/sections" || fail "the Fedora-stripped hotloop kept .symtab or DWARF"
profile hotloop_fedora "${tmp}/fedora/hotloop" "${rounds}"
profile hotloop_plain "${tmp}/plain/hotloop" "${rounds}"
# HotLoop is a static function (GCC may clone it: "[clone .constprop.0]").
grep -qF "(anonymous namespace)::HotLoop(int)" "${tmp}/hotloop_fedora.names" &&
  has_name "${tmp}/hotloop_fedora.names" main ||
  fail "the Fedora-stripped hotloop's profile does not name HotLoop and main: $(cat "${tmp}/hotloop_fedora.names")"
# Every function is named; only the PLT (stubs, no symbol in any table)
# shows by its start.
plt_starts=""
while read -r address; do
  plt_starts+=$(printf '[hotloop] 0x%x' "$((16#${address}))")$'\n'
done < <(readelf -SW "${hotloop}" | sed 's/^ *\[ *[0-9]*\]//' | awk '$1 ~ /^\.plt/ { print $3 }')
if grep -F '[hotloop] 0x' "${tmp}/hotloop_fedora.names" | grep -vxF -- "${plt_starts:-none}"; then
  fail "hotloop functions left unnamed with MiniDebugInfo (above; the PLT: ${plt_starts})"
fi
! grep -q HotLoop "${tmp}/hotloop_plain.names" ||
  fail "the plainly stripped hotloop names HotLoop: the check above proves nothing"
grep -qF '[hotloop] 0x' "${tmp}/hotloop_plain.names" ||
  fail "the plainly stripped hotloop shows no function start"

echo "--- Debian's libc.so.6 stripped the Fedora way"
libc=$(ldd "${hotloop}" | awk '$1 == "libc.so.6" { print $3 }')
[[ -f "${libc}" ]] || fail "no libc.so.6 in ldd ${hotloop}"
libc_id=$(readelf -n "${libc}" | awk '/Build ID:/ { print $3 }')
libc_debug="/usr/lib/debug/.build-id/${libc_id:0:2}/${libc_id:2}.debug"
[[ -f "${libc_debug}" ]] || fail "${libc_debug} missing: libc6-dbg is not installed (run tools/setup)"
# A build-id note that no debug file on this machine has.
python3 -c '
import struct, sys
desc = b"ringprof-minidebug!!"
sys.stdout.buffer.write(struct.pack("<III", 4, len(desc), 3) + b"GNU\0" + desc)
' >"${tmp}/note"
mkdir -p "${tmp}/libc_fedora" "${tmp}/libc_plain"
"${fedora_strip}" -d "${libc_debug}" "${libc}" "${tmp}/libc.fedora" || fail "fedora_strip.sh libc"
objcopy --update-section .note.gnu.build-id="${tmp}/note" "${tmp}/libc.fedora" \
  "${tmp}/libc_fedora/libc.so.6" || fail "objcopy libc"
objcopy --update-section .note.gnu.build-id="${tmp}/note" "${libc}" \
  "${tmp}/libc_plain/libc.so.6" || fail "objcopy libc"
profile libc_fedora env LD_LIBRARY_PATH="${tmp}/libc_fedora" "${hotloop}" "${rounds}"
profile libc_plain env LD_LIBRARY_PATH="${tmp}/libc_plain" "${hotloop}" "${rounds}"
for variant in libc_fedora libc_plain; do
  grep -qF "${tmp}/${variant}/libc.so.6" "${tmp}/${variant}.raw" ||
    fail "${variant}: hotloop did not run on ${tmp}/${variant}/libc.so.6"
done
internal='^(_int_malloc|_int_free|malloc_consolidate|unlink_chunk|sysmalloc|systrim|_int_realloc)$'
grep -E "${internal}" "${tmp}/libc_fedora.names" ||
  fail "no glibc-internal function named through MiniDebugInfo: $(grep -v '::' "${tmp}/libc_fedora.names")"
! grep -E "${internal}" "${tmp}/libc_plain.names" ||
  fail "the plainly stripped libc names glibc's internal functions: the check above proves nothing"
grep -qF '[libc.so.6] 0x' "${tmp}/libc_plain.names" ||
  fail "the plainly stripped libc shows no function start"
echo PASS
