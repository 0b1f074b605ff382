#!/usr/bin/env bash
# Decodes OTLP requests ringprof makes with go.opentelemetry.io/proto/otlp
# of opentelemetry-proto v1.10.0 (decode/, its module versions pinned in
# decode/go.mod and go.sum) and checks that nothing is an unknown field
# and that what arrived is what the pprof held.
#
# Offline: the modules come from the cache tools/setup fills
# (tools/go_modules.sh); GOPROXY=off.
set -euo pipefail

source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/go_modules.sh"
tmp=${TEST_TMPDIR:-$(mktemp -d)}
ringprof_go_build "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/otlp/decode" "$tmp/otlp-decode"

mkdir -p "$tmp/requests"
if [[ $# -gt 0 ]]; then "$1" "$tmp/requests"; fi
shopt -s nullglob
files=("$tmp"/requests/*.pb)
if ((${#files[@]} == 0)); then echo "no requests written" >&2; exit 1; fi
"$tmp/otlp-decode" "${files[@]}" > "$tmp/decoded.txt" || {
  cat "$tmp/decoded.txt"; exit 1; }
status=0
for f in "${files[@]}"; do
  want="${f%.pb}.want"
  got=$(grep -F "$f " "$tmp/decoded.txt" | cut -d' ' -f2-)
  if [[ "$got" != "$(cat "$want")" ]]; then
    echo "MISMATCH $(basename "$f"):" >&2
    echo "  sent:    $(cat "$want")" >&2
    echo "  decoded: $got" >&2
    status=1
  else
    echo "ok $(basename "$f"): $got"
  fi
done
exit $status
