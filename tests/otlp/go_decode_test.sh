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
go=$(ringprof_go) || { echo "no Go >= 1.24 found (run tools/setup)" >&2; exit 1; }
tmp=${TEST_TMPDIR:-$(mktemp -d)}
src="${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/otlp/decode"
cp -rL "$src" "$tmp/decode"
chmod -R u+w "$tmp/decode"
(cd "$tmp/decode" && env HOME="$tmp" GOCACHE="$RINGPROF_GOCACHE" \
   GOMODCACHE="$RINGPROF_GOMODCACHE" GOPROXY=off GOFLAGS=-mod=mod \
   GOTOOLCHAIN=local "$go" build -o "$tmp/otlp-decode" .) || {
  echo "building the Go decoder failed (module cache: $RINGPROF_GOMODCACHE; run tools/setup)" >&2
  exit 1
}

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
