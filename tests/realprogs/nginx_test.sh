#!/usr/bin/env bash
# Debian's nginx under `ringprof run`: a root master and two workers that
# switch to nobody, in ringprof's private 0700 ring directory. Every worker
# must get a ring (created before it drops privileges) and the workers'
# CPU must be in the profiles; nothing may land in nginx's error log.
set -uo pipefail
source "${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}/tests/realprogs/lib.sh"
need nginx
need python3
if [[ $(id -u) -ne 0 ]]; then
  echo "NOT RUN: nginx can only switch its workers to another user as root"
  exit 0
fi

port=$(free_port)
conf="${tmp}/nginx.conf"
cat >"${conf}" <<CONF
daemon off;
master_process on;
worker_processes 2;
user nobody nogroup;
error_log ${tmp}/error.log info;
pid ${tmp}/nginx.pid;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${tmp}/body;
  proxy_temp_path ${tmp}/proxy;
  fastcgi_temp_path ${tmp}/fastcgi;
  uwsgi_temp_path ${tmp}/uwsgi;
  scgi_temp_path ${tmp}/scgi;
  server {
    listen 127.0.0.1:${port};
    location / { return 200 "hello\n"; }
  }
}
CONF
chmod 755 "${tmp}"  # the workers (nobody) read nothing here, but may stat
out="${tmp}/out"
timeout --kill-after=5 120 "${ringprof}" run --output-dir="${out}" \
  --log-level=debug -- nginx -c "${conf}" -e "${tmp}/error.log" \
  >"${tmp}/run.log" 2>&1 &
run_pid=$!
wait_for 30 test -s "${tmp}/nginx.pid" || fail "nginx did not start: $(cat "${tmp}/run.log")"
master=$(cat "${tmp}/nginx.pid")
wait_for 30 bash -c "(( \$(pgrep -c -P ${master}) >= 2 ))" || fail "no workers"
workers=$(pgrep -P "${master}" | tr '\n' ' ')
echo "master ${master}, workers ${workers}"
for w in ${workers}; do
  [[ $(stat -c %U "/proc/${w}") == nobody ]] || fail "worker ${w} is not nobody"
done
# Load for about 3 s: the workers' CPU.
python3 - "${port}" <<'PY' || fail "requests failed"
import sys, time, urllib.request
url = "http://127.0.0.1:%s/" % sys.argv[1]
end, n = time.time() + 3, 0
while time.time() < end:
    assert urllib.request.urlopen(url, timeout=5).read() == b"hello\n"
    n += 1
print("requests", n)
PY
kill -QUIT "${master}"  # graceful shutdown
wait "${run_pid}"
status=$?
grep -v '^ ' "${tmp}/run.log" | head -30
[[ ${status} -eq 0 ]] || fail "ringprof run exited ${status}"
for w in ${workers}; do
  grep -q "following .*/nginx\.${w}\.[0-9.]*ring" "${tmp}/run.log" ||
    fail "worker ${w} has no ring"
done
cpu_workers=0
for w in ${workers}; do
  compgen -G "${out}/nginx/process_cpu/${w}.*.pb.gz" >/dev/null && cpu_workers=$((cpu_workers + 1))
done
((cpu_workers >= 1)) || fail "no worker's CPU in the profiles: $(ls -R "${out}/nginx")"
! grep -q ringprof "${tmp}/error.log" || fail "ringprof wrote to nginx's error log: $(grep ringprof "${tmp}/error.log")"
echo "PASS (${cpu_workers} workers with CPU samples)"
