#!/bin/sh
# Stage 2 of the matrix VM (e2e/kernels/run.sh), as root on a tmpfs root:
# sets up a host (an ordinary user "agent", uid 1000, with a credential, a
# project that is a git repository, a loopback service and a process of
# its own), runs agent-sandbox as that user in each mode, and prints one
# line per row on the console:
#
#   ROW|mode|row|ok, FAIL or expected-refusal|detail
#
# then END and powers off. Modes: view (user namespaces on: the namespace
# view), weaker (user.max_user_namespaces=0 and
# AGENT_SANDBOX_WEAKER_SANDBOX=1), nouserns (the same host without the
# opt-in), weaker-open (the weaker sandbox with an open network, which
# runs on every Landlock ABI), and the abi1-* modes, which run
# agent-sandbox-abicap: a test build (tag agentsandbox_abicap) whose
# Landlock ABI is capped at 1 at link time, so that the rules take an ABI
# 1 kernel's branches (Ubuntu 22.04's 5.15, which Debian's archive no
# longer has). Each row asserts something the control
# (the same probe unsandboxed) shows can fail.
PATH=/usr/bin:/bin
export PATH
mount -t proc proc /proc
mount -t devtmpfs dev /dev
mount -t sysfs sys /sys
mount -t tmpfs -o mode=1777 tmp /tmp
mkdir -p /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
ip link set lo up
exec </dev/null >/dev/console 2>&1

arg() { sed -n "s/.*asb\.$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
KERNEL=$(arg kernel)
WANT_ABI=$(arg abi)
CANARY=CANARY$(cat /proc/sys/kernel/random/uuid | tr -d -)
MARK=hostmark$(cat /proc/sys/kernel/random/uuid | tr -d -)
A=/home/agent
W=$A/work/project
fails=0

echo "agent:x:1000:1000:agent:$A:/bin/sh" >> /etc/passwd
echo "agent:x:1000:" >> /etc/group
mkdir -p $A/.ssh $W/.git/hooks $W/.git/objects $W/.git/refs/heads /srv
echo "$CANARY" > $A/.ssh/id_ed25519
chmod 700 $A/.ssh
chmod 600 $A/.ssh/id_ed25519
echo "project file" > $W/README
echo 'ref: refs/heads/main' > $W/.git/HEAD
GITCONFIG=$(printf '[core]\n\trepositoryformatversion = 0\n\tbare = false')
printf '%s\n' "$GITCONFIG" > $W/.git/config
chown -R 1000:1000 $A
# A host service on the loopback, and a host process of the user's.
echo "$CANARY" > /srv/canary
httpd -p 127.0.0.1:8765 -h /srv
mkdir -p /run/asb && mkfifo /run/asb/fifo && chown -R 1000:1000 /run/asb
su -s /bin/sh agent -c "exec sh -c 'echo > /run/asb/fifo; sleep 3600; : $MARK'" &
read _ < /run/asb/fifo
probe udp-listen 127.0.0.1:8766 /run/asb/udp.got
FLUSH=1

# as_agent [VAR=value...] PROGRAM ARGS: runs as uid 1000 in the project,
# with a clean environment (busybox su passes no arguments to -c: they
# are quoted into its command).
as_agent() {
  cmd=
  for a in "$@"; do
    cmd="$cmd '$(printf '%s' "$a" | sed "s/'/'\\\\''/g")'"
  done
  su -s /bin/sh agent -c "cd $W && exec env -i HOME=$A PATH=/usr/bin:/bin LANG=C.UTF-8 SHELL=/bin/sh $cmd"
}

row() { # MODE ROW RESULT DETAIL (agent-sandbox's warnings left out, but for a FAIL)
  if [ "$3" = FAIL ]; then
    # All of it, and the protected files as the host sees them now.
    d=$(printf '%s\nhost after the run: hooks [%s] config [%s]\n' "$4" "$(ls -A $W/.git/hooks 2>&1 | tr '\n' ' ')" "$(cat $W/.git/config 2>&1)" | tr '\n|' '  ' | cut -c1-3000)
  else
    d=$(printf '%s\n' "$4" | grep -v '^agent-sandbox: warning:' | tr '\n|' '  ' | cut -c1-400)
  fi
  echo "ROW|$1|$2|$3|$d"
  [ "$3" = FAIL ] && fails=$((fails + 1))
  return 0
}

# The probes: each prints STARTED first, so a run that was refused before
# the agent started is told from one whose agent ran.
P_cred='cat /home/agent/.ssh/id_ed25519'
P_write='echo x > /home/agent/escaped'
P_loopback='printf "GET /canary HTTP/1.0\\r\\n\\r\\n" | nc -w 3 127.0.0.1 8765'
P_proc='for f in /proc/[0-9]*/cmdline; do echo "$f: $(tr "\0" " " < $f)"; done 2>/dev/null'
P_hooks='printf "#!/bin/sh\ntouch /home/agent/hooked\n" > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit'
P_kept='echo kept > kept.txt'
# ABI-dependent rows: truncate(2) by path (ABI 3) of a file of the
# user's outside the workdir (probe: busybox's truncate opens the file for
# writing, which every ABI mediates); a signal to a host process of the same user
# (scoping, ABI 6; the view's PID namespace); a link across directories
# inside the workdir (ABI 2: without it Landlock refuses every
# cross-directory link and rename with EXDEV, which the row asserts for
# ABI 1).
P_truncate='probe truncate /home/agent/notes'
P_signal='kill -TERM @VICTIM'
P_link='mkdir -p a b && touch a/f; ln a/f b/g; mv a/f b/h'
# UDP to a host loopback service (offline: the view's network namespace;
# the weaker sandbox's Landlock UDP rules, ABI 10).
P_udp="probe udp-send 127.0.0.1:8766 udp-$CANARY"
# The view-ro-bypass family: ways around the read-only binds of the
# protected files (.git/config, .git/hooks) that the view keeps
# read-only; each attempt is followed by the write it would allow, and
# the host's files must be unchanged after the run (the weaker sandbox,
# which has no binds, restores them after the run: the ledger).
RO_WRITE='printf "#!/bin/sh\ntouch /home/agent/hooked\n" > .git/hooks/pre-commit; echo "[alias] x = !touch /home/agent/hooked" >> .git/config'
P_roumount="umount .git/hooks; umount .git/config; umount -l .git/hooks; umount -l .git/config; $RO_WRITE"
P_roremount="mount -o remount,bind,rw .git/hooks; mount -o remount,bind,rw .git/config; mount -o remount,rw .git/config; $RO_WRITE"
P_rosetattr="probe setattr .git/hooks; probe setattr .git/config; $RO_WRITE"
P_rorename="mv .git/config .git/config.old; mv .git/hooks .git/hooks.old; mkdir -p .git/hooks; $RO_WRITE"
P_rounlink="rm -f .git/config; rm -rf .git/hooks; mkdir -p .git/hooks; $RO_WRITE"
ROWS="cred write loopback proc hooks kept truncate signal link udp roumount roremount rosetattr rorename rounlink"

reset_host() {
  rm -rf $A/escaped $A/hooked $W/.git/hooks/pre-commit $W/kept.txt $W/a $W/b $W/.git/config.old $W/.git/hooks.old
  mkdir -p $W/.git/hooks
  printf '%s\n' "$GITCONFIG" > $W/.git/config
  chown -R 1000:1000 $W/.git
  : > /run/asb/udp.got
  echo "notes of the user's" > $A/notes
  chown 1000:1000 $A/notes
  alive "$VICTIM" || start_victim
}

# alive PID: the process runs (a zombie, not yet reaped, does not).
alive() {
  [ -n "$1" ] && [ "$(cut -d' ' -f3 /proc/$1/stat 2>/dev/null)" != Z ] && [ -e /proc/$1/stat ]
}

# start_victim starts a process of the user's outside the sandbox for the
# signal row (VICTIM: its pid), and returns once it runs.
start_victim() {
  su -s /bin/sh agent -c 'echo $$ > /run/asb/fifo; exec sleep 3600' &
  read VICTIM < /run/asb/fifo
}

# lastline OUTPUT: the probe's last line of its own (not agent-sandbox's).
lastline() {
  printf '%s\n' "$1" | grep -v '^agent-sandbox: \|^STARTED$\|^$' | tail -1
}

# holds ROW OUTPUT: whether the host shows the row's protection held.
holds() {
  case $1 in
    cred|loopback) ! printf '%s' "$2" | grep -q "$CANARY" ;;
    write) [ ! -e $A/escaped ] ;;
    proc) ! printf '%s' "$2" | grep -q "$MARK" && NOTE="the host process is not among the $(printf '%s' "$2" | grep -o '/proc/[0-9]*/cmdline' | sort -u | wc -l) the agent lists" ;;
    hooks)
      [ ! -e $W/.git/hooks/pre-commit ] || return 1
      printf '%s' "$2" | grep -q "can't create\|No such file\|Read-only" || NOTE="written, then undone after the run (the ledger)" ;;
    kept) [ "$(cat $W/kept.txt 2>/dev/null)" = kept ] && NOTE="kept" ;;
    ro*)
      # The host's .git/config and hooks as before the run.
      [ ! -e $W/.git/hooks/pre-commit ] && [ "$(cat $W/.git/config 2>/dev/null)" = "$GITCONFIG" ] || return 1
      case $mode in
        *weaker*) NOTE="the host's files unchanged after the run (the weaker sandbox undoes: the ledger)" ;;
        *) NOTE="the protected files unchanged: $(printf '%s\n' "$2" | grep -v '^agent-sandbox: \|^STARTED$\|^$' | grep -io 'operation not permitted\|permission denied\|read-only file system\|resource busy\|not supported\|function not implemented\|invalid argument\|must be superuser\|not mounted' | sort -u | tr '\n' ',' | sed 's/,$//')" ;;
      esac ;;
    truncate) [ -s $A/notes ] ;;
    signal)
      # Scoping (ABI 6) or the view's PID namespace; without either the
      # run warns that it cannot scope signals.
      alive "$VICTIM" || { [ "$ABI" -lt 6 ] && printf '%s' "$2" | grep -q 'cannot scope signals' &&
        NOTE="killed: below ABI 6 signals are not scoped, and the run warned"; } ;;
    link)
      # Linking and renaming are the agent's own work: from ABI 2 on b/g
      # and b/h are the same file (a link, then a rename, not a copy); on
      # ABI 1 Landlock refuses both (EXDEV, as documented: mv copies).
      # Without Landlock (ABI 0, the view alone) nothing refuses them.
      if [ "$ABI" -ge 2 ] || [ "$ABI" = 0 ]; then
        [ -e $W/b/g ] && [ "$(stat -c %i $W/b/g)" = "$(stat -c %i $W/b/h 2>/dev/null)" ] &&
          NOTE="linked and renamed (one inode)"
      else
        [ ! -e $W/b/g ] && printf '%s' "$2" | grep -q 'cross-device' &&
          NOTE="EXDEV, as Landlock before ABI 2 refuses every reparenting"
      fi ;;
    udp)
      # Every datagram sent before the flush has been written once the
      # flush has.
      probe udp-send 127.0.0.1:8766 "flush-$FLUSH" >/dev/null
      i=0
      while ! grep -q "flush-$FLUSH" /run/asb/udp.got; do
        i=$((i + 1))
        [ $i -lt 5000 ] || { echo "NOTE|the UDP listener never got flush-$FLUSH"; return 1; }
      done
      FLUSH=$((FLUSH + 1))
      if grep -q "udp-$CANARY" /run/asb/udp.got; then
        # Not confined below ABI 10 without a network namespace: warned.
        [ "$ABI" -lt 10 ] && case $mode in *weaker*) true ;; *) false ;; esac &&
          printf '%s' "$2" | grep -q 'UDP and DNS are not confined' &&
          NOTE="received: below ABI 10 without a network namespace UDP is not confined, and the run warned"
      fi ;;
  esac
}

# Controls: unsandboxed, every probe gets through (and the workdir write
# is kept), so a row that holds below held because of the sandbox.
controls() {
  for r in $ROWS; do
    reset_host
    eval "p=\$P_$r"
    p=$(printf '%s' "$p" | sed "s/@VICTIM/$VICTIM/")
    out=$(as_agent /bin/sh -c "$p" 2>&1)
    if [ $r = kept ] || [ $r = link ]; then
      [ -e $W/kept.txt ] || [ -e $W/b/g ] || row control $r FAIL "unsandboxed the workdir write was not kept: $out"
    elif holds $r "$out"; then
      row control $r FAIL "unsandboxed the probe got nothing, so the row could not fail: $out"
    fi
  done
  reset_host
}

# run_rows MODE EXPECT BIN [VAR=value...]: every row in one mode. EXPECT
# is "run" (the agent starts; rows in SKIPS are not claimed by this mode)
# or "refuse:TEXT" (exit 125, TEXT in the message, the agent never
# starts).
run_rows() {
  mode=$1 expect=$2 bin=$3
  shift 3
  for r in $ROWS; do
    reset_host
    eval "p=\$P_$r"
    p=$(printf '%s' "$p" | sed "s/@VICTIM/$VICTIM/")
    out=$(as_agent "$@" $WRAP "$bin" "${AGENT:-shell}" -c "echo STARTED; $p" 2>&1)
    code=$?
    case $expect in
      refuse:*)
        want=${expect#refuse:}
        if [ $code = 125 ] && ! printf '%s' "$out" | grep -q STARTED && printf '%s' "$out" | grep -qF "$want"; then
          row $mode $r expected-refusal "exit 125: $(printf '%s' "$out" | grep -m1 error:)"
        else
          row $mode $r FAIL "want exit 125 naming '$want' and no agent; got exit $code: $out"
        fi
        continue ;;
    esac
    case " $SKIPS " in
      *" $r "*) row $mode $r n/a "not claimed by this mode (README: $SKIPWHY)"; continue ;;
    esac
    if ! printf '%s' "$out" | grep -q STARTED; then
      row $mode $r FAIL "the agent did not start (exit $code): $out"
    elif case $mode in *weaker*) true ;; *) false ;; esac; then
      if ! printf '%s' "$out" | grep -q 'WEAKER sandbox'; then
        row $mode $r FAIL "no WEAKER sandbox warning: $out"
      elif NOTE= && holds $r "$out"; then row $mode $r ok "exit $code: ${NOTE:-$(lastline "$out")}"; else row $mode $r FAIL "exit $code: $out"; fi
    elif printf '%s' "$out" | grep -q 'WEAKER sandbox'; then
      row $mode $r FAIL "the view was expected, the weaker sandbox ran: $out"
    elif [ "$ABI" = 0 ] && [ "$(printf '%s\n' "$out" | grep -c 'warning: .*the namespace view runs without Landlock')" != 1 ]; then
      row $mode $r FAIL "without Landlock the view must warn once naming what Landlock would add: $out"
    elif NOTE= && holds $r "$out"; then
      row $mode $r ok "exit $code: ${NOTE:-$(lastline "$out")}"
    else
      row $mode $r FAIL "exit $code: $out"
    fi
  done
  reset_host
}

# doctor_check MODE BIN USERNS_WANT [VAR=value...]: doctor's Landlock,
# user namespace and memory-bound lines say what the runs did.
doctor_check() {
  mode=$1 bin=$2 userns_want=$3
  shift 3
  out=$(as_agent "$@" $WRAP "$bin" doctor 2>&1)
  ll=$(printf '%s\n' "$out" | grep -m1 -E '^(ok|warn|fail) +landlock:')
  un=$(printf '%s\n' "$out" | grep -m1 -E '^(ok|warn|fail) +user namespaces:')
  mem=$(printf '%s\n' "$out" | grep -m1 -E '^(ok|warn|fail) +memory bound:')
  got_abi=$(printf '%s' "$ll" | sed -n 's/^[a-z]* *landlock: ABI \([0-9]*\):.*/\1/p')
  [ -n "$got_abi" ] || { printf '%s' "$ll" | grep -q 'Landlock is not available' && got_abi=0; }
  echo "DOCTOR|$mode|$ll"
  if [ "$got_abi" = "$ABI" ] && [ "$ABI" = 0 ] && [ "$userns_want" = on ]; then
    # The view runs without Landlock: doctor says so, and what it lacks.
    if printf '%s' "$out" | grep -q '^fail *shell posture'; then
      row $mode doctor-landlock FAIL "ABI 0 with user namespaces: doctor says the shell agent is refused: $(printf '%s' "$out" | grep -m1 '^fail *shell posture')"
    elif printf '%s' "$ll" | grep -q 'the namespace view runs without Landlock'; then
      row $mode doctor-landlock ok "ABI 0; doctor: the view runs without Landlock, the shell agent's posture ok"
    else
      row $mode doctor-landlock FAIL "ABI 0 with user namespaces: doctor does not say the view runs without Landlock: $ll"
    fi
  elif [ "$got_abi" = "$ABI" ]; then
    row $mode doctor-landlock ok "ABI $got_abi"
  else
    row $mode doctor-landlock FAIL "doctor says ABI '${got_abi}', the runs were planned for ABI $ABI: $ll"
  fi
  case $userns_want in
    on) printf '%s' "$un" | grep -q 'user namespaces: available' ;;
    off) printf '%s' "$un" | grep -qv 'user namespaces: available' && [ -n "$un" ] ;;
  esac && row $mode doctor-userns ok "${un%%:*}: $userns_want" || row $mode doctor-userns FAIL "runs had user namespaces $userns_want; doctor: $un"
  # No systemd user manager in the VM: doctor must say there is no bound,
  # and a folder that sets memory_max must then be refused.
  mkdir -p /tmp/memfolder/sandbox && printf 'command = "/bin/sh"\nmemory_max = "256M"\n' > /tmp/memfolder/agent.toml
  echo '{}' > /tmp/memfolder/sandbox/nono.json
  chmod -R a+rX /tmp/memfolder
  mout=$(as_agent "$@" $WRAP "$bin" /tmp/memfolder -c 'echo STARTED' 2>&1)
  mcode=$?
  if printf '%s' "$mem" | grep -q 'no memory bound' && [ $mcode = 125 ] && ! printf '%s' "$mout" | grep -q STARTED; then
    row $mode doctor-memory ok "no bound; memory_max refused (125)"
  elif [ "$ABI" = 0 ] && [ $mcode = 125 ]; then
    row $mode doctor-memory expected-refusal "every run refused here"
  else
    row $mode doctor-memory FAIL "doctor: $mem; a memory_max run: exit $mcode: $mout"
  fi
}

userns() { echo "$1" > /proc/sys/user/max_user_namespaces; }

# refused_without_opt_in MODE: where no view can be built, a run without
# AGENT_SANDBOX_WEAKER_SANDBOX=1 is refused (125) naming the opt-in (or,
# without Landlock, naming that).
refused_without_opt_in() {
  out=$(as_agent $WRAP agent-sandbox shell -c 'echo STARTED' 2>&1)
  code=$?
  if [ $code = 125 ] && ! printf '%s' "$out" | grep -q STARTED && { printf '%s' "$out" | grep -q AGENT_SANDBOX_WEAKER_SANDBOX=1 || { [ "$ABI" = 0 ] && printf '%s' "$out" | grep -qF "$NOLL"; }; }; then
    row $1 refused-without-opt-in expected-refusal "$(printf '%s' "$out" | grep -m1 error:)"
  else
    row $1 refused-without-opt-in FAIL "want exit 125 naming AGENT_SANDBOX_WEAKER_SANDBOX=1; exit $code: $out"
  fi
}

# weaker_rows MODE BIN [VAR=value...]: the weaker sandbox, offline: it
# needs Landlock ABI 4 (TCP rules) where there is no network namespace.
weaker_rows() {
  m=$1
  shift
  if [ "$ABI" = 0 ]; then
    run_rows $m "refuse:$NOLL" "$@" AGENT_SANDBOX_WEAKER_SANDBOX=1
  elif [ "$ABI" -lt 4 ]; then
    run_rows $m "refuse:Landlock ABI 4" "$@" AGENT_SANDBOX_WEAKER_SANDBOX=1
  else
    run_rows $m run "$@" AGENT_SANDBOX_WEAKER_SANDBOX=1
  fi
}

# The Landlock ABI the runs are planned for: the pinned one
# (kernels.list), which doctor must report.
ABI=$WANT_ABI
if [ "$ABI" = "?" ] || [ -z "$ABI" ]; then
  ABI=$(as_agent agent-sandbox doctor 2>&1 | sed -n 's/^[a-z]* *landlock: ABI \([0-9]*\):.*/\1/p' | head -1)
  [ -n "$ABI" ] || ABI=0
  echo "NOTE|the pin names no ABI; doctor says $ABI"
fi
echo "KERNEL|$KERNEL|$(uname -r)|abi $ABI"

controls

USERNS_MAX=$(cat /proc/sys/user/max_user_namespaces)
NOLL="Landlock is not available"

# 1. User namespaces on: the namespace view.
SKIPS= SKIPWHY=
userns "$USERNS_MAX"
# Without Landlock (ABI 0: 5.10) the view runs all the same, with
# seccomp and no_new_privs below its mounts, and warns once.
doctor_check view agent-sandbox on
run_rows view run agent-sandbox

# 2. User namespaces off (user.max_user_namespaces=0).
userns 0
doctor_check nouserns agent-sandbox off
refused_without_opt_in nouserns
SKIPS=proc SKIPWHY="the weaker sandbox has no PID namespace: the agent sees the user's processes"
weaker_rows weaker agent-sandbox

# 3. The weaker sandbox with an open network (a folder without
# network rules), which needs no Landlock TCP rules and so runs on every
# Landlock ABI.
mkdir -p /tmp/open/sandbox && echo 'command = "/bin/sh"' > /tmp/open/agent.toml && echo '{}' > /tmp/open/sandbox/nono.json
chmod -R a+rX /tmp/open
SKIPS="proc loopback udp"
SKIPWHY="the weaker sandbox has no PID namespace; the network is open"
if [ "$ABI" = 0 ]; then
  AGENT=/tmp/open
  run_rows weaker-open "refuse:$NOLL" agent-sandbox AGENT_SANDBOX_WEAKER_SANDBOX=1
  AGENT=
else
  AGENT=/tmp/open
  run_rows weaker-open run agent-sandbox AGENT_SANDBOX_WEAKER_SANDBOX=1
  AGENT=
fi
userns "$USERNS_MAX"

# 4. Ubuntu 24.04's restriction (kernel.apparmor_restrict_unprivileged_userns,
# which Debian's kernels lack), simulated: a user namespace can be
# created, but nothing that needs a capability inside it (other
# namespaces, mounts) works (probe nocaps: a seccomp filter).
WRAP="probe nocaps"
SKIPS=proc SKIPWHY="the weaker sandbox has no PID namespace: the agent sees the user's processes"
doctor_check userns-nocaps agent-sandbox off
refused_without_opt_in userns-nocaps
weaker_rows nocaps-weaker agent-sandbox
WRAP=

# 5. ABI 1 (a test-only cap, set at link time: agent-sandbox-abicap).
if [ "$ABI" -ge 2 ] && [ -x /usr/bin/agent-sandbox-abicap ]; then
  SAVED=$ABI ABI=1
  SKIPS= SKIPWHY=
  doctor_check abi1-view agent-sandbox-abicap on
  run_rows abi1-view run agent-sandbox-abicap
  userns 0
  run_rows abi1-weaker "refuse:Landlock ABI 4" agent-sandbox-abicap AGENT_SANDBOX_WEAKER_SANDBOX=1
  SKIPS="proc loopback udp"
  SKIPWHY="the weaker sandbox has no PID namespace; the network is open"
  AGENT=/tmp/open
  run_rows abi1-weaker-open run agent-sandbox-abicap AGENT_SANDBOX_WEAKER_SANDBOX=1
  AGENT=
  userns "$USERNS_MAX"
  ABI=$SAVED
fi

echo "END|$KERNEL|fails=$fails"
sync
poweroff -f
