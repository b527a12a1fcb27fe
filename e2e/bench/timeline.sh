#!/usr/bin/env bash
# Where one sandboxed launch spends its wall time: runs COMMAND RUNS times
# under `perf record` with a handful of scheduler and system-call
# tracepoints (cheap: no per-system-call tracing) and prints the median
# time from the start of agent-sandbox to each step: the sandbox init's
# exec, its pivot_root, the agent's confinement (landlock_restrict_self),
# the agent's exec and exit, init's exit and agent-sandbox's exit.
# Needs perf (Debian: linux-perf) and root or perf_event_paranoid <= 1.
# Usage: e2e/bench/timeline.sh RUNS AGENT-SANDBOX-COMMAND...
set -euo pipefail
runs=$1
shift
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '#!/bin/sh\nfor i in $(seq %d); do "$@" >/dev/null 2>&1; done\n' "$runs" > "$out/loop"
chmod +x "$out/loop"
perf record -q -o "$out/perf.data" \
  -e sched:sched_process_exec -e sched:sched_process_exit -e sched:sched_process_fork \
  -e syscalls:sys_enter_pivot_root -e syscalls:sys_enter_landlock_restrict_self \
  "$out/loop" "$@" 2>/dev/null
perf script -i "$out/perf.data" -F comm,pid,tid,time,event,trace 2>/dev/null > "$out/events"
python3 - "$out/events" "$1" <<'PY'
import os, re, statistics, sys

exe = os.path.basename(sys.argv[2])
runs, cur = [], None
for line in open(sys.argv[1]):
    m = re.match(r"\s*(\S+)\s+(\d+)/(\d+)\s+\[?\d*\]?\s*([\d.]+):\s+(\S+):\s*(.*)", line)
    if not m:
        continue
    comm, pid, tid, t, ev, rest = m.group(1), int(m.group(2)), int(m.group(3)), float(m.group(4)) * 1000, m.group(5), m.group(6)
    if ev == "sched:sched_process_exec":
        fn = re.search(r"filename=(\S+)", rest).group(1)
        if os.path.basename(fn) == exe and fn != "/proc/self/exe":
            cur = {"start": t, "pid": pid}
            runs.append(cur)
        elif cur and fn == "/proc/self/exe":
            cur["init exec"] = t
            cur["init"] = pid
        elif cur and "init" in cur and "agent exec" not in cur:
            cur["agent exec"] = t
            cur["agent"] = pid
    elif not cur:
        continue
    elif ev == "syscalls:sys_enter_pivot_root" and "pivot_root" not in cur:
        cur["pivot_root"] = t
    elif ev == "syscalls:sys_enter_landlock_restrict_self" and "init" in cur:
        cur["restrict_self"] = t
    elif ev == "sched:sched_process_exit":
        if pid == tid == cur.get("agent"):
            cur["agent exit"] = t
        elif pid == tid == cur.get("init"):
            cur["init exit"] = t
        elif pid == tid == cur["pid"]:
            cur["exit"] = t
steps = ["init exec", "pivot_root", "restrict_self", "agent exec", "agent exit", "init exit", "exit"]
done = [r for r in runs if all(s in r for s in steps)]
print(f"{len(done)} of {len(runs)} runs complete; median ms from agent-sandbox's exec:")
print("| step | at ms | since previous ms |")
print("|---|---|---|")
prev = 0.0
for s in steps:
    at = statistics.median(r[s] - r["start"] for r in done)
    print(f"| {s} | {at:.2f} | {at - prev:.2f} |")
    prev = at
PY
