#!/usr/bin/env bash
# Runs interpose_behaviour_test_bin with libringprof.so preloaded three
# times: every wait sampled (rate 1 ns), the default rates, and both
# off-CPU profiles off; the first run must have recorded lock and block
# samples.
#
# Usage: interpose_behaviour_test.sh [qemu]
#   qemu: the binary and the library are aarch64 builds, run under
#   `qemu-aarch64 -cpu max` (the library is the program's LD_PRELOAD, not
#   qemu's); the rings are read by the host's ringdump. Without the robust
#   mutex case: qemu-user 7.2 does not implement set_robust_list, so a
#   robust mutex whose owner died is never handed on (the case hangs there
#   without the emitter too).
set -uo pipefail

root="${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}"
lib="${root}/emitter/libringprof.so"
bin="${root}/tests/offcpu/interpose_behaviour_test_bin"
ringdump="${root}/ringfile/ringdump"
failed=0
preload=(LD_PRELOAD="${lib}")
runner=()
bin_args=()
if [[ ${1:-} == qemu ]]; then
  preload=(QEMU_SET_ENV="LD_PRELOAD=${lib}")
  runner=(qemu-aarch64 -cpu max)
  bin_args=(--gtest_filter=-MutexTest.ErrorCheckingRecursiveAndRobustMutexes)
fi

run() {
  local name=$1
  shift
  local dir="${TEST_TMPDIR:?}/${name}"
  mkdir -p "${dir}"
  echo "=== ${name}: $*"
  if ! env RINGPROF_DIR="${dir}" "$@" "${preload[@]}" \
    timeout --kill-after=5 120 ${runner[@]+"${runner[@]}"} "${bin}" \
    ${bin_args[@]+"${bin_args[@]}"}; then
    echo "FAIL: ${name}"
    failed=1
  fi
}

run all RINGPROF_MUTEX_SAMPLE_NS=1 RINGPROF_BLOCK_SAMPLE_NS=1
run defaults
run off RINGPROF_MUTEX_SAMPLE_NS=0 RINGPROF_BLOCK_SAMPLE_NS=0

dump_all() {
  local ring
  for ring in "$1"/*.ring; do
    [[ -e ${ring} ]] && "${ringdump}" "${ring}" 2>&1
  done
}

dump=$(dump_all "${TEST_TMPDIR}/all")
for kind in lock block; do
  n=$(grep -c "WaitSample ${kind} " <<<"${dump}")
  echo "all: ${n} ${kind} samples"
  if [[ ${n} -lt 1 ]]; then
    echo "FAIL: no ${kind} WaitSample recorded with every wait sampled"
    failed=1
  fi
done
# DescriptorKindTest's reads on reused descriptor numbers (by their spans).
for span in 5eed0f0000000001 5eed0f0000000002; do
  if ! grep -q "WaitSample block .* span=${span}" <<<"${dump}"; then
    echo "FAIL: the read of span ${span} (a reused descriptor number) was not timed"
    failed=1
  fi
done
if dump_all "${TEST_TMPDIR}/off" | grep -q WaitSample; then
  echo "FAIL: WaitSample recorded with both profiles off"
  failed=1
fi
exit ${failed}
