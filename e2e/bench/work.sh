#!/usr/bin/env bash
# The agent's own work inside the sandbox against the same work outside
# (issue 27, item 5), round-robin: every round runs each command once
# outside and once under `agent-sandbox --sandbox-backend landlock run --`
# (the shell agent's policy: the project writable, the network blocked), in
# a fresh random order; the table shows medians and the median of the
# per-round ratios.
#
#   go build ./...   a copy of this repository, the build cache warm (the
#                    sandbox's cache is a private layer over yours)
#   git status       a repository of 100,000 committed files
#   npm ci           a project of a few small packages, from a warm npm
#                    cache (npm_config_prefer_offline, as the sandbox sets)
#
# Needs: go, git, npm, python3. Usage: e2e/bench/work.sh [ROUNDS] (default 10)
#   AS=/path/to/agent-sandbox uses that binary instead of building one.
set -euo pipefail
rounds=${1:-10}
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/agent-sandbox-work.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
for tool in go git npm python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
if [ -n "${AS:-}" ]; then
  cp "$AS" "$work/agent-sandbox"
else
  (cd "$repo" && CGO_ENABLED=0 go build -o "$work/agent-sandbox" ./cmd/agent-sandbox)
fi
as="$work/agent-sandbox --sandbox-backend landlock run --"

# go build: a copy of the repository (its own module cache and build cache
# are the user's; warm them outside first, and inside once).
git -C "$repo" archive --format=tar HEAD | (mkdir -p "$work/gobuild" && tar -x -C "$work/gobuild")
(cd "$work/gobuild" && go build ./... && $as go build ./...)

# git status: 100,000 files in 1,000 directories, committed.
python3 - "$work/gitrepo" <<'PY'
import os, sys
root = sys.argv[1]
for d in range(1000):
    p = os.path.join(root, "d%03d" % d)
    os.makedirs(p)
    for f in range(100):
        with open(os.path.join(p, "f%03d.txt" % f), "w") as fh:
            fh.write("%d %d\n" % (d, f))
PY
(cd "$work/gitrepo" && git init -q && git add -A && git -c user.email=b@e -c user.name=bench commit -qm files && git status --short >/dev/null && $as git status --short >/dev/null)

# npm ci: a small project, installed once to fill the cache.
mkdir -p "$work/npmproj"
(cd "$work/npmproj" && printf '{"name":"bench","version":"1.0.0","private":true,"dependencies":{"ms":"2.1.3","semver":"7.6.3","kleur":"4.1.5","picocolors":"1.1.1","yallist":"4.0.0"}}\n' > package.json \
  && npm install --no-audit --no-fund --loglevel=error >/dev/null && rm -rf node_modules \
  && npm ci --no-audit --no-fund --prefer-offline --loglevel=error >/dev/null \
  && rm -rf node_modules && $as npm ci --no-audit --no-fund --prefer-offline --loglevel=error >/dev/null)

python3 - "$rounds" "$work" "$as" <<'PY'
import os, random, shlex, statistics, subprocess, sys, time
rounds, work, as_ = int(sys.argv[1]), sys.argv[2], shlex.split(sys.argv[3])
jobs = {
    "go build ./... (warm cache)": (os.path.join(work, "gobuild"), ["go", "build", "./..."], None),
    "git status (100,000 files)": (os.path.join(work, "gitrepo"), ["git", "status", "--short"], None),
    "npm ci (warm cache)": (os.path.join(work, "npmproj"), ["npm", "ci", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], "node_modules"),
}
times = {(j, w): [] for j in jobs for w in ("outside", "inside")}
for r in range(rounds):
    order = [(j, w) for j in jobs for w in ("outside", "inside")]
    random.shuffle(order)
    for j, w in order:
        cwd, cmd, clean = jobs[j]
        if clean:
            subprocess.run(["rm", "-rf", os.path.join(cwd, clean)], check=True)
        argv = cmd if w == "outside" else as_ + cmd
        t = time.perf_counter()
        p = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        dt = (time.perf_counter() - t) * 1000
        if p.returncode != 0:
            sys.exit("%s %s failed: %s" % (w, j, p.stderr.decode()[-2000:]))
        times[(j, w)].append(dt)
print("| command | outside median ms | inside median ms | inside/outside (median of rounds) |")
print("|---|---|---|---|")
for j in jobs:
    o, i = times[(j, "outside")], times[(j, "inside")]
    ratios = [b / a for a, b in zip(o, i)]
    print("| %s | %.1f | %.1f | %.2fx |" % (j, statistics.median(o), statistics.median(i), statistics.median(ratios)))
print("\n%d rounds; load average %s" % (rounds, open("/proc/loadavg").read().split()[0]))
PY
