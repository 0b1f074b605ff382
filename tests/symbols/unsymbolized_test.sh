#!/usr/bin/env bash
# What stayed unsymbolized, as `ringprof run` reports it:
#   1. examples/hotloop stripped plainly (no .symtab, no MiniDebugInfo, no
#      debug file anywhere): its summary gives the CPU profile's share of
#      samples whose leaf has no function name, > 0 and equal to what the
#      profile itself holds, names hotloop with the reason "stripped (no
#      .symtab) without MiniDebugInfo; no debug file found (...)", and the
#      collector's log says that reason once; every profile it wrote has
#      its share;
#   2. the same binary with its symbols (and libc6-dbg for libc): a share
#      of about 0 (under 5 %), what is unnamed only the PLT's stubs, whose
#      reason is "an address in no function of its symbol table".
set -uo pipefail
source "${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}/tests/symbols/lib.sh"
need strip
hotloop="${runfiles}/examples/hotloop/hotloop"
rounds=150
# No debuginfod (Debian's profile.d may point at debuginfod.debian.net).
unset DEBUGINFOD_URLS
RUN_FLAGS=(--debuginfod=false)

libc=$(ldd "${hotloop}" | awk '$1 == "libc.so.6" { print $3 }')
libc_id=$(readelf -n "${libc}" | awk '/Build ID:/ { print $3 }')
[[ -f "/usr/lib/debug/.build-id/${libc_id:0:2}/${libc_id:2}.debug" ]] ||
  fail "libc6-dbg is not installed (run tools/setup): libc's leaves would be unnamed"

# summary_share LOG: the CPU profile's share in the run's summary, as
# printed ("12.3", "<0.1", "0").
summary_share() {
  grep -F 'ringprof: unsymbolized (samples whose leaf has no function name):' "$1" |
    grep -oE 'process_cpu [<0-9.]+% of cpu' | awk '{ sub(/%$/, "", $2); print $2 }'
}

# profile_share PROFILE: the share of PROFILE's value whose leaf has no
# function name ("[module] 0x<start>" or "module+0x<offset>"), of the value
# with a stack (synthetic frames left out), in percent, from go tool pprof.
profile_share() {
  go tool pprof -symbolize=none -raw "$1" 2>/dev/null | awk '
    /^Samples:/ { section = "samples"; getline; next }
    /^Locations/ { section = "locations"; next }
    /^Mappings/ { section = "" }
    # "   70000000: 1 2 3": a value, then location ids, leaf first.
    section == "samples" && /:/ {
      split($0, parts, ":"); split(parts[1], values, " ")
      split(parts[2], ids, " "); value[NR] = values[1]; leaf[NR] = ids[1]
    }
    # "     5: 0x564c0aeed54f M=1 [hotloop] 0x1500 :0:0 s=0", then a line
    # per caller it inlines into: the first names the innermost function.
    section == "locations" && /^ +[0-9]+: 0x/ {
      id = $1; sub(/:$/, "", id)
      name = $0
      sub(/^ +[0-9]+: 0x[0-9a-f]+ (M=[0-9]+ )?/, "", name)
      sub(/ s=[0-9]+$/, "", name)
      sub(/ [^ ]*:[0-9]+:[0-9]+$/, "", name)
      function_of[id] = name
    }
    END {
      for (s in value) {
        name = function_of[leaf[s]]
        if (name ~ /^\[(lost|no sample|truncated|thread not sampled|unknown)\]$/) continue
        total += value[s]
        if (name ~ /^\[[^]]*\] 0x[0-9a-f]+$/ || name ~ /^[^ ]+\+0x[0-9a-f]+$/ || name ~ /^0x[0-9a-f]+$/) {
          unnamed += value[s]
        }
      }
      share = total > 0 ? 100 * unnamed / total : 0
      printf "%.2f\n", share
    }'
}

echo "--- hotloop stripped, no debug info anywhere"
mkdir -p "${tmp}/bin"
strip --strip-all -o "${tmp}/bin/hotloop" "${hotloop}"
! readelf -SW "${tmp}/bin/hotloop" | grep -qE '\.symtab|\.gnu_debugdata|\.gnu_debuglink' ||
  fail "strip --strip-all left symbols or a debug link"
profile stripped "${tmp}/bin/hotloop" "${rounds}"
grep -F 'ringprof: unsymbolized' -A6 "${tmp}/stripped.log"
share=$(summary_share "${tmp}/stripped.log")
[[ -n "${share}" ]] || fail "no CPU share in the summary: $(tail -20 "${tmp}/stripped.log")"
from_profile=$(profile_share "${tmp}/stripped/process_cpu.pb.gz")
echo "stripped: summary ${share}%, profile ${from_profile}%"
awk -v s="${share}" 'BEGIN { exit !(s ~ /^[0-9.]+$/ && s >= 5) }' ||
  fail "the stripped hotloop's unsymbolized share is ${share}%, expected at least 5%"
awk -v s="${share}" -v p="${from_profile}" 'BEGIN { d = s - p; exit !(d < 0.2 && d > -0.2) }' ||
  fail "the summary says ${share}% unsymbolized, the profile holds ${from_profile}%"
# Every profile the run wrote (<kind>.pb.gz) has its share: no kind is left
# out, whatever kinds the collector has.
for merged in "${tmp}/stripped"/*.pb.gz; do
  kind=$(basename "${merged}" .pb.gz)
  grep -F 'ringprof: unsymbolized (' "${tmp}/stripped.log" | grep -qE "[:,] ${kind} [<0-9.]+% of " ||
    fail "the summary gives no share for ${kind}.pb.gz"
done
reason='stripped (no .symtab) without MiniDebugInfo; no debug file found ('
grep -E '^ringprof:   hotloop \(process_cpu [0-9.]+%.*\): ' "${tmp}/stripped.log" |
  grep -qF "): ${reason}" ||
  fail "the summary gives hotloop no reason '${reason}...': $(grep -F 'ringprof:   ' "${tmp}/stripped.log")"
said=$(grep -cF "${tmp}/bin/hotloop: functions without a name" "${tmp}/stripped.log")
((said == 1)) || fail "hotloop's reason said ${said} times, not once"
grep -F "${tmp}/bin/hotloop: functions without a name" "${tmp}/stripped.log" | grep -qF "${reason}" ||
  fail "the log's line for hotloop does not give the reason '${reason}...'"

echo "--- hotloop with its symbols"
profile named "${hotloop}" "${rounds}"
grep -F 'ringprof: unsymbolized' -A6 "${tmp}/named.log"
share=$(summary_share "${tmp}/named.log")
from_profile=$(profile_share "${tmp}/named/process_cpu.pb.gz")
echo "named: summary ${share}%, profile ${from_profile}%"
awk -v s="${share}" 'BEGIN { exit !(s == "0" || s == "<0.1" || (s ~ /^[0-9.]+$/ && s < 5)) }' ||
  fail "hotloop with its symbols is ${share}% unsymbolized, expected about 0"
# What may stay unnamed is the PLT's stubs, which no symbol covers (a few
# samples land there), with that reason; nothing is "stripped".
plt=$(readelf -SW "${hotloop}" | sed 's/^ *\[ *[0-9]*\]//' |
  awk '$1 ~ /^\.plt/ { print $3, $5 }' | while read -r start size; do
    echo "$((16#${start})) $((16#${start} + 16#${size}))"
  done)
[[ -n "${plt}" ]] || fail "no .plt section in ${hotloop}"
while read -r offset; do
  address=$((16#${offset}))
  awk -v a="${address}" '{ if (a >= $1 && a < $2) found = 1 } END { exit !found }' <<<"${plt}" ||
    fail "hotloop+0x${offset} is unnamed and not in the PLT (${plt})"
done < <(grep -oE 'hotloop\+0x[0-9a-f]+' "${tmp}/named.raw" | sed 's/^hotloop+0x//' | sort -u)
! grep -F "hotloop: functions without a name" "${tmp}/named.log" | grep -qvF "an address in no function of its symbol table" ||
  fail "hotloop with its symbols said another reason: $(grep -F 'hotloop: functions without a name' "${tmp}/named.log")"
echo PASS
