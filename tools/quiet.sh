# Sourced by tools/demo and tools/test: steps a user reads, and Bazel runs
# whose own output goes to "${log}" (set by the caller) while one progress
# line shows how far they are. Nothing here prints Bazel's chatter unless a
# step fails.

step() {
  if [[ -t 1 ]]; then printf '\033[1m== %s\033[0m\n' "$*"; else printf '== %s\n' "$*"; fi
}

die() {
  printf '%s: %s\n' "$(basename "$0")" "$*" >&2
  exit 1
}

# The errors of the last Bazel run (at most 40 lines), then where the whole
# log is.
die_with_log() {
  {
    printf '%s: %s\n' "$(basename "$0")" "$1"
    grep -E '^(ERROR|FAIL|FAILED)|: error:|error: ' "${log}" | awk '!seen[$0]++' | tail -40 || true
    printf 'Full output: %s\n' "${log}"
  } >&2
  exit 1
}

# quiet_bazel BAZEL_COMMAND...: runs it with its output appended to ${log};
# meanwhile shows Bazel's "[done / total]" progress, in place on a terminal,
# else one line a minute. Returns Bazel's exit status.
quiet_bazel() {
  "$@" --color=no --curses=no >>"${log}" 2>&1 &
  local pid=$! last_print=${SECONDS} progress shown=0
  while kill -0 "${pid}" 2>/dev/null; do
    sleep 2
    progress=$(grep -aoE '^\[[0-9,]+ / [0-9,]+\]' "${log}" | tail -1 || true)
    [[ -n ${progress} ]] || continue
    if [[ -t 1 ]]; then
      printf '\r   %s actions, %d s' "${progress}" "${SECONDS}"
      shown=1
    elif ((SECONDS - last_print >= 60)); then
      printf '   %s actions, %d s\n' "${progress}" "${SECONDS}"
      last_print=${SECONDS}
    fi
  done
  ((shown)) && printf '\r\033[K'
  wait "${pid}"
}
