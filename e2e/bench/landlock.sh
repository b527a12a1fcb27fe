#!/usr/bin/env bash
# Wall time of starting /bin/true: bare, from a Go program that only execs
# it, through agent-sandbox without a sandbox, under the built-in landlock
# engine (open network, and blocked network = private network namespace),
# and under bubblewrap doing the same, side by side in one hyperfine run.
# Needs: go, hyperfine and bwrap (Debian packages hyperfine, bubblewrap).
# Usage: e2e/bench/landlock.sh [RUNS]   (default 40; results on stdout as
# a Markdown table, raw JSON in $OUT or a temp file)
set -euo pipefail
runs=${1:-40}
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for tool in go hyperfine bwrap; do
  command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install hyperfine bubblewrap)" >&2; exit 1; }
done

go build -o "$work/agent-sandbox" "$repo/cmd/agent-sandbox"
mkdir -p "$work/execgo"
cat > "$work/execgo/main.go" <<'GO'
package main

import "syscall"

func main() { _ = syscall.Exec("/bin/true", []string{"true"}, nil) }
GO
(cd "$work/execgo" && printf 'module execgo\ngo 1.24\n' > go.mod && go build -o "$work/exec-true" .)

for net in open blocked; do
  mkdir -p "$work/agents/true-$net/sandbox"
  echo 'command = "/bin/true"' > "$work/agents/true-$net/agent.toml"
done
echo '{}' > "$work/agents/true-open/sandbox/nono.json"
echo '{"network": {"block": true}}' > "$work/agents/true-blocked/sandbox/nono.json"
mkdir -p "$work/home" "$work/project"
cd "$work/project"
export HOME="$work/home" PATH=/usr/bin:/bin

as="$work/agent-sandbox"
out=${OUT:-$work/bench.json}
hyperfine -N --warmup 5 --runs "$runs" --export-json "$out" --style none \
  -n 'true' '/bin/true' \
  -n 'Go program that execs true' "$work/exec-true" \
  -n 'agent-sandbox --no-sandbox' "$as --no-sandbox $work/agents/true-open" \
  -n 'agent-sandbox landlock, open network' "$as --sandbox-backend landlock $work/agents/true-open" \
  -n 'agent-sandbox landlock, blocked network (netns)' "$as --sandbox-backend landlock $work/agents/true-blocked" \
  -n 'bwrap, read-only /, new pid+net namespaces' 'bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid --unshare-net /bin/true' \
  >/dev/null 2>&1

python3 - "$out" <<'PY'
import json, statistics, sys
res = json.load(open(sys.argv[1]))["results"]
print("| command | median ms | mean ms | stddev ms | min ms | max ms | runs |")
print("|---|---|---|---|---|---|---|")
for r in res:
    t = [x * 1000 for x in r["times"]]
    print(f"| {r['command']} | {statistics.median(t):.2f} | {statistics.mean(t):.2f} | {statistics.stdev(t):.2f} | {min(t):.2f} | {max(t):.2f} | {len(t)} |")
PY
