#!/usr/bin/env python3
"""Runs a command as the subreaper of everything it starts, and fails when
any process it started outlives it.

  reap.py [--report FILE] [--grace SECONDS] -- COMMAND [ARGS...]

The command runs with this process as its child subreaper
(PR_SET_CHILD_SUBREAPER): every process the command starts, at any depth,
that loses its parent (a double fork, `setsid cmd &`, a shell killed while
its `sleep` runs) is reparented here rather than to PID 1, so what is left
when the command has ended is exactly what it started and did not clean up,
whatever its session, process group or user (runuser) became. Processes the
command did not start (CI's own, system daemons, other users' jobs) are
never looked at.

When the command has ended, the processes it left are given --grace seconds
(default 2) to end; those still running are listed (pid, user, elapsed
seconds, command line), killed, and the exit status is 1 (or the command's
own, when that is not 0). The list goes to stderr, or is appended to
--report FILE (for a command whose stderr is a pipe into a parser).
Without leftovers the exit status is the command's own.
"""

import ctypes
import os
import pwd
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def parse_args(argv):
    report, grace = None, 2.0
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] == "--report" and i + 1 < len(argv):
            report = argv[i + 1]
            i += 2
        elif argv[i] == "--grace" and i + 1 < len(argv):
            grace = float(argv[i + 1])
            i += 2
        else:
            sys.exit("reap.py: unknown argument %r; usage: reap.py [--report FILE] [--grace SECONDS] -- COMMAND [ARGS...]" % argv[i])
    cmd = argv[i + 1:]
    if not cmd:
        sys.exit("reap.py: no command; usage: reap.py [--report FILE] [--grace SECONDS] -- COMMAND [ARGS...]")
    return report, grace, cmd


def stat(pid):
    """(ppid, state, start time in clock ticks) of pid, or None."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            s = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    rest = s[s.rfind(")") + 2:].split()
    return int(rest[1]), rest[0], int(rest[19])


def descendants(root):
    """The live (not zombie) processes whose parent chain leads to root."""
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = stat(int(name))
            if st and st[1] != "Z":
                parent[int(name)] = st[0]
    out = []
    for pid in parent:
        p, seen = pid, 0
        while p in parent and seen < 4096:
            p, seen = parent[p], seen + 1
            if p == root:
                out.append(pid)
                break
    return sorted(out)


def describe(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        uid = os.stat("/proc/%d" % pid).st_uid
    except OSError:
        return None
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    st = stat(pid)
    age = "?"
    if st:
        with open("/proc/uptime") as f:
            up = float(f.read().split()[0])
        age = "%.0fs" % (up - st[2] / os.sysconf("SC_CLK_TCK"))
    return "%7d  %-10s %8s  %s" % (pid, user, age, cmd or "[no command line]")


def reap_zombies():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main():
    report, grace, cmd = parse_args(sys.argv[1:])
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("reap.py: prctl(PR_SET_CHILD_SUBREAPER): %s" % os.strerror(ctypes.get_errno()))
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(cmd[0], cmd)
        except OSError as e:
            sys.stderr.write("reap.py: %s: %s\n" % (cmd[0], e))
            os._exit(127)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: os.kill(pid, s))
    # Wait for the command, reaping the orphans it leaves on the way.
    code = None
    while code is None:
        try:
            got, status = os.waitpid(-1, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            break
        if got == pid:
            code = os.waitstatus_to_exitcode(status)
            if code < 0:
                code = 128 - code
    me = os.getpid()
    deadline = time.monotonic() + grace
    left = descendants(me)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        reap_zombies()
        left = descendants(me)
    if not left:
        return code
    lines = [d for d in (describe(p) for p in left) if d]
    msg = "\nFAIL: %d process(es) started by `%s` outlived it (every test must end what it starts); killed now:\n%7s  %-10s %8s  %s\n%s\n" % (
        len(lines), " ".join(cmd)[:120], "PID", "USER", "AGE", "COMMAND", "\n".join(lines))
    if report:
        with open(report, "a") as f:
            f.write(msg)
    else:
        sys.stderr.write(msg)
        sys.stderr.flush()
    for _ in range(50):
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
        reap_zombies()
        left = descendants(me)
        if not left:
            break
    return code or 1


if __name__ == "__main__":
    sys.exit(main())
