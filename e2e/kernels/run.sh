#!/usr/bin/env bash
# The kernel matrix (issue 40): boots Debian's own kernels (kernels.list)
# under qemu-system-x86_64 with software emulation (TCG: no KVM needed),
# each with an initramfs of busybox, the static agent-sandbox, a test
# build of it whose Landlock ABI is capped at 1 (agent-sandbox-abicap,
# build tag agentsandbox_abicap), and rows.sh, which runs the rows as
# uid 1000 with user namespaces on and off. Prints one table (kernel ×
# mode × row: ok, FAIL, expected-refusal, n/a) and exits 1 when any row
# does not hold, or a kernel could not be fetched or booted.
#
# usage: e2e/kernels/run.sh [NAME...]   (default: every kernel of kernels.list)
#
# Environment: AGENT_SANDBOX_KERNEL_CACHE (the cache directory),
# AGENT_SANDBOX_KERNEL_LIST (another kernels.list), AGENT_SANDBOX_KERNEL_VM_TIMEOUT
# (seconds per VM, default 300), AGENT_SANDBOX_KERNEL_JOBS (VMs at a time,
# default 2).
#
# Needs qemu-system-x86_64 (Debian: qemu-system-x86), a static busybox
# (busybox-static), gzip, dpkg-deb, apt-get and Go. The kernels are fetched
# with apt-get download through private source lists and state (the
# machine's apt configuration is not changed), pinned by version, and kept
# in AGENT_SANDBOX_KERNEL_CACHE (default /var/cache/agent-sandbox-kernels)
# for the next run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${AGENT_SANDBOX_KERNEL_CACHE:-/var/cache/agent-sandbox-kernels}
list=${AGENT_SANDBOX_KERNEL_LIST:-$here/kernels.list}
vm_timeout=${AGENT_SANDBOX_KERNEL_VM_TIMEOUT:-300}
jobs=${AGENT_SANDBOX_KERNEL_JOBS:-2}
start=$(date +%s)

for t in qemu-system-x86_64 busybox gzip dpkg-deb apt-get go; do
  if ! command -v "$t" >/dev/null; then
    echo "kernel matrix: $t not found: install qemu-system-x86, busybox-static, dpkg and apt (Debian) and Go" >&2
    exit 1
  fi
done
applets=" $(busybox --list | tr '\n' ' ') "
if [ "${applets#* cpio }" = "$applets" ]; then
  echo "kernel matrix: this busybox has no cpio applet: install busybox-static" >&2
  exit 1
fi

work=$(mktemp -d /tmp/agent-sandbox-kernels.XXXXXX)
qpids=()
cleanup() {
  for p in "${qpids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# The kernels to run: kernels.list, or the names given.
declare -a names suites pkgs versions abis
while read -r name suite pkg version abi; do
  case $name in ''|'#'*) continue ;; esac
  if [ $# -gt 0 ]; then
    case " $* " in *" $name "*) ;; *) continue ;; esac
  fi
  names+=("$name"); suites+=("$suite"); pkgs+=("$pkg"); versions+=("$version"); abis+=("$abi")
done < "$list"
if [ ${#names[@]} = 0 ]; then
  echo "kernel matrix: no kernel of kernels.list matches: $*" >&2
  exit 1
fi

mkdir -p "$cache"
missing=()
for i in "${!names[@]}"; do
  k="$cache/${names[$i]}"
  if [ "$(cat "$k/version" 2>/dev/null)" = "${pkgs[$i]} ${versions[$i]}" ] && [ -s "$k/vmlinuz" ]; then
    echo "kernel ${names[$i]}: reusing $k/vmlinuz ($(cat "$k/actual" 2>/dev/null || echo "${pkgs[$i]} ${versions[$i]}"))"
  else
    missing+=("$i")
  fi
done

# fetch: one apt-get update of private lists for the suites needed, then
# apt-get download of each pinned package. Timeouts throughout: an
# unreachable mirror is an error, not a hang.
declare -A unavailable=()
if [ ${#missing[@]} -gt 0 ]; then
  apt="$cache/apt"
  mkdir -p "$apt/state/lists/partial" "$apt/cache/archives/partial" "$apt/debs"
  : > "$apt/sources.list"
  for i in "${missing[@]}"; do
    s=${suites[$i]}
    case $s in *-security) url=http://deb.debian.org/debian-security ;; *) url=http://deb.debian.org/debian ;; esac
    line="deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $url $s main"
    grep -qxF "$line" "$apt/sources.list" || echo "$line" >> "$apt/sources.list"
  done
  aptopts=(-o Dir::Etc::sourcelist="$apt/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State="$apt/state"
    -o Dir::Cache="$apt/cache" -o Acquire::Languages=none -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false
    -o Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled=false -o Acquire::http::Timeout=30 -o Acquire::Retries=2
    -o APT::Sandbox::User=root -o Debug::NoLocking=1)
  echo "kernel matrix: apt-get update (private source list $apt/sources.list)"
  if ! timeout 300 apt-get "${aptopts[@]}" -qq update; then
    echo "kernel matrix: error: apt-get update of $apt/sources.list failed or took over 300 s (is deb.debian.org reachable?)" >&2
    for i in "${missing[@]}"; do unavailable[$i]="apt-get update failed"; done
  else
    for i in "${missing[@]}"; do
      n=${names[$i]} p=${pkgs[$i]} v=${versions[$i]}
      have=$(apt-cache "${aptopts[@]}" madison "$p" 2>/dev/null | awk -F'|' '{gsub(/ /,"",$2); print $2}' | tr '\n' ' ')
      if ! printf ' %s ' "$have" | grep -qF " $v "; then
        # Debian keeps one version per suite: a point release or a
        # security update replaces the pinned one. The series' current
        # kernel (the cloud metapackage's dependency in that suite) runs
        # instead, said loudly, so that the matrix still proves the
        # series; only a series that is gone altogether is an error.
        other=$(apt-cache "${aptopts[@]}" madison "linux-image-cloud-amd64" 2>/dev/null | awk -F'|' '$3 ~ /'"${suites[$i]}"'/ {gsub(/ /,"",$2); print $2}' | head -1)
        dep=
        if [ -n "$other" ]; then
          dep=$(apt-cache "${aptopts[@]}" depends "linux-image-cloud-amd64=$other" 2>/dev/null | awk '/Depends: linux-(image|binary)-/ {print $2; exit}')
        fi
        depv=
        if [ -n "$dep" ]; then
          depv=$(apt-cache "${aptopts[@]}" madison "$dep" 2>/dev/null | awk -F'|' '$3 ~ /'"${suites[$i]}"'/ {gsub(/ /,"",$2); print $2}' | head -1)
        fi
        if [ -z "$depv" ]; then
          unavailable[$i]="$p $v is no longer in Debian's ${suites[$i]}, and the suite has no current cloud kernel (linux-image-cloud-amd64 ${other:-absent}): update its line in e2e/kernels/kernels.list"
          echo "kernel $n: error: ${unavailable[$i]}" >&2
          continue
        fi
        echo "kernel $n: WARNING: the pinned $p $v left Debian's ${suites[$i]} (replaced by a newer release): running the suite's current $dep $depv instead; update e2e/kernels/kernels.list" >&2
        p=$dep v=$depv
      fi
      rm -rf "$apt/debs"/* "$work/x"
      if ! (cd "$apt/debs" && timeout 600 apt-get "${aptopts[@]}" -qq download "$p=$v"); then
        unavailable[$i]="apt-get download $p=$v failed or took over 600 s"
        echo "kernel $n: error: ${unavailable[$i]}" >&2
        continue
      fi
      mkdir -p "$work/x"
      dpkg-deb -x "$apt/debs"/*.deb "$work/x"
      vml=$(find "$work/x" -type f \( -name 'vmlinuz-*' -o -name vmlinuz \) | head -1)
      if [ -z "$vml" ]; then
        unavailable[$i]="$p $v holds no vmlinuz"
        echo "kernel $n: error: ${unavailable[$i]}" >&2
        continue
      fi
      mkdir -p "$cache/$n"
      cp "$vml" "$cache/$n/vmlinuz.new" && mv "$cache/$n/vmlinuz.new" "$cache/$n/vmlinuz"
      # The cache is keyed by the pinned line; what ran is in actual.
      echo "${pkgs[$i]} ${versions[$i]}" > "$cache/$n/version"
      echo "$p $v" > "$cache/$n/actual"
      echo "kernel $n: fetched $p $v into $cache/$n"
      rm -rf "$apt/debs"/* "$work/x"
    done
  fi
fi

# The initramfs: busybox (every applet a link), the two static builds,
# the stage-1 init and rows.sh.
root="$work/root"
mkdir -p "$root"/{usr/bin,etc,proc,sys,dev,tmp,run,home,srv,var/tmp}
ln -s usr/bin "$root/bin"
ln -s usr/bin "$root/sbin"
cp "$(command -v busybox)" "$root/usr/bin/busybox"
for a in $applets; do
  [ -e "$root/usr/bin/$a" ] || ln -s busybox "$root/usr/bin/$a"
done
echo "kernel matrix: building agent-sandbox (static) and agent-sandbox-abicap (-tags agentsandbox_abicap, Landlock ABI capped at 1)"
(cd "$repo" && CGO_ENABLED=0 go build -o "$root/usr/bin/agent-sandbox" ./cmd/agent-sandbox)
(cd "$repo" && CGO_ENABLED=0 go build -tags agentsandbox_abicap \
  -ldflags "-X github.com/agent-sandbox/agent-sandbox/internal/landlock.testABICap=1" \
  -o "$root/usr/bin/agent-sandbox-abicap" ./cmd/agent-sandbox)
(cd "$repo" && CGO_ENABLED=0 go build -o "$root/usr/bin/probe" ./e2e/kernels/probe)
install -m 755 "$here/init" "$root/init"
install -m 755 "$here/rows.sh" "$root/rows.sh"
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\n' > "$root/etc/group"
chmod 1777 "$root/tmp" "$root/var/tmp"
(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 > "$work/initrd.gz")

# boot NAME ABI LOG: one VM, at most vm_timeout seconds.
boot() {
  local t0=$(date +%s)
  timeout --kill-after=10 "$vm_timeout" qemu-system-x86_64 -accel tcg -m 768 -smp 1 -nodefaults -no-reboot \
    -display none -serial "file:$3" -kernel "$cache/$1/vmlinuz" -initrd "$work/initrd.gz" \
    -append "console=ttyS0 quiet loglevel=3 panic=-1 asb.kernel=$1 asb.abi=$2" >"$3.qemu" 2>&1
  echo $? > "$3.rc"
  echo $(($(date +%s) - t0)) > "$3.secs"
}
echo "kernel matrix: booting $((${#names[@]} - ${#unavailable[@]})) of ${#names[@]} kernels, $jobs at a time (TCG; at most $vm_timeout s each)"
running=0
for i in "${!names[@]}"; do
  [ -n "${unavailable[$i]:-}" ] && continue
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  boot "${names[$i]}" "${abis[$i]}" "$work/${names[$i]}.log" &
  qpids+=($!)
  running=$((running + 1))
done
wait || true
qpids=()

# The table.
fails=0
printf '\n%-6s %-13s %-22s %-16s %s\n' kernel mode row result detail
for i in "${!names[@]}"; do
  n=${names[$i]}
  if [ -n "${unavailable[$i]:-}" ]; then
    printf '%-6s %-16s %-22s %-16s %s\n' "$n" - fetch FAIL "${unavailable[$i]}"
    fails=$((fails + 1))
    continue
  fi
  log="$work/$n.log"
  tr -d '\r' < "$log" > "$log.txt" 2>/dev/null || true
  while IFS='|' read -r _ mode r result detail; do
    printf '%-6s %-16s %-22s %-16s %s\n' "$n" "$mode" "$r" "$result" "$detail"
    [ "$result" = FAIL ] && fails=$((fails + 1))
  done < <(grep '^ROW|' "$log.txt" || true)
  if ! grep -q '^END|' "$log.txt"; then
    printf '%-6s %-16s %-22s %-16s %s\n' "$n" - boot FAIL "the VM did not finish (qemu exit $(cat "$log.rc" 2>/dev/null), limit $vm_timeout s); its console:"
    tail -30 "$log.txt" | sed 's/^/        | /'
    cat "$log.qemu" 2>/dev/null | sed 's/^/        | qemu: /'
    fails=$((fails + 1))
  fi
done
while IFS='|' read -r _ n rel abi; do echo "kernel $n: $rel, $abi, VM $(cat "$work/$n.log.secs" 2>/dev/null) s"; done < <(cat "$work"/*.log.txt 2>/dev/null | grep '^KERNEL|' || true)
echo "kernel matrix: $(($(date +%s) - start)) s, $fails rows failing"
[ "$fails" = 0 ]
