#!/usr/bin/env bash
# The cost of `agent-sandbox exec SESSION -- /bin/true` into a live session
# (issue 41, "Speed"), side by side with bwrap, a bare static Go binary and
# agent-sandbox's own start (`version`), in one round-robin run: every round
# runs every command once, in a fresh random order, so that load from other
# work falls on all of them alike; ratios are taken within a round and the
# table shows their median. The rounds run twice: quiet, then with one core
# kept busy (a shell loop outside the measured cgroup).
#
# The session is `agent-sandbox run -- sleep 600` (the built-in engine, the
# namespace view), started by the runner in a HOME of its own and found with
# `agent-sandbox ps --json`; it is ended (SIGTERM to its agent-sandbox, then
# waited for) when the runner ends, on errors and on Ctrl-C too, as is the
# busy loop.
#
# CPU per launch: the runner moves itself into a cgroup it creates (cgroup
# v1 cpuacct if mounted, else cgroup v2; needs root, the table says which)
# and starts the session there, so the counter also holds the session's
# supervisor and the processes it starts for exec (exec's work happens in
# the session, not in the exec client); the session's cgroups are checked
# and every one it moved to is counted too. The idle session's own ticks
# fall on every row alike. Without a writable cgroup, rusage it is, and the
# exec and bwrap rows are then undercounted (the table says so).
#
# Needs: go, python3, bwrap (Debian: bubblewrap); a kernel with user
# namespaces (the view).
# Usage: e2e/bench/exec.sh [ROUNDS]   (default 100)
#   AS=/path/to/agent-sandbox uses that binary instead of building one
#   (built with CGO_ENABLED=0, as the README says).
#   BEFORE=/path/to/an/older/agent-sandbox adds its exec and version rows
#   (before/after comparisons, same session, same rounds).
#   PHASES="quiet busy" (default both).
set -euo pipefail
rounds=${1:-100}
phases=${PHASES:-"quiet busy"}
repo=$(cd "$(dirname "$0")/../.." && pwd)
for tool in go python3 bwrap; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
work=$(mktemp -d /tmp/agent-sandbox-bench-exec.XXXXXX)
chmod 755 "$work"
# The runner writes the pids it starts to $work/pids; whatever it leaves
# (killed itself) is ended here.
cleanup() {
  if [ -s "$work/pids" ]; then
    while read -r pid; do kill -TERM "$pid" 2>/dev/null || true; done < "$work/pids"
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -n "${AS:-}" ]; then
  cp "$AS" "$work/agent-sandbox"
else
  (cd "$repo" && CGO_ENABLED=0 go build -o "$work/agent-sandbox" ./cmd/agent-sandbox)
fi
[ -z "${BEFORE:-}" ] || cp "$BEFORE" "$work/before"
mkdir -p "$work/gobare"
printf 'package main\n\nfunc main() {}\n' > "$work/gobare/main.go"
(cd "$work/gobare" && printf 'module gobare\ngo 1.24\n' > go.mod && CGO_ENABLED=0 go build -o "$work/go-bare" .)
mkdir -p "$work/home" "$work/project"

export HOME="$work/home" PATH=/usr/bin:/bin
cd "$work/project"
python3 - "$work" "$rounds" "$phases" <<'PY'
import atexit, json, os, random, shlex, signal, statistics, sys, time

work, rounds, phases = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
asb = f"{work}/agent-sandbox"
before = f"{work}/before" if os.path.exists(f"{work}/before") else None

os.closerange(3, os.sysconf("SC_OPEN_MAX"))
devnull = os.open(os.devnull, os.O_RDWR)
started = []  # pids this runner started and must end

def note(pid):
    started.append(pid)
    with open(f"{work}/pids", "a") as f:
        f.write(f"{pid}\n")

def reap(pid):
    # End a child and wait for it (it is ours, so wait4 sees its end);
    # SIGKILL after 10 s (a session that does not end on SIGTERM is a bug
    # to report, not to hang on).
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    try:
        while os.waitpid(pid, os.WNOHANG)[0] == 0:
            if time.monotonic() > deadline:
                print(f"pid {pid} ignored SIGTERM for 10 s: killed", file=sys.stderr)
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.02)
    except ChildProcessError:
        pass

def stop_all():
    for pid in reversed(started):
        reap(pid)
    started.clear()

atexit.register(stop_all)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
signal.signal(signal.SIGINT, lambda *_: sys.exit(130))

class Hung(Exception):
    pass

def alarm(*_):
    raise Hung()

signal.signal(signal.SIGALRM, alarm)

# The cgroup: v1 cpuacct first (where it is mounted, as here), else v2.
def cgroup():
    name = f"agent-sandbox-bench-exec-{os.getpid()}"
    mounts = [l.split() for l in open("/proc/mounts")]
    for want in ("cgroup", "cgroup2"):
        for dev, mnt, fs, opts, *_ in mounts:
            if fs != want:
                continue
            if fs == "cgroup":
                if "cpuacct" not in opts.split(","):
                    continue
                read = lambda d: int(open(d + "/cpuacct.usage").read())
                kind = "cgroup v1 cpuacct"
            else:
                read = lambda d: int(next(l.split()[1] for l in open(d + "/cpu.stat") if l.startswith("usage_usec"))) * 1000
                kind = "cgroup v2 cpu.stat"
            d = os.path.join(mnt, name)
            try:
                os.mkdir(d)
                with open(d + "/cgroup.procs", "w") as f:
                    f.write(str(os.getpid()))
                read(d)
                return mnt, d, read, kind
            except OSError:
                try:
                    os.rmdir(d)
                except OSError:
                    pass
    return None, None, None, None

mnt, cg, cgread, kind = cgroup()

def leave():
    # Back to the parent, once the session has ended.
    stop_all()
    try:
        with open(os.path.dirname(cg) + "/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))
        os.rmdir(cg)
    except OSError as e:
        print(f"could not remove the cgroup {cg}: {e}", file=sys.stderr)

if cg:
    atexit.register(leave)

def spawn(argv, out=devnull):
    fa = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, out, 1), (os.POSIX_SPAWN_DUP2, out, 2)]
    return os.posix_spawnp(argv[0], argv, os.environ, file_actions=fa)

# The session, started from inside the cgroup.
log = os.open(f"{work}/session.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
sup = spawn([asb, "--sandbox-backend", "landlock", "run", "--", "sleep", "600"], out=log)
note(sup)
sid = None
deadline = time.monotonic() + 30
while sid is None:
    if os.waitpid(sup, os.WNOHANG)[0] == sup:
        started.remove(sup)
        sys.exit("the session ended at once: " + open(f"{work}/session.log").read())
    r, w = os.pipe()
    pid = spawn([asb, "ps", "--json"], out=w)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    for s in json.loads(data or b"[]"):
        if s.get("pid") == sup:
            sid = s["id"]
    if sid is None:
        if time.monotonic() > deadline:
            sys.exit("the session did not appear in `agent-sandbox ps --json` within 30 s")
        time.sleep(0.05)  # polling ps: the CLI offers no event to await here

# Every cgroup the session's processes are in (hierarchy `mnt`), counted
# beside ours; one nested in another is counted once.
def session_cgroups():
    kids = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                ppid = int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(p))
    todo, tree = [sup], []
    while todo:
        p = todo.pop()
        tree.append(p)
        todo += kids.get(p, [])
    paths = set()
    for p in tree:
        try:
            for line in open(f"/proc/{p}/cgroup"):
                hid, ctrl, path = line.rstrip("\n").split(":", 2)
                if (kind.startswith("cgroup v1") and "cpuacct" in ctrl.split(",")) or (kind.startswith("cgroup v2") and hid == "0"):
                    paths.add(os.path.normpath(mnt + path))
        except OSError:
            pass
    return paths, len(tree)

counted = [cg]
if cg:
    paths, nproc = session_cgroups()
    for p in sorted(paths):
        if not any(p == c or p.startswith(c + "/") for c in counted):
            counted.append(p)
    extra = [p for p in counted if p != cg]
    where = f"the cgroup {cg} ({kind})" + (f" plus the session's {', '.join(extra)}" if extra else f"; the session's {nproc} processes are in it too")
else:
    where = "rusage (no writable cgroup: the session's and bwrap's inner processes are not counted)"

def usage():
    return sum(cgread(c) for c in counted)

def run(argv):
    fa = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
    u0 = usage() if cg else 0
    t0 = time.perf_counter_ns()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=fa)
    signal.alarm(30)  # a launch that hangs fails the run (and is killed)
    try:
        _, status, ru = os.wait4(pid, 0)
    except Hung:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        sys.exit(f"{shlex.join(argv)} did not end within 30 s")
    signal.alarm(0)
    t1 = time.perf_counter_ns()
    u1 = usage() if cg else 0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{shlex.join(argv)} exited with {os.waitstatus_to_exitcode(status)}")
    c = (u1 - u0) / 1e6 if cg else (ru.ru_utime + ru.ru_stime) * 1e3
    return (t1 - t0) / 1e6, c

def pct(xs, q):
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    f = int(k)
    return xs[f] + (xs[min(f + 1, len(xs) - 1)] - xs[f]) * (k - f)

BW = "bwrap --unshare-all --share-net --ro-bind / / --dev /dev --proc /proc /bin/true"
cmds = [
    ("/bin/true", ["/bin/true"]),
    ("static Go binary (empty main)", [f"{work}/go-bare"]),
    ("agent-sandbox version", [asb, "version"]),
    (f"agent-sandbox exec ID -- /bin/true", [asb, "exec", sid, "--", "/bin/true"]),
    (BW, shlex.split(BW)),
]
if before:
    cmds += [
        ("before: agent-sandbox version", [before, "version"]),
        ("before: agent-sandbox exec ID -- /bin/true", [before, "exec", sid, "--", "/bin/true"]),
    ]

def busy_start():
    # One core kept busy, outside the measured cgroup (moved to its parent).
    pid = spawn(["/bin/sh", "-c", "while :; do :; done"])
    note(pid)
    if cg:
        with open(os.path.dirname(cg) + "/cgroup.procs", "w") as f:
            f.write(str(pid))
    return pid

kernel = os.uname().release
print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, Linux {kernel}, {os.cpu_count()} CPUs, uid {os.getuid()}, "
      f"{rounds} rounds per phase, session {sid} (view), CPU time from {where}")
for phase in phases:
    bpid = busy_start() if phase == "busy" else None
    try:
        for _ in range(3):  # warm-up rounds, not recorded
            for _, argv in cmds:
                run(argv)
        wall = {n: [] for n, _ in cmds}
        cpu = {n: [] for n, _ in cmds}
        load0 = open("/proc/loadavg").read().split()[0]
        for _ in range(rounds):
            order = list(cmds)
            random.shuffle(order)
            for n, argv in order:
                w, c = run(argv)
                wall[n].append(w)
                cpu[n].append(c)
        load1 = open("/proc/loadavg").read().split()[0]
    finally:
        if bpid:
            reap(bpid)
            started.remove(bpid)
    print()
    print(f"### {phase}{' (one core kept busy)' if phase == 'busy' else ''}, load average {load0} → {load1}")
    print()
    print("| command | wall median ms | wall p90 ms | CPU ms (median) | CPU p90 ms | wall ÷ bwrap (median per round) | CPU ÷ bwrap (median per round) |")
    print("|---|---|---|---|---|---|---|")
    for n, _ in cmds:
        if n == BW:
            rr = cr = "—"
        else:
            rr = f"{statistics.median(a / b for a, b in zip(wall[n], wall[BW])):.2f}x"
            cr = f"{statistics.median(a / b for a, b in zip(cpu[n], cpu[BW]) if b > 0):.2f}x" if any(cpu[BW]) else "—"
        print(f"| `{n}` | {statistics.median(wall[n]):.2f} | {pct(wall[n], .9):.2f} | "
              f"{statistics.median(cpu[n]):.2f} | {pct(cpu[n], .9):.2f} | {rr} | {cr} |")
    sys.stdout.flush()
PY
