#!/usr/bin/env bash
# The Go toolchain and module cache of the tests that build Go programs
# against modules from the Go module proxy (tests/otlp/decode).
#
#   source tools/go_modules.sh   # ringprof_go, ringprof_go_build, RINGPROF_GO*
#   tools/go_modules.sh download MODULE_DIR...   # fills the cache (setup)
#
# Tests run offline (GOPROXY=off) against RINGPROF_GOMODCACHE, which
# tools/setup fills once.
RINGPROF_GOMODCACHE=${RINGPROF_GOMODCACHE:-/var/cache/ringprof/gomod}
# Build cache shared by those tests (compiling the modules takes minutes).
RINGPROF_GOCACHE=${RINGPROF_GOCACHE:-/var/cache/ringprof/gocache}

# Prints the path of a Go of at least 1.24 (what the modules need).
ringprof_go() {
  local candidate version
  for candidate in "$(command -v go || true)" /usr/local/go/bin/go \
      /usr/lib/go-1.2[4-9]/bin/go; do
    [[ -n "$candidate" && -x "$candidate" ]] || continue
    version=$(GOTOOLCHAIN=local "$candidate" env GOVERSION 2>/dev/null) || continue
    version=${version#go}
    local major=${version%%.*} rest=${version#*.}
    local minor=${rest%%.*}
    if ((major > 1 || (major == 1 && minor >= 24))); then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

# ringprof_go_build MODULE_DIR OUT: builds the module's main package
# offline into OUT (a copy of MODULE_DIR is built, runfiles are read-only).
ringprof_go_build() {
  local go tmp
  go=$(ringprof_go) || { echo "no Go >= 1.24 found (run tools/setup)" >&2; return 1; }
  tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/gobuild.XXXXXX")
  cp -rL "$1/." "$tmp"
  chmod -R u+w "$tmp"
  (cd "$tmp" && env HOME="$tmp" GOCACHE="$RINGPROF_GOCACHE" \
     GOMODCACHE="$RINGPROF_GOMODCACHE" GOPROXY=off GOFLAGS=-mod=mod \
     GOTOOLCHAIN=local "$go" build -o "$2" .) || {
    echo "building $1 failed (module cache $RINGPROF_GOMODCACHE: run tools/setup)" >&2
    return 1
  }
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  [[ "${1:-}" == download ]] || { echo "usage: $0 download MODULE_DIR..." >&2; exit 2; }
  shift
  go=$(ringprof_go) || { echo "$0: no Go >= 1.24 on this machine" >&2; exit 1; }
  mkdir -p "$RINGPROF_GOMODCACHE" "$RINGPROF_GOCACHE"
  for dir in "$@"; do
    (cd "$dir" && GOMODCACHE="$RINGPROF_GOMODCACHE" GOFLAGS=-mod=mod \
       GOTOOLCHAIN=local "$go" mod download &&
     GOMODCACHE="$RINGPROF_GOMODCACHE" GOCACHE="$RINGPROF_GOCACHE" \
       GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local "$go" build -o /dev/null .)
  done
fi
