#!/usr/bin/env bash
# Launch cost of agent-sandbox against bare runs, the floor and other
# sandboxes, measured round-robin: every round runs every command of a table
# once, in a fresh random order, so that load from other work on the machine
# falls on all of them alike; ratios are taken within a round, and the table
# shows their median over the rounds.
#
# Tables (Markdown on stdout):
#   1. /bin/true: bare; a Go program that only execs it; the floor (floor.c,
#      a static C program making the engine's namespace, mount, Landlock,
#      capability, no_new_privs and seccomp calls, built here with the
#      system C compiler); agent-sandbox open, --offline, with an allow
#      list and --no-sandbox; agent-sandbox --sandbox-backend nono open,
#      --offline and with an allow list, and nono alone running the
#      profile agent-sandbox wrote (when a nono is found); bwrap open and
#      offline; firejail (when installed) open and offline.
#   2. real agents (when installed): claude --version and pi --version,
#      bare, under agent-sandbox --offline with the built-in agent folder,
#      under nono (--offline, and with the folder's allow list) and under
#      bwrap without a network.
#   3. scaling: agent-sandbox with 0, 10, 100 and 1,000 read grants, and a
#      command 25 node_modules levels deep against the same script at the top.
#
# Needs: go, a C compiler with a static libc (Debian: gcc, libc6-dev),
# python3, bwrap (Debian: bubblewrap); firejail optional.
# Usage: e2e/bench/launch.sh [ROUNDS] [TABLES]
#   ROUNDS default 30; TABLES a subset of "true agents scaling" (default all).
#   AGENTS=/dir/with/claude/and/pi (default /opt/agent-sandbox-e2e/node_modules/.bin)
#   NONO=/path/to/nono (default: nono on PATH, else the newest
#   /opt/nono-*/bin/nono, where .ci/run builds it); without one the nono
#   rows are left out, saying so.
#   AS=/path/to/agent-sandbox uses that binary instead of building one
#   (built with CGO_ENABLED=0, as the README says).
#   BEFORE=/path/to/an/older/agent-sandbox adds its rows to the /bin/true
#   table, in the same rounds (before/after comparisons).
set -euo pipefail
rounds=${1:-30}
tables=${2:-"true agents scaling"}
repo=$(cd "$(dirname "$0")/../.." && pwd)
agents_bin=${AGENTS:-/opt/agent-sandbox-e2e/node_modules/.bin}
work=$(mktemp -d /tmp/agent-sandbox-bench.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
for tool in go python3 bwrap; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
cc=${CC:-cc}

if [ -n "${AS:-}" ]; then
  cp "$AS" "$work/agent-sandbox"
else
  (cd "$repo" && CGO_ENABLED=0 go build -o "$work/agent-sandbox" ./cmd/agent-sandbox)
fi
if [ -n "${BEFORE:-}" ]; then
  cp "$BEFORE" "$work/before"
fi
mkdir -p "$work/execgo"
cat > "$work/execgo/main.go" <<'GO'
package main

import "syscall"

func main() { _ = syscall.Exec("/bin/true", []string{"true"}, nil) }
GO
(cd "$work/execgo" && printf 'module execgo\ngo 1.24\n' > go.mod && CGO_ENABLED=0 go build -o "$work/exec-true" .)
"$cc" -static -O2 -o "$work/floor" "$repo/e2e/bench/floor.c"

# Agent folders: /bin/true with an open network (--offline blocks it).
folder() { # NAME COMMAND [NONO_JSON]
  mkdir -p "$work/agents/$1/sandbox"
  printf 'command = "%s"\n' "$2" > "$work/agents/$1/agent.toml"
  echo "${3:-{\}}" > "$work/agents/$1/sandbox/nono.json"
}
folder true /bin/true
for n in 10 100 1000; do
  mkdir -p "$work/grants/$n"
  list=$(python3 -c "import sys; n=int(sys.argv[1]); d=sys.argv[2]; print(','.join('\"%s/g%04d\"' % (d, i) for i in range(n)))" "$n" "$work/grants/$n")
  (cd "$work/grants/$n" && python3 -c "import os,sys; [os.mkdir('g%04d' % i) for i in range(int(sys.argv[1]))]" "$n")
  folder "grants-$n" /bin/true "{\"filesystem\": {\"read\": [$list]}}"
done
deep="$work/deep"
for i in $(seq 25); do deep="$deep/node_modules/pkg$i"; done
mkdir -p "$deep/bin" "$work/shallow/bin"
printf '#!/bin/sh\nexit 0\n' > "$deep/bin/tool"
cp "$deep/bin/tool" "$work/shallow/bin/tool"
chmod 755 "$deep/bin/tool" "$work/shallow/bin/tool"
folder deep "$deep/bin/tool"
folder shallow "$work/shallow/bin/tool"
mkdir -p "$work/home" "$work/project"

nono=${NONO:-$(command -v nono || ls -d /opt/nono-*/bin/nono 2>/dev/null | sort -V | tail -1 || true)}
if [ -n "$nono" ] && [ ! -x "$nono" ]; then
  echo "NONO=$nono is not executable" >&2
  exit 1
fi
[ -n "$nono" ] || echo "no nono found (set NONO): the nono rows are left out" >&2

export HOME="$work/home" PATH=/usr/bin:/bin
# nono's directory goes first on PATH, so that --sandbox-backend nono finds
# it (the landlock rows name their backend; no row runs nono by default).
[ -z "$nono" ] || PATH="$(dirname "$nono"):$PATH"
as="$work/agent-sandbox --sandbox-backend landlock"
an="$work/agent-sandbox --sandbox-backend nono"
if [ -n "$nono" ]; then
  # The profile agent-sandbox writes for the open /bin/true folder, for
  # the row of nono alone (a dry run leaves no profile, a run does).
  (cd "$work/project" && $an "$work/agents/true")
  nono_profile="$HOME/.local/state/agent-sandbox/agents/true/nono-profile.json"
  test -s "$nono_profile" || { echo "agent-sandbox wrote no nono profile" >&2; exit 1; }
  cp "$nono_profile" "$work/nono-profile.json"
fi
bw='bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent'
fj=$(command -v firejail || true)

{
  echo "TABLE true"
  echo "true|/bin/true"
  echo "Go program that execs true|$work/exec-true"
  echo "floor (static C), open|$work/floor /bin/true"
  echo "floor (static C), offline|$work/floor --offline /bin/true"
  echo "agent-sandbox, open|$as $work/agents/true"
  echo "agent-sandbox --offline|$as --offline $work/agents/true"
  echo "agent-sandbox, allow list|$as --allow-host api.example.com $work/agents/true"
  echo "agent-sandbox --no-sandbox|$work/agent-sandbox --no-sandbox $work/agents/true"
  if [ -n "$nono" ]; then
    echo "agent-sandbox --sandbox-backend nono, open|$an $work/agents/true"
    echo "agent-sandbox --sandbox-backend nono --offline|$an --offline $work/agents/true"
    echo "agent-sandbox --sandbox-backend nono, allow list|$an --allow-host api.example.com $work/agents/true"
    echo "nono alone (the same profile), open|env NONO_NO_UPDATE_CHECK=1 $nono -s run --profile $work/nono-profile.json --workdir $work/project --allow-cwd -- /bin/true"
  fi
  if [ -n "${BEFORE:-}" ]; then
    echo "before: agent-sandbox, open|$work/before --sandbox-backend landlock $work/agents/true"
    echo "before: agent-sandbox --offline|$work/before --sandbox-backend landlock --offline $work/agents/true"
    echo "before: agent-sandbox --no-sandbox|$work/before --no-sandbox $work/agents/true"
  fi
  echo "bwrap --unshare-all --share-net (open)|$bw --share-net /bin/true"
  echo "bwrap --unshare-all (offline)|$bw /bin/true"
  if [ -n "$fj" ]; then
    echo "firejail --noprofile (open)|$fj --quiet --noprofile /bin/true"
    echo "firejail --noprofile --net=none (offline)|$fj --quiet --noprofile --net=none /bin/true"
  fi
  if [ -x "$agents_bin/claude" ] && [ -x "$agents_bin/pi" ]; then
    echo "TABLE agents"
    for a in claude pi; do
      echo "$a --version|$agents_bin/$a --version"
      echo "agent-sandbox --offline $a --version (built-in folder)|env PATH=$agents_bin:/usr/bin:/bin $as --offline $a --version"
      if [ -n "$nono" ]; then
        echo "agent-sandbox --sandbox-backend nono --offline $a --version|env PATH=$(dirname "$nono"):$agents_bin:/usr/bin:/bin $an --offline $a --version"
        echo "agent-sandbox --sandbox-backend nono $a --version (its allow list)|env PATH=$(dirname "$nono"):$agents_bin:/usr/bin:/bin $an $a --version"
      fi
      echo "bwrap --unshare-all (offline) $a --version|$bw $agents_bin/$a --version"
    done
  fi
  echo "TABLE scaling"
  echo "agent-sandbox, open, 0 read grants|$as $work/agents/true"
  for n in 10 100 1000; do
    echo "agent-sandbox, open, $n read grants|$as $work/agents/grants-$n"
  done
  echo "agent-sandbox, script at the top|$as $work/agents/shallow"
  echo "agent-sandbox, script 25 node_modules levels deep|$as $work/agents/deep"
} > "$work/commands"

cd "$work/project"
python3 - "$work/commands" "$rounds" "$tables" <<'PY'
import os, random, shlex, statistics, sys, time

path, rounds, wanted = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
tables, cur = {}, None
for line in open(path):
    line = line.rstrip("\n")
    if line.startswith("TABLE "):
        cur = line[6:]
        tables[cur] = []
    elif line:
        name, cmd = line.split("|", 1)
        tables[cur].append((name, shlex.split(cmd)))

# Descriptors inherited from whatever started this script are closed: a
# child's descriptor table is sized by its parent's highest open one, and
# agents that start agent-sandbox (node, python) hold only a few. Runs
# that inherit a large table hide what growing a small one costs.
os.closerange(3, os.sysconf("SC_OPEN_MAX"))
devnull = os.open(os.devnull, os.O_RDWR)

# CPU time: wait4's rusage misses what a sandbox's inner processes use when
# the sandbox does not reap them into its own parent (bwrap's do not), so
# the runner moves itself into a cgroup of its own and reads the cgroup's
# CPU counter around each run (its own share in that window is the spawn
# and the wait). Without a writable cgroup, rusage it is, and bwrap's CPU
# is then undercounted.
def cgroup():
    mounts = [l.split() for l in open("/proc/mounts")]
    name = f"agent-sandbox-bench-{os.getpid()}"
    for dev, mnt, fs, opts, *_ in mounts:
        if fs == "cgroup2":
            read = lambda d: int(next(l.split()[1] for l in open(d + "/cpu.stat") if l.startswith("usage_usec"))) * 1000
        elif fs == "cgroup" and "cpuacct" in opts.split(","):
            read = lambda d: int(open(d + "/cpuacct.usage").read())
        else:
            continue
        d = os.path.join(mnt, name)
        try:
            os.mkdir(d)
            with open(d + "/cgroup.procs", "w") as f:
                f.write(str(os.getpid()))
            read(d)
            return d, read
        except OSError:
            try:
                os.rmdir(d)
            except OSError:
                pass
    return None, None

cg, cgread = cgroup()

def leave():
    try:
        with open(os.path.dirname(cg) + "/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))
        os.rmdir(cg)
    except OSError:
        pass

if cg:
    import atexit
    atexit.register(leave)

def run(argv):
    fa = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
    u0 = cgread(cg) if cg else 0
    t0 = time.perf_counter_ns()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=fa)
    _, status, ru = os.wait4(pid, 0)
    t1 = time.perf_counter_ns()
    u1 = cgread(cg) if cg else 0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{shlex.join(argv)} exited with {os.waitstatus_to_exitcode(status)}")
    c = (u1 - u0) / 1e6 if cg else (ru.ru_utime + ru.ru_stime) * 1e3
    return (t1 - t0) / 1e6, c

def pct(xs, q):
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    f = int(k)
    return xs[f] + (xs[min(f + 1, len(xs) - 1)] - xs[f]) * (k - f)

# The reference of each row for the per-round ratios: bwrap with the same
# network (the Go program that only execs true for --no-sandbox), the bare
# command for the real agents, and for the scaling table the 0-grant run
# or the same script at the top.
def reference(table, name):
    if table == "true":
        if "--no-sandbox" in name:
            return "Go program that execs true"
        if "offline" in name or "allow list" in name:
            return "bwrap --unshare-all (offline)"
        return "bwrap --unshare-all --share-net (open)"
    if table == "agents":
        a = "claude" if "claude" in name else "pi"
        return f"{a} --version"
    if "node_modules" in name:
        return "agent-sandbox, script at the top"
    return "agent-sandbox, open, 0 read grants"

print(f"load average {' '.join(open('/proc/loadavg').read().split()[:3])}, {os.cpu_count()} CPUs, {rounds} rounds, "
      f"CPU time from {'the cgroup ' + cg if cg else 'rusage (no writable cgroup: sandboxes that do not reap their inner processes are undercounted)'}")
for t in wanted:
    cmds = tables.get(t)
    if not cmds:
        continue
    for _ in range(3):  # warm-up rounds, not recorded
        for _, argv in cmds:
            run(argv)
    wall = {n: [] for n, _ in cmds}
    cpu = {n: [] for n, _ in cmds}
    for _ in range(rounds):
        order = list(cmds)
        random.shuffle(order)
        for n, argv in order:
            w, c = run(argv)
            wall[n].append(w)
            cpu[n].append(c)
    print()
    print(f"### {t}")
    print()
    print("| command | median ms | p10–p90 ms | CPU ms (median) | reference | wall ratio (median per round) | CPU ratio (median per round) | added wall ms (median per round) |")
    print("|---|---|---|---|---|---|---|---|")
    for n, _ in cmds:
        ref = reference(t, n)
        if ref == n or ref not in wall:
            rr = cr = dd = "—"
            ref = "—"
        else:
            rr = f"{statistics.median(a / b for a, b in zip(wall[n], wall[ref])):.2f}x"
            cr = f"{statistics.median(a / b for a, b in zip(cpu[n], cpu[ref]) if b > 0):.2f}x" if any(cpu[ref]) else "—"
            dd = f"{statistics.median(a - b for a, b in zip(wall[n], wall[ref])):+.2f}"
        print(f"| {n} | {statistics.median(wall[n]):.2f} | {pct(wall[n], .1):.2f}–{pct(wall[n], .9):.2f} | "
              f"{statistics.median(cpu[n]):.2f} | {ref} | {rr} | {cr} | {dd} |")
PY
