#!/usr/bin/env python3
"""What profiling a command costs in CPU: shared by tools/bench.d's
compile_overhead and make_build.

Runs CMD in four variants, interleaved (a new random order each round), and
prints medians of the CPU time (user + system) of the whole process tree:
  alone      the command, nothing preloaded;
  floor      a do-nothing malloc interposer preloaded (what preloading any
             library costs: emitter/bench/noop_preload.c);
  emitter    libringprof.so preloaded, no collector (its rings left unread);
  run        `ringprof run -- CMD` (command, emitter and collector).
Ratios are against `alone` of the same rounds, as the median of the
variant's times over the median of alone's and as the median of per-round
ratios. Also the collector's own CPU (all its threads, not the command's:
read from its /proc stat once it has exited, before it is reaped), and the
load average at the start and the end.

The rings go where `ringprof run` puts them by default: a fresh
directory under /dev/shm (tmpfs), or under the work directory when
/dev/shm is not writable; --ring-base DIR puts them elsewhere (a disk
filesystem adds page-cache and block allocation to each fresh ring page).

With --tree SRC each run works in a fresh copy of SRC (copied before the
clock starts; removed after). The command runs from that copy (or from
--cwd) with its output discarded; a failure stops the benchmark.

usage: bench_overhead.py --name NAME --ringprof PATH --emitter PATH
         --floor PATH [--rounds N] [--target X] [--tree SRC]
         [--ring-base DIR] -- CMD ARGS...
"""

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TICKS = os.sysconf("SC_CLK_TCK")
VARIANTS = ("alone", "floor", "emitter", "run")


def run_tree(argv, cwd, env=None):
    """(CPU of the process tree, the process's own CPU, wall seconds)."""
    start = time.monotonic()
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    # Exited but not reaped: its stat still holds its own CPU time.
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
    wall = time.monotonic() - start
    with open(f"/proc/{p.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / TICKS
    _, status, usage = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"bench_overhead: {' '.join(argv)} failed ({status})")
    return usage.ru_utime + usage.ru_stime, own, wall


def default_ring_base():
    """Where `ringprof run` makes its ring directory: /dev/shm when it can,
    else None (the work directory)."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def one_run(variant, args, work, i):
    cwd = os.path.join(work, f"tree.{variant}.{i}")
    if args.tree:
        shutil.copytree(args.tree, cwd, symlinks=True)
    else:
        os.mkdir(cwd)
    env = dict(os.environ)
    rings = tempfile.mkdtemp(dir=args.ring_base or work)
    argv = list(args.cmd)
    if variant == "floor":
        env["LD_PRELOAD"] = args.floor
    elif variant == "emitter":
        env.update(LD_PRELOAD=args.emitter, RINGPROF_DIR=rings)
    elif variant == "run":
        argv = [args.ringprof, "run", f"--emitter={args.emitter}",
                f"--ring-dir={rings}", f"--output-dir={work}/out.{i}",
                "--"] + argv
    result = run_tree(argv, cwd, env)
    shutil.rmtree(cwd)
    shutil.rmtree(rings)
    shutil.rmtree(f"{work}/out.{i}", ignore_errors=True)
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", required=True)
    parser.add_argument("--ringprof", required=True)
    parser.add_argument("--emitter", required=True)
    parser.add_argument("--floor", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--target", type=float, default=1.05)
    parser.add_argument("--tree")
    parser.add_argument("--ring-base", default=default_ring_base())
    parser.add_argument("cmd", nargs="+")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    cpu = {v: [] for v in VARIANTS}
    collector, per_wall = [], []
    with tempfile.TemporaryDirectory() as work:
        for i in range(args.rounds):
            order = list(VARIANTS)
            random.shuffle(order)
            for variant in order:
                total, own, wall = one_run(variant, args, work, i)
                cpu[variant].append(total)
                if variant == "run":
                    collector.append(own)
                    per_wall.append(own / wall)
    alone = statistics.median(cpu["alone"])
    name = args.name
    print(f"{name}: load average {load_start:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end; {args.rounds} interleaved "
          f"rounds, medians of CPU seconds (user + system, process tree)")
    print(f"{name}:   {'alone':<22}{alone:7.2f} s")
    for variant, label in (("floor", "floor (no-op preload)"),
                           ("emitter", "emitter only"),
                           ("run", "ringprof run")):
        m = statistics.median(cpu[variant])
        per_round = statistics.median(
            v / a for v, a in zip(cpu[variant], cpu["alone"]))
        target = f"  [target <= {args.target:.2f}x]" if variant == "run" else ""
        print(f"{name}:   {label:<22}{m:7.2f} s -> {m / alone:.3f}x "
              f"(per round {per_round:.3f}x){target}")
    c = statistics.median(collector)
    print(f"{name}:   collector's own CPU {c:.2f} s = {100 * c / alone:.1f} % "
          f"of the command alone, {100 * statistics.median(per_wall):.1f} % "
          f"of a core while it ran")


if __name__ == "__main__":
    main()
