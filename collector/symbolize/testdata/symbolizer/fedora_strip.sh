#!/usr/bin/env bash
# Strips an ELF file the way Fedora's find-debuginfo does, keeping its
# MiniDebugInfo: the function symbols its .dynsym lacks, in an xz-compressed
# ELF in a .gnu_debugdata section.
#
#   fedora_strip.sh [-d DEBUG_FILE] [-x REGEX] [-o REGEX] IN OUT
#
# -d takes the symbols from IN's separate debug file (IN itself may be
# stripped already, as Debian's libraries are); -x drops the symbols
# matching REGEX from what is kept, -o keeps only those (tests of what
# MiniDebugInfo names). Needs binutils and xz-utils.
set -euo pipefail
exclude='^$' only='.' debug_file=""
while getopts 'd:x:o:' opt; do
  case ${opt} in
    d) debug_file=${OPTARG} ;;
    x) exclude=${OPTARG} ;;
    o) only=${OPTARG} ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
in=$1 out=$2
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT

if [[ -n ${debug_file} ]]; then
  cp "${debug_file}" "${work}/debug"
else
  objcopy --only-keep-debug "${in}" "${work}/debug"
fi
# Names without their @VERSION, as the debug file spells them.
nm -D --without-symbol-versions "${in}" --format=posix --defined-only | awk '{ print $1 }' | sort >"${work}/dynsyms"
# sysv format: the symbol's ELF type in the fourth field.
nm "${work}/debug" --format=sysv --defined-only |
  awk -F '|' '$4 ~ "FUNC" { sub(/ +$/, "", $1); print $1 }' | sort -u >"${work}/funcsyms"
comm -13 "${work}/dynsyms" "${work}/funcsyms" |
  { grep -E -- "${only}" || true; } | { grep -Ev -- "${exclude}" || true; } >"${work}/keep"
objcopy -S --remove-section .gdb_index --remove-section .comment \
  --keep-symbols="${work}/keep" "${work}/debug" "${work}/mini"
xz --threads=1 -c "${work}/mini" >"${work}/mini.xz"
objcopy --add-section .gnu_debugdata="${work}/mini.xz" "${in}" "${work}/with"
strip --strip-all -o "${out}" "${work}/with"
