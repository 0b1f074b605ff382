#!/usr/bin/env bash
# tools/demo as a newcomer sees it: run in a copy of the workspace whose
# setup and build are stand-ins (the binaries are this test's), it must end
# well in at most 40 lines, name where the flame graphs are, and show each
# one's hottest functions with names a person can read (template arguments
# elided), while top.txt keeps the full names.
set -euo pipefail

runfiles="${TEST_SRCDIR}/ringprof"
ws="${TEST_TMPDIR}/workspace"
out="${TEST_TMPDIR}/demo"

fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "${ws}/tools" "${ws}/bazel-bin/collector" "${ws}/bazel-bin/emitter" \
  "${ws}/bazel-bin/examples/server"
cp "${runfiles}/tools/demo" "${runfiles}/tools/quiet.sh" "${ws}/tools/"
printf '#!/bin/sh\nexit 0\n' >"${ws}/tools/setup"
chmod +x "${ws}/tools/setup" "${ws}/tools/demo"
ln -s "${runfiles}/collector/ringprof" "${ws}/bazel-bin/collector/ringprof"
ln -s "${runfiles}/emitter/libringprof.so" "${ws}/bazel-bin/emitter/libringprof.so"
ln -s "${runfiles}/examples/server/server" "${ws}/bazel-bin/examples/server/server"

status=0
env -u BUILD_WORKSPACE_DIRECTORY BAZEL=true RINGPROF_DEMO_DIR="${out}" \
  "${ws}/tools/demo" 3 >"${TEST_TMPDIR}/demo.txt" 2>&1 || status=$?
cat "${TEST_TMPDIR}/demo.txt"
((status == 0)) || fail "tools/demo exited ${status}"

lines=$(wc -l <"${TEST_TMPDIR}/demo.txt")
((lines <= 40)) || fail "tools/demo printed ${lines} lines, want at most 40"

/usr/bin/python3 - "${TEST_TMPDIR}/demo.txt" "${out}" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
out = sys.argv[2]
lines = text.splitlines()
def fail(message):
    sys.exit("FAIL: " + message)
# Each flame graph's path, then its hottest functions ("  61.4%  name").
pages = {}
current = None
for line in lines:
    m = re.match(r"ringprof: ([a-zA-Z ]+): +(/\S+\.html) \((\S+)\)$", line)
    if m:
        current = m.group(2)
        pages[current] = []
        continue
    m = re.match(r" *([0-9.]+)%  (\S.*)$", line)
    if m and current:
        pages[current].append(m.group(2))
    else:
        current = None
for page in ("flamegraph.html", "memory.html"):
    path = out + "/" + page
    if path not in pages:
        fail("no line names " + path)
    if not pages[path]:
        fail(page + ": no hottest functions under its path")
for page, names in pages.items():
    for name in names:
        if re.fullmatch(r"\S+\+0x[0-9a-f]+|0x[0-9a-f]+", name):
            fail(page + ": an address, not a name: " + name)
# The server's allocations are its vectors' and strings' (examples/server).
memory = pages[out + "/memory.html"]
if not any(re.search(r"<…>::(allocate|_M_mutate|_M_create)", n) for n in memory):
    fail("memory.html's hottest name no container allocation: %r" % memory)
for noise in ("std::char_traits", "std::allocator<", "(unsigned long"):
    if noise in text:
        fail("an unshortened name in the output: " + noise)
if "file://" + out + "/flamegraph.html" not in text:
    fail("the last step does not say which page to open")
top = open(out + "/top.txt").read()
if "std::__new_allocator<ringprof::examples::JsonValue>::allocate(" not in top:
    fail("top.txt lost the full names:\n" + top[:2000])
print("tools/demo: %d lines; hottest: %r" % (len(lines), pages))
PY
echo PASS
