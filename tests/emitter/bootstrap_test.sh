#!/usr/bin/env bash
# Blocks the emitter hands out from its bootstrap arena while it resolves
# its table (here: the next allocator's malloc is an IFUNC whose resolver
# allocates, bootstrap_alloc.c) are freed and resized long after, at exit:
# the emitter must recognise them and never pass them to glibc (which
# aborts on them), with the emitter on and with RINGPROF_DISABLE=1.
set -uo pipefail

root="${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}"
lib="${root}/emitter/libringprof.so"
allocator="${root}/tests/emitter/libbootstrap_alloc.so"
rings=$(mktemp -d "${TEST_TMPDIR:?}/rings.XXXXXX")

failed=0
for disable in 0 1; do
  for program in /bin/true "/usr/bin/perl -e print(1+1)"; do
    out=$(RINGPROF_DIR="${rings}" RINGPROF_DISABLE="${disable}" \
      LD_PRELOAD="${lib}:${allocator}" timeout 60 ${program} 2>&1)
    status=$?
    echo "RINGPROF_DISABLE=${disable} ${program}: exit ${status}: ${out}"
    # The arena reports a block's requested size; glibc would say more.
    if ((status != 0)) ||
      [[ "${out}" != *"bootstrap_alloc: usable 40 24 moved 1"* ]]; then
      echo "FAIL: RINGPROF_DISABLE=${disable} ${program}"
      failed=1
    fi
  done
done
((failed == 0)) && echo PASS
exit "${failed}"
