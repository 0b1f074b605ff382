# Sourced by tools/setup and tools/debian_root: the Debian archive this
# machine's apt is configured with, so that no tool names a mirror of its
# own.
#
#   debian_mirror    prints the archive's URI without a trailing slash
#                    ($RINGPROF_DEBIAN_MIRROR when set); status 1, with a
#                    message on stderr, when apt has none
#
# apt's own view comes first (`apt-get indextargets`: the sources it has
# fetched, whatever their file format), taking the archive whose Release is
# Debian's own for this release (origin and label "Debian", not -security,
# -updates or a third party); before any `apt-get update` the source files
# themselves are read, taking the first URI ending in /debian.

debian_mirror() {
  local uri=${RINGPROF_DEBIAN_MIRROR:-}
  if [[ -z ${uri} ]]; then
    local codename
    codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
    uri=$(apt-get indextargets --format \
      '$(CODENAME) $(ORIGIN) $(LABEL) $(REPO_URI)' 2>/dev/null |
      awk -v c="${codename}" \
        '$1 == c && $2 == "Debian" && $3 == "Debian" { print $4; exit }') ||
      true
  fi
  if [[ -z ${uri} ]]; then
    uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
      /etc/apt/sources.list.d/*.sources 2>/dev/null |
      grep -v '^[[:space:]]*#' |
      grep -oE 'https?://[^ ]+/debian/?([[:space:]]|$)' | head -1 |
      tr -d '[:space:]') || true
  fi
  if [[ -z ${uri} ]]; then
    echo "no Debian archive in apt's sources (/etc/apt/sources.list*);" \
      "set RINGPROF_DEBIAN_MIRROR to one" >&2
    return 1
  fi
  echo "${uri%/}"
}
