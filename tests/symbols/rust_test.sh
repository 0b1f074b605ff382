#!/usr/bin/env bash
# A std-only Rust program (rust_workload.rs), built by rustc with Rust's
# default (legacy) mangling and with v0, under `ringprof run`: its profiles
# hold no mangled name anywhere (pprof, top table, flame graph), and name
# the program's own functions exactly as rustfilt prints them.
set -uo pipefail
real_home=$(getent passwd "$(id -u)" | cut -d: -f6)
source "${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}/tests/symbols/lib.sh"

# rustc: rustup's on PATH or in ~/.cargo/bin (its proxy needs its own
# home), else Debian's (tools/setup installs it where neither is).
rustc=""
for candidate in "$(command -v rustc)" "${real_home}/.cargo/bin/rustc" /usr/bin/rustc; do
  if [[ -n "${candidate}" && -x "${candidate}" ]]; then rustc=${candidate}; break; fi
done
[[ -n "${rustc}" ]] || fail "rustc is not installed (run tools/setup)"
export RUSTUP_HOME="${RUSTUP_HOME:-${real_home}/.rustup}" CARGO_HOME="${CARGO_HOME:-${real_home}/.cargo}"
"${rustc}" --version || fail "${rustc} does not run"
source_file="${runfiles}/tests/symbols/rust_workload.rs"

# What rustfilt prints for the program's own functions. A legacy name has
# no generic arguments; v0 names them.
declare -A generic=([legacy]="workload::generic_work"
                    [v0]="workload::generic_work::<workload::Square>")

# Names left mangled: Itanium/legacy and v0 prefixes, legacy escapes, a
# legacy hash, a v0 crate disambiguator.
mangled='^_Z|^_R[A-Z]|[$](LT|GT|u[0-9a-f]{2}|C|RF|BP)[$]|::h[0-9a-f]{16}$|[a-z_]\[[0-9a-f]{16}\]'

for mangling in legacy v0; do
  echo "--- ${mangling} mangling"
  binary="${tmp}/workload_${mangling}"
  flags=()
  [[ ${mangling} == v0 ]] && flags=(-C symbol-mangling-version=v0)
  "${rustc}" -O -C debuginfo=1 "${flags[@]}" --crate-name workload \
    -o "${binary}" "${source_file}" || fail "rustc failed"
  nm "${binary}" >"${binary}.nm" || fail "nm ${binary}"
  if [[ ${mangling} == v0 ]]; then
    grep -q ' _RNvCs[0-9A-Za-z]*_8workload9churn_map$' "${binary}.nm" ||
      fail "rustc did not use v0 mangling"
  else
    grep -q ' _ZN8workload9churn_map17h[0-9a-f]\{16\}E$' "${binary}.nm" ||
      fail "rustc did not use legacy mangling"
  fi
  out="${tmp}/out_${mangling}"
  timeout --kill-after=5 300 "${ringprof}" run --output-dir="${out}" \
    -- "${binary}" 200 >"${tmp}/${mangling}.log" 2>&1 ||
    { tail -20 "${tmp}/${mangling}.log"; fail "ringprof run exited $?"; }

  cpu="${tmp}/${mangling}_cpu.txt"
  memory="${tmp}/${mangling}_memory.txt"
  function_names "${out}/process_cpu.pb.gz" >"${cpu}"
  function_names "${out}/memory.pb.gz" alloc_space >"${memory}"
  echo "$(wc -l <"${cpu}") functions in the CPU profile, $(wc -l <"${memory}") in the memory profile"
  (($(wc -l <"${cpu}") >= 10)) || fail "too few functions in the CPU profile: $(cat "${cpu}")"
  if grep -hE -- "${mangled}" "${cpu}" "${memory}"; then
    fail "mangled names in the profiles (above)"
  fi
  for name in "workload::main" "workload::churn_map" "workload::compare_slices" \
      "<workload::Square as workload::Shape>::area" "${generic[${mangling}]}"; do
    has_name "${cpu}" "${name}" || fail "the CPU profile does not name ${name}: $(grep workload "${cpu}")"
  done
  has_name "${memory}" "workload::churn_map" ||
    fail "the memory profile does not name workload::churn_map: $(grep workload "${memory}")"
  # The top table and the flame graph show the same names (the flame
  # graph's JSON writes < and > as \u003c and \u003e).
  grep -qF "<workload::Square as workload::Shape>::area" "${out}/top.txt" ||
    fail "top.txt does not name the trait method: $(head -30 "${out}/top.txt")"
  grep -qF '\u003cworkload::Square as workload::Shape\u003e::area' "${out}/flamegraph.html" ||
    fail "flamegraph.html does not name the trait method"
  grep -qF '"workload::churn_map"' "${out}/memory.html" ||
    fail "memory.html does not name workload::churn_map"
  if grep -qE -- "_ZN8workload|_RNv[A-Za-z0-9_]*8workload|::h[0-9a-f]{16}" \
      "${out}/top.txt" "${out}/flamegraph.html" "${out}/memory.html"; then
    fail "a mangled name in top.txt or the flame graphs"
  fi
done
echo PASS
