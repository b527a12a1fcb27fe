#!/usr/bin/env python3
"""Start-up cost of allow-list mode over --offline under the built-in engine.

Runs `agent-sandbox --sandbox-backend landlock --offline SHELL -c true` and
the same with `--allow-host example.com` (the broker: a proxy.Proxy, its
audit file, the socket hand-over) in one round-robin: each round runs both
once, in shuffled order, and the per-round difference is recorded. Prints
the median and p10-p90 of each and of the difference.

Usage: e2e/bench/broker-startup.py [AGENT_SANDBOX_BINARY] [ROUNDS]
"""
import os, random, statistics, subprocess, sys, tempfile, time

binary = sys.argv[1] if len(sys.argv) > 1 else "agent-sandbox"
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 60
home = tempfile.mkdtemp(prefix="as-bench-home-")
work = tempfile.mkdtemp(prefix="as-bench-work-")
folder = os.path.join(tempfile.mkdtemp(prefix="as-bench-agent-"), "sh")
os.makedirs(os.path.join(folder, "sandbox"))
open(os.path.join(folder, "agent.toml"), "w").write('command = "/bin/true"\n')
open(os.path.join(folder, "sandbox", "nono.json"), "w").write("{}\n")
env = {"HOME": home, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
base = [binary, "--sandbox-backend", "landlock"]
cmds = {
    "offline": base + ["--offline", folder],
    "allowlist": base + ["--allow-host", "example.com", folder],
}

def once(argv):
    t = time.perf_counter()
    subprocess.run(argv, cwd=work, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1000

for argv in cmds.values():  # warm the page cache
    once(argv)
times = {k: [] for k in cmds}
diff = []
for _ in range(rounds):
    order = list(cmds)
    random.shuffle(order)
    got = {k: once(cmds[k]) for k in order}
    for k, v in got.items():
        times[k].append(v)
    diff.append(got["allowlist"] - got["offline"])

def row(name, xs):
    q = statistics.quantiles(xs, n=10)
    print(f"| {name} | {statistics.median(xs):.2f} | {q[0]:.2f}-{q[-1]:.2f} |")

print(f"{rounds} rounds, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
print("| run | median ms | p10-p90 ms |")
print("|---|---|---|")
for k, xs in times.items():
    row(k, xs)
row("allowlist - offline (per round)", diff)
