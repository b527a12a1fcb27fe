package e2e

// The view cases of the escape suite: the classes of issue 10 (an agent
// that gets out of a Landlock-only engine through Unix sockets, signals,
// .git, keyrings, grant races, inherited descriptors, metadata, doctor,
// config_paths, resource limits and /proc) and items 1, 2 and 4 of issue 15
// (unreadable policy files, an empty allow list, loopback inside an offline
// sandbox). They reuse escape_test.go's world (throwaway HOME with canary
// secrets, the real binary, an agent folder running /bin/sh).
//
// Each row is an attack probe that must fail inside the sandbox with no
// effect on any canary, a legitimate neighbour that must work inside the
// same kind of sandbox, and an unsandboxed control (the probe with
// --no-sandbox, or without agent-sandbox at all) that must succeed, else
// the row is skipped saying why. Rows run per backend and, where the
// network mode matters, per mode: open, --offline and allow-list
// (--allow-host localhost:1; under nono localhost, without the port nono
// refuses). A mode the binary refuses (exit 125) fails
// its rows: it is a mode the engine must support.
//
// Names: TestEscapeView/<backend>/<mode>/<case>, TestEscapeView/<backend>/<case>
// for cases where the network mode does not matter, TestEscapeView/<case>
// for cases that involve no backend (doctor).
//
// Set AGENT_SANDBOX_E2E_BIN to a built agent-sandbox to run the compiled
// test binary as another user without a Go toolchain
// (go test -c -o /tmp/escview.test ./e2e; su tester -c '...').

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// netMode is one network mode of a run.
type netMode struct {
	name  string
	flags []string
}

var netModes = []netMode{
	{"open", nil},
	{"offline", []string{"--offline"}},
	{"allowlist", []string{"--allow-host", "localhost:1"}},
}

// Resource-limit ceilings the view cases hold the engine to: a sandboxed
// agent's RLIMIT_NPROC and RLIMIT_NOFILE (soft and hard) must be finite and
// at most these, whatever the launcher had.
const (
	viewMaxNproc  = 16384
	viewMaxNofile = 16384
)

// toctouLaunches bounds the grant-race case.
const toctouLaunches = 30

// view is a world seen through one backend and network mode, plus what a
// case adds to the launching process.
type view struct {
	*world
	backend backend
	mode    netMode
	env     map[string]string // added to (or replacing) world.env()
	extra   []*os.File        // descriptors 3, 4, ... of agent-sandbox
	wrap    []string          // a command prefix for agent-sandbox (prlimit)
}

// viewBinary is the agent-sandbox under test: $AGENT_SANDBOX_E2E_BIN when
// set (for running the compiled test as another user), else a fresh build.
func viewBinary(t *testing.T) string {
	if p := os.Getenv("AGENT_SANDBOX_E2E_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("AGENT_SANDBOX_E2E_BIN: %v", err)
		}
		return p
	}
	return buildAgentSandbox(t)
}

// newView makes a fresh world and moves it to a short path under the
// system temp directory, so Unix socket paths in it stay below the
// 108-byte sun_path limit.
func newView(t *testing.T, bin string, b backend, m netMode) *view {
	t.Helper()
	w := newWorld(t, bin, b.flags)
	short, err := os.MkdirTemp("", "esv")
	if err != nil {
		t.Fatal(err)
	}
	// os.Rename refuses an existing directory as the target, even empty.
	if err := os.Remove(short); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(w.root, short); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(short) })
	short, err = filepath.EvalSymlinks(short)
	if err != nil {
		t.Fatal(err)
	}
	re := func(p string) string { return short + strings.TrimPrefix(p, w.root) }
	w.home, w.work, w.folder, w.root = re(w.home), re(w.work), re(w.folder), short
	v := &view{world: w, backend: b, mode: m, env: map[string]string{}}
	if b.noUserns {
		v.wrap = noUserns(t)
	}
	if b.weaker {
		v.env["AGENT_SANDBOX_WEAKER_SANDBOX"] = "1"
	}
	return v
}

// environ is world.env() with the view's additions.
func (v *view) environ() []string {
	var env []string
	for _, kv := range v.world.env() {
		if _, over := v.env[strings.SplitN(kv, "=", 2)[0]]; !over {
			env = append(env, kv)
		}
	}
	for k, x := range v.env {
		env = append(env, k+"="+x)
	}
	return env
}

// opts tunes one launch.
type opts struct {
	dir     string              // default: the workdir
	timeout time.Duration       // default: 60 s
	started func(p *os.Process) // called once agent-sandbox has started
}

// exec runs agent-sandbox with exactly args. The exit code is -1 when a
// signal ended it.
func (v *view) exec(args []string, o opts) run {
	t := v.t
	t.Helper()
	if o.dir == "" {
		o.dir = v.work
	}
	if o.timeout == 0 {
		o.timeout = 60 * time.Second
	}
	argv := append(append(append([]string{}, v.wrap...), v.bin), args...)
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = o.dir
	cmd.Env = v.environ()
	cmd.ExtraFiles = v.extra
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting agent-sandbox: %v", err)
	}
	if o.started != nil {
		o.started(cmd.Process)
	}
	err := cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("agent-sandbox %q did not finish in %v: %s", args, o.timeout, out.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running agent-sandbox: %v", err)
	}
	return run{code, out.String()}
}

// sandboxFlags are the backend's and the mode's flags. nono alone refuses
// an allow-list entry with a port (its proxy would admit every port of the
// host), so its allow-list mode names localhost without one; inside the
// view the broker keeps the port.
func (v *view) sandboxFlags() []string {
	mode := v.mode.flags
	if v.backend.alone && v.mode.name == "allowlist" {
		mode = []string{"--allow-host", "localhost"}
	}
	return append(append([]string{}, v.flags...), mode...)
}

// agent runs `agent-sandbox FLAGS FOLDER -c SCRIPT` (sandboxed) or
// `agent-sandbox --no-sandbox FOLDER -c SCRIPT`.
func (v *view) agent(sandboxed bool, folder, script string, o opts) run {
	args := []string{"--no-sandbox"}
	if sandboxed {
		args = v.sandboxFlags()
	}
	return v.exec(append(args, folder, "-c", script), o)
}

// vars are the world's variables plus @HARNESS (this process's pid).
func (v *view) vars() vars {
	x := v.world.vars()
	x["HARNESS"] = strconv.Itoa(os.Getpid())
	return x
}

// viewCase is one generic row: probe, neighbour, control.
type viewCase struct {
	name string
	// modes the row runs in (nil: every mode).
	modes []string
	// needs are programs under /usr/bin the probe needs.
	needs []string
	// setup prepares host state for one run (a fresh world each run) and
	// returns variables for the scripts and a check of the host effect.
	setup func(t *testing.T, v *view) (vars, func() string)
	// probe must fail inside ("" for rows that only have a neighbour).
	probe string
	// neighbour must succeed inside.
	neighbour string
	// noControl says why the row has no unsandboxed control.
	noControl string
	// nono, when set, says why the probe SUCCEEDS under nono (measured
	// with nono 0.78.0; README, "Escape classes by backend"), and
	// nonoNoNeighbour why the neighbour cannot work there; each applies in
	// nonoModes (nil: every mode). The nono row pins that behaviour: it
	// fails when nono stops behaving so, so that the table is updated.
	nono, nonoNoNeighbour string
	nonoModes             []string
	// nonoNoNeighbourModes, when set, are the modes nonoNoNeighbour
	// applies in instead of nonoModes.
	nonoNoNeighbourModes []string
	// nonoRootOnly: the nono notes hold only when the suite runs as root.
	nonoRootOnly bool
	// weaker, when set, says why the probe SUCCEEDS inside the weaker
	// sandbox (AGENT_SANDBOX_WEAKER_SANDBOX=1), pinned as nono is;
	// weakerGuarded rows are judged by the host after the run only.
	weaker string
}

// Why nono's results differ from the built-in engine's, one phrase per
// cause (README, "Escape classes by backend").
const (
	// nonoOwnUnix: agent-sandbox's seccomp layer under nono refuses
	// socket(AF_UNIX), the only way to keep host sockets out there.
	nonoOwnUnix = "under nono agent-sandbox's seccomp layer refuses socket(AF_UNIX) (nono leaves pathname Unix sockets unmediated, and Landlock on this kernel cannot): the agent's own sockets fail too, unless the folder names their directory in unix_socket_dir_bind (TestNonoUnixSocketDirBind)"
	nonoStat    = "Landlock does not restrict stat(2): the names and metadata (size, times) of files outside the grants are visible, their contents are not"
	nonoInotify = "Landlock does not restrict inotify_add_watch: the agent can watch a directory it cannot read"
	nonoProtect = "nono cannot keep the protected project files read-only inside a writable grant (Landlock cannot deny inside an allowed directory; README, Protected files: the ledger)"
	// nonoGuarded rows are judged under nono by the host after the run
	// only: nono cannot keep git's metadata read-only, so the agent's
	// write may succeed inside, but agent-sandbox's guard undoes every
	// code-running change while the agent runs and after it ends.
	nonoGuarded = "nono cannot keep git's metadata read-only, but agent-sandbox's guard undoes code-running changes to it during and after the run"
	// nonoGitReplaced: the repository itself is not the guard's to keep.
	nonoGitReplaced = "under nono the agent can move .git away and make a new one: the guard keeps git's code-running settings and hooks out of it, not the repository (its config changes)"
	// weakerProtect: the weaker sandbox's protected files (README, "Escape
	// classes by backend"): written, then named after the run.
	weakerProtect = "the weaker sandbox cannot keep the protected project files read-only inside a writable grant (Landlock only adds rights): it says so before the run and names each one changed after it, for review"
	// weakerGuarded: as nonoGuarded, in the weaker sandbox.
	weakerGuarded = "the weaker sandbox cannot keep git's metadata read-only, but agent-sandbox's guard undoes code-running changes to it during and after the run"
	// weakerGitReplaced: as nonoGitReplaced, in the weaker sandbox.
	weakerGitReplaced = "in the weaker sandbox the agent can move .git away and make a new one: the guard keeps git's code-running settings and hooks out of it, not the repository (its config changes)"
	nonoRlimit        = "nono sets no resource limits: the agent keeps the launcher's"
	nonoNetlinkOff    = "nono's seccomp refuses every netlink socket when the network is blocked or allow-listed, NETLINK_ROUTE (getifaddrs) included"
	nonoProcView      = "nono has no PID namespace and Landlock does not restrict /proc: the agent sees every process and reads the /proc/<pid> files of the user's processes"
	nonoNetNS         = "nono has no network namespace: /proc/net/unix lists the host's Unix sockets"
	nonoLoopback      = "nono's blocked and allow-listed networks close loopback inside the sandbox too (Landlock's TCP rules admit only the proxy's and the open ports, and seccomp refuses UDP sockets), so a server and its client inside cannot talk"
)

// Python fragments shared by probes.
const (
	pySyscalls = `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
NR = {"x86_64": dict(add_key=248, request_key=249, keyctl=250, tgkill=234, renameat2=316),
      "aarch64": dict(add_key=217, request_key=218, keyctl=219, tgkill=131, renameat2=276)}[os.uname().machine]
L = ctypes.c_long
`
	pyUnixConnect = `python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.settimeout(3); s.connect("@SOCK"); s.send(b"@CANARY")'`
	pyUnixLocal   = `cd @WORK && python3 -c '
import socket, os
p = "nb.sock"
if os.path.exists(p): os.unlink(p)
srv = socket.socket(socket.AF_UNIX); srv.bind(p); srv.listen(1)
c = socket.socket(socket.AF_UNIX); c.settimeout(3); c.connect(p)
a, _ = srv.accept(); c.send(b"ping"); assert a.recv(4) == b"ping"
os.unlink(p)'`
	pyTCPTo = `python3 -c 'import socket; s=socket.create_connection(("127.0.0.1", @PORT), 3); s.send(b"@CANARY")'`
	// pyUDPTo connects its UDP socket, so that a port with no listener
	// (the sandbox's own loopback) makes a later send fail with
	// ECONNREFUSED instead of vanishing.
	pyUDPTo = `python3 -c 'import socket,time; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(("127.0.0.1", @PORT)); [s.send(b"@CANARY") or time.sleep(0.05) for _ in range(5)]'`
)

// pyLoopback is a server and client inside one process over host (a
// loopback address) with the given socket type.
func pyLoopback(family, host, typ string) string {
	if typ == "tcp" {
		return fmt.Sprintf(`python3 -c '
import socket
s = socket.socket(socket.%s, socket.SOCK_STREAM); s.bind(("%s", 0)); s.listen(1)
c = socket.create_connection(("%s", s.getsockname()[1]), 3)
a, _ = s.accept(); c.send(b"ping"); assert a.recv(4) == b"ping"'`, family, host, host)
	}
	return fmt.Sprintf(`python3 -c '
import socket
s = socket.socket(socket.%s, socket.SOCK_DGRAM); s.bind(("%s", 0)); s.settimeout(3)
c = socket.socket(socket.%s, socket.SOCK_DGRAM); c.sendto(b"ping", ("%s", s.getsockname()[1]))
assert s.recvfrom(4)[0] == b"ping"'`, family, host, family, host)
}

// sockAt returns a setup listening on a Unix socket at the path given by
// where (from the view), exposed to the probe as @SOCK; env names
// variables to point at the socket or its directory.
func sockAt(where func(v *view) string, env func(v *view, sock string)) func(*testing.T, *view) (vars, func() string) {
	return func(t *testing.T, v *view) (vars, func() string) {
		p := where(v)
		check := unixListener(t, p)
		if env != nil {
			env(v, p)
		}
		return vars{"SOCK": p}, check
	}
}

// x11Sock is a stand-in for /tmp/.X11-unix/X0 (the real one is left alone).
func x11Sock(v *view) string {
	d, err := os.MkdirTemp("/tmp", ".X11-unix-canary-")
	if err != nil {
		v.t.Fatal(err)
	}
	v.t.Cleanup(func() { os.RemoveAll(d) })
	return filepath.Join(d, "X0")
}

func viewHostTCP(t *testing.T, v *view) (vars, func() string)  { return tcpListener(t, v.world) }
func viewHostUDP(t *testing.T, v *view) (vars, func() string)  { return udpListener(t, v.world) }
func viewHostProc(t *testing.T, v *view) (vars, func() string) { return hostProcess(t, v.world) }

// gitRepo makes dir (which holds a README) a git repository with one commit.
func gitRepo(t *testing.T, v *view, dir string) {
	gitHost(t, v, dir, "init", "-q")
	gitHost(t, v, dir, "add", "README")
	gitHost(t, v, dir, "commit", "-qm", "init")
}

// gitHost runs git on the host side, with no user or system config.
func gitHost(t *testing.T, v *view, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=h", "-c", "user.email=h@agent-sandbox.invalid", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + v.home, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// gitSetup prepares a repository in the workdir (worktree false) or a
// main repository beside it with the workdir as a linked worktree, and
// checks that the main repository's .git/config keeps its content and no
// hook appears.
func gitSetup(worktree bool) func(*testing.T, *view) (vars, func() string) {
	return func(t *testing.T, v *view) (vars, func() string) {
		main := v.work
		if worktree {
			main = filepath.Join(v.root, "work", "main")
			write(t, filepath.Join(main, "README"), "main\n")
			gitRepo(t, v, main)
			if err := os.RemoveAll(v.work); err != nil {
				t.Fatal(err)
			}
			gitHost(t, v, main, "worktree", "add", "-q", "-b", "side", v.work)
		} else {
			gitRepo(t, v, v.work)
		}
		config := filepath.Join(main, ".git", "config")
		hook := filepath.Join(main, ".git", "hooks", "post-checkout")
		canary := filepath.Join(v.root, "git-hook-ran")
		before, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		return vars{"MAIN": main, "GITCANARY": canary}, func() string {
			var msg []string
			if after, _ := os.ReadFile(config); !bytes.Equal(before, after) {
				msg = append(msg, config+" was changed")
			}
			if _, err := os.Lstat(hook); err == nil {
				msg = append(msg, hook+" was written")
			}
			return strings.Join(msg, "; ")
		}
	}
}

// gitIdleHook is gitSetup(false) with a pre-commit hook that is not
// executable (as a sample renamed, or a hook switched off by chmod -x),
// and checks that it is still not executable after the run.
func gitIdleHook(t *testing.T, v *view) (vars, func() string) {
	vs, check := gitSetup(false)(t, v)
	hook := filepath.Join(v.work, ".git", "hooks", "pre-commit")
	write(t, hook, "#!/bin/sh\ntouch "+vs["GITCANARY"]+"\n")
	if err := os.Chmod(hook, 0o644); err != nil {
		t.Fatal(err)
	}
	return vs, func() string {
		msg := check()
		if fi, err := os.Stat(hook); err == nil && fi.Mode().Perm()&0o111 != 0 {
			msg = strings.TrimPrefix(msg+"; "+hook+" was made executable", "; ")
		}
		return msg
	}
}

const gitNeighbour = `cd @WORK && git status --short && echo more >> README && git add README && git -c user.name=a -c user.email=a@agent-sandbox.invalid commit -qm x && git log --oneline | grep -q x`

// keyringSetup adds a canary key to the harness's session keyring.
func keyringSetup(t *testing.T, v *view) (vars, func() string) {
	return vars{"KEYDESC": keyringCanary(t, v.canary)}, func() string { return "" }
}

// extraFDs hands agent-sandbox two open descriptors on secret files.
func extraFDs(t *testing.T, v *view) (vars, func() string) {
	for _, rel := range []string{".ssh/id_ed25519", ".aws/credentials"} {
		f, err := os.Open(filepath.Join(v.home, rel))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		v.extra = append(v.extra, f)
	}
	return nil, func() string { return "" }
}

// raisedLimits launches agent-sandbox under prlimit with the process and
// file limits raised as far as this user may (unlimited processes and
// 1048576 files as root; the hard limits otherwise), so a sandbox that
// leaves them alone shows it.
func raisedLimits(t *testing.T, v *view) (vars, func() string) {
	if _, err := os.Stat("/usr/bin/prlimit"); err != nil {
		t.Skip("needs /usr/bin/prlimit (util-linux) to raise the launcher's limits")
	}
	nproc, nofile := "unlimited", "1048576"
	if exec.Command("/usr/bin/prlimit", "--nproc="+nproc+":"+nproc, "--nofile="+nofile+":"+nofile, "/bin/true").Run() != nil {
		// Not allowed to raise the hard limits (not root, or no
		// CAP_SYS_RESOURCE in a container): raise the soft ones to them.
		var r syscall.Rlimit
		syscall.Getrlimit(6 /* RLIMIT_NPROC */, &r)
		nproc = strconv.FormatUint(r.Max, 10)
		if r.Max == ^uint64(0) {
			nproc = "unlimited"
		}
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r)
		nofile = strconv.FormatUint(r.Max, 10)
	}
	v.wrap = []string{"/usr/bin/prlimit", "--nproc=" + nproc + ":" + nproc, "--nofile=" + nofile + ":" + nofile}
	return nil, func() string { return "" }
}

// pyLimitOver exits 0 when the limit (soft or hard) is unlimited or above max.
func pyLimitOver(res string, max int) string {
	return fmt.Sprintf(`python3 -c '
import resource as r
lim = r.getrlimit(r.%s)
print("%s", lim)
raise SystemExit(0 if any(x == r.RLIM_INFINITY or x > %d for x in lim) else 1)'`, res, res, max)
}

var viewCases = []viewCase{
	// Class 1: host Unix sockets reached by path.
	{name: "unix-socket-docker", needs: []string{"python3"},
		setup: sockAt(func(v *view) string { return filepath.Join(v.home, ".docker.sock") }, nil),
		probe: pyUnixConnect, neighbour: pyUnixLocal, nonoNoNeighbour: nonoOwnUnix},
	{name: "unix-socket-xdg-runtime-bus", needs: []string{"python3"},
		setup: sockAt(func(v *view) string { return filepath.Join(v.root, "xdg-runtime", "bus") },
			func(v *view, s string) { v.env["XDG_RUNTIME_DIR"] = filepath.Dir(s) }),
		probe: pyUnixConnect, neighbour: pyUnixLocal, nonoNoNeighbour: nonoOwnUnix},
	{name: "unix-socket-x11-in-tmp", needs: []string{"python3"},
		setup: sockAt(x11Sock, func(v *view, s string) { v.env["DISPLAY"] = ":0" }),
		probe: pyUnixConnect, neighbour: pyUnixLocal, nonoNoNeighbour: nonoOwnUnix},
	{name: "unix-socket-ssh-agent", needs: []string{"python3"},
		setup: sockAt(func(v *view) string { return filepath.Join(v.root, "ssh-agent", "agent.1") },
			func(v *view, s string) { v.env["SSH_AUTH_SOCK"] = s }),
		probe: pyUnixConnect, neighbour: pyUnixLocal, nonoNoNeighbour: nonoOwnUnix},
	{name: "proc-net-unix-lists-host-socket", modes: []string{"offline", "allowlist"}, needs: []string{"python3"},
		setup: sockAt(func(v *view) string { return filepath.Join(v.home, ".docker.sock") }, nil),
		probe: `grep -q @SOCK /proc/net/unix`,
		neighbour: `cd @WORK && python3 -c '
import socket
s = socket.socket(socket.AF_UNIX); s.bind("nb2.sock"); s.listen(1)
assert "nb2.sock" in open("/proc/net/unix").read()'`, nono: nonoNetNS, nonoNoNeighbour: nonoOwnUnix},

	// Class 4: kernel keyrings.
	{name: "keyring-read-session-canary", needs: []string{"python3"}, setup: keyringSetup,
		probe: `python3 -c '` + pySyscalls + `
kid = libc.syscall(NR["request_key"], b"user", b"@KEYDESC", None, L(0))
if kid < 0: raise SystemExit("request_key: errno %d" % ctypes.get_errno())
buf = ctypes.create_string_buffer(512)
n = libc.syscall(NR["keyctl"], L(11), L(kid), buf, L(512))
if n < 0: raise SystemExit("keyctl read: errno %d" % ctypes.get_errno())
print(buf.raw[:n].decode())'`,
		neighbour: `python3 -c '` + pySyscalls + `
assert libc.syscall(39 if os.uname().machine == "x86_64" else 172) == os.getpid()'`},
	{name: "keyring-syscalls-allowed", needs: []string{"python3"},
		probe: `python3 -c '` + pySyscalls + `
ok = []
for name, ring in (("user", -4), ("session", -3), ("user-session", -5)):
    if libc.syscall(NR["keyctl"], L(0), L(ring), L(0)) >= 0: ok.append("get_keyring_id " + name)
if libc.syscall(NR["add_key"], b"user", b"agent-sandbox-probe", b"x", L(1), L(-3)) >= 0: ok.append("add_key session")
print(ok)
raise SystemExit(0 if ok else 1)'`,
		neighbour: `python3 -c 'import os; assert os.getpid() > 0'`},

	// Kernel surface no agent needs (issue 24, items 1, 2 and 9): a
	// nested user namespace (every capability inside it), AF_VSOCK (past
	// the network namespace, to the hypervisor), netlink other than
	// NETLINK_ROUTE, io_uring. Each neighbour is what an agent does need
	// nearby: processes and threads, an inet socket, NETLINK_ROUTE
	// (getifaddrs), ordinary file reads.
	{name: "userns-nested", needs: []string{"unshare", "python3"},
		probe:     `unshare -U true`,
		neighbour: `python3 -c 'import subprocess, threading; t = threading.Thread(target=lambda: None); t.start(); t.join(); assert subprocess.run(["true"]).returncode == 0'`},
	{name: "vsock-socket", needs: []string{"python3"},
		probe:     `python3 -c 'import socket; socket.socket(40, socket.SOCK_STREAM)'`,
		neighbour: `python3 -c 'import socket; socket.socketpair()'`},
	{name: "netlink-sock-diag", needs: []string{"python3"},
		probe:           `python3 -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 4)'`,
		neighbour:       `python3 -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 0); assert socket.if_nameindex()'`,
		nonoNoNeighbour: nonoNetlinkOff, nonoNoNeighbourModes: []string{"offline", "allowlist"}},
	{name: "io-uring-setup", needs: []string{"python3"},
		probe:     `python3 -c 'import ctypes; libc = ctypes.CDLL(None, use_errno=True); raise SystemExit(0 if libc.syscall(425, 8, ctypes.create_string_buffer(120)) >= 0 else 1)'`,
		neighbour: `python3 -c 'open("@WORK/README").read()'`},

	// The sandbox's init (issue 24 item 5): no thread of it may share the
	// agent's Landlock domain, where the agent could signal it (SIGABRT
	// crashed init: exit 125 and a goroutine dump on the terminal). Signal
	// 0 asks the same permission without sending anything. Outside the
	// sandbox PID 1 is the host's init, which an ordinary user may not
	// signal: no control.
	{name: "signal-init-threads", needs: []string{"python3"},
		noControl: "outside the sandbox PID 1 is the host's init",
		probe: `python3 -c '` + pySyscalls + `
ok = [t for t in os.listdir("/proc/1/task") if libc.syscall(NR["tgkill"], L(1), L(int(t)), L(0)) == 0]
print("signalled", ok)
raise SystemExit(0 if ok else 1)'`,
		neighbour: `python3 -c 'import os, signal; os.kill(os.getpid(), 0)'`},

	// Class 6: inherited descriptors.
	{name: "inherited-fd-secret", setup: extraFDs,
		probe: `ls -l /proc/self/fd/ | grep -q id_ed25519 && exit 0
for fd in 3 4 5 6 7 8 9; do if (cat <&$fd) 2>/dev/null | grep -q .; then echo "read fd $fd"; exit 0; fi; done; exit 1`,
		neighbour: `exec 5<@WORK/README && cat <&5 | grep -q project && ls /proc/self/fd/ | grep -qx 5`},

	// Class 7: inotify and metadata.
	{name: "stat-ssh-key", probe: `stat @HOME/.ssh/id_ed25519`, neighbour: `stat @WORK/README`, nono: nonoStat},
	{name: "ls-home-shows-ungranted", probe: `ls -A @HOME | grep -vx -e .local -e .cache -e .npm -e go -e .cargo | grep .`, // the agent's state and its private toolchain caches are its own
		neighbour: `ls -A @WORK | grep -qx README`},
	{name: "inotify-watch-ssh", needs: []string{"python3"},
		probe: `python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0); assert fd >= 0
raise SystemExit(0 if libc.inotify_add_watch(fd, b"@HOME/.ssh", 0xfff) >= 0 else 1)'`,
		neighbour: `python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0); assert fd >= 0
assert libc.inotify_add_watch(fd, b"@WORK", 0xfff) >= 0'`, nono: nonoInotify},

	// Class 3: git metadata the host runs later.
	{name: "git-config-fsmonitor", needs: []string{"git"}, setup: gitSetup(false),
		probe: `cd @WORK && git config core.fsmonitor "touch @GITCANARY"`, neighbour: gitNeighbour, nono: nonoGuarded},
	{name: "git-hook-post-checkout", needs: []string{"git"}, setup: gitSetup(false),
		probe: `printf "#!/bin/sh\ntouch @GITCANARY\n" > @WORK/.git/hooks/post-checkout && chmod +x @WORK/.git/hooks/post-checkout`, neighbour: gitNeighbour, nono: nonoGuarded},
	// A hook that is there but not executable (git ignores it) made
	// executable: git runs it from then on.
	{name: "git-hook-chmod-existing", needs: []string{"git"}, setup: gitIdleHook,
		probe: `chmod +x @WORK/.git/hooks/pre-commit`, neighbour: gitNeighbour, nono: nonoGuarded},
	{name: "git-worktree-main-config", needs: []string{"git"}, setup: gitSetup(true),
		probe: `cd @WORK && git config core.fsmonitor "touch @GITCANARY" && grep -q fsmonitor @MAIN/.git/config`, neighbour: gitNeighbour, nono: nonoGuarded},
	{name: "git-worktree-main-hook", needs: []string{"git"}, setup: gitSetup(true),
		probe: `printf "#!/bin/sh\ntouch @GITCANARY\n" > @MAIN/.git/hooks/post-checkout && chmod +x @MAIN/.git/hooks/post-checkout`, neighbour: gitNeighbour, nono: nonoGuarded},

	// Class 10: resource limits.
	{name: "rlimit-nproc-unbounded", needs: []string{"python3"}, setup: raisedLimits,
		probe:     pyLimitOver("RLIMIT_NPROC", viewMaxNproc),
		neighbour: `for i in 1 2 3 4 5 6 7 8; do sleep 0.1 & done; wait`, nono: nonoRlimit},
	{name: "rlimit-nofile-unbounded", needs: []string{"python3"}, setup: raisedLimits,
		probe:     pyLimitOver("RLIMIT_NOFILE", viewMaxNofile),
		neighbour: `python3 -c 'fs = [open("/dev/null") for _ in range(200)]'`, nono: nonoRlimit},

	// Class 11: /proc.
	{name: "ps-lists-host-process", needs: []string{"ps"}, setup: viewHostProc,
		probe:     `ps -e -o pid= | tr -d " " | grep -qx @PID`,
		neighbour: `sh -c "head -1 /proc/self/maps >/dev/null && grep -q ^Pid: /proc/self/status" && ps -e -o pid= | tr -d " " | grep -qx $$`, nono: nonoProcView},
	{name: "host-process-environ", setup: viewHostProc,
		probe: `cat /proc/@PID/environ`, neighbour: `sh -c "cat /proc/self/environ >/dev/null"`, nono: nonoProcEnviron, nonoRootOnly: true},

	// Issue 15 item 4: loopback inside, host loopback outside.
	{name: "loopback-inside-tcp4", needs: []string{"python3"}, neighbour: pyLoopback("AF_INET", "127.0.0.1", "tcp"),
		nonoNoNeighbour: nonoLoopback, nonoModes: []string{"offline", "allowlist"}},
	{name: "loopback-inside-tcp6", needs: []string{"python3"}, neighbour: pyLoopback("AF_INET6", "::1", "tcp"),
		nonoNoNeighbour: nonoLoopback, nonoModes: []string{"offline", "allowlist"}},
	{name: "loopback-inside-udp4", needs: []string{"python3"}, neighbour: pyLoopback("AF_INET", "127.0.0.1", "udp"),
		nonoNoNeighbour: nonoLoopback, nonoModes: []string{"offline", "allowlist"}},
	{name: "loopback-inside-udp6", needs: []string{"python3"}, neighbour: pyLoopback("AF_INET6", "::1", "udp"),
		nonoNoNeighbour: nonoLoopback, nonoModes: []string{"offline", "allowlist"}},
	{name: "host-loopback-tcp", modes: []string{"offline", "allowlist"}, needs: []string{"python3"}, setup: viewHostTCP,
		probe: pyTCPTo, neighbour: pyLoopback("AF_INET", "127.0.0.1", "tcp"), nonoNoNeighbour: nonoLoopback},
	{name: "host-loopback-udp", modes: []string{"offline", "allowlist"}, needs: []string{"python3"}, setup: viewHostUDP,
		probe: pyUDPTo, neighbour: pyLoopback("AF_INET", "127.0.0.1", "udp"), nonoNoNeighbour: nonoLoopback},
}

// TestEscapeView runs the view cases against every backend available here.
func TestEscapeView(t *testing.T) {
	if testing.Short() {
		t.Skip("the escape suite runs the real binary many times; skipped with -short")
	}
	bin := viewBinary(t)
	t.Run("doctor-planted-nono", func(t *testing.T) { doctorPlanted(t, bin) })
	t.Run("default-backend", func(t *testing.T) {
		// No --sandbox-backend: the folder's nono.json decides (nono, or
		// the built-in engine when nono is absent).
		b := backend{name: "default-backend"}
		policyFileCases(t, bin, b)
	})
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			if why := b.skip(t); why != "" {
				t.Skip(why)
			}
			for _, m := range netModes {
				t.Run(m.name, func(t *testing.T) {
					for _, c := range viewCases {
						if c.modes != nil && !contains(c.modes, m.name) {
							continue
						}
						t.Run(c.name, func(t *testing.T) { runViewCase(t, bin, b, m, c) })
					}
					t.Run("signal-kill-launcher", func(t *testing.T) { signalLauncher(t, bin, b, m, false) })
					t.Run("signal-tgkill-launcher-threads", func(t *testing.T) { signalLauncher(t, bin, b, m, true) })
					// Under nono the case is pinned (processes survive:
					// there is no PID namespace) and takes a minute; the
					// network mode does not change it, so it runs once.
					if !b.alone || m.name == "open" {
						t.Run("survivor-after-launcher-sigkill", func(t *testing.T) { survivorAfterKill(t, bin, b, m) })
					}
					t.Run("survivor-after-exit", func(t *testing.T) { survivorAfterExit(t, bin, b, m) })
					t.Run("toctou-workdir-swap", func(t *testing.T) { toctouSwap(t, bin, b, m, false) })
					t.Run("toctou-read-grant-swap", func(t *testing.T) { toctouSwap(t, bin, b, m, true) })
				})
			}
			if b.alone {
				t.Run("toctou-grant-swapped-after-check", func(t *testing.T) { nonoSwapAfterCheck(t, bin, b) })
			}
			configPathCases(t, bin, b)
			protectCasesFor(t, bin, b)
			policyFileCases(t, bin, b)
			t.Run("empty-allow-domain", func(t *testing.T) { emptyAllowList(t, bin, b, false) })
			t.Run("empty-allow-host", func(t *testing.T) { emptyAllowList(t, bin, b, true) })
		})
	}
	// The protected-file rows on the engines of a host without user
	// namespaces (simulated, as TestEscapes' nono-alone and
	// landlock-weaker): nono alone, and the weaker sandbox. Each row
	// that gets through there is pinned by its note (viewCase.nono,
	// viewCase.weaker) and named in the README's table.
	for _, b := range []backend{
		{name: "nono-alone", flags: []string{"--sandbox-backend", "nono"}, alone: true, noUserns: true},
		{name: "landlock-weaker", flags: []string{"--sandbox-backend", "landlock"}, noUserns: true, weaker: true},
	} {
		t.Run(b.name, func(t *testing.T) {
			if b.alone {
				nonoOrSkip(t)
			}
			if why := landlockMissing(); why != "" {
				t.Skip(why)
			}
			noUserns(t)
			t.Run("open", func(t *testing.T) {
				for _, c := range protectCases {
					t.Run(c.name, func(t *testing.T) { runViewCase(t, bin, b, netModes[0], c) })
				}
			})
			protectCasesFor(t, bin, b)
		})
	}
}

// settingsByKeys says whether an effect is on a settings file the guard
// reads by its keys (internal/protect's FormatJSON entries).
func settingsByKeys(effect string) bool {
	for _, n := range []string{"/.mcp.json ", "/.claude/settings.json ", "/.claude/settings.local.json "} {
		if strings.Contains(effect, n) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// needs skips when a program the row needs is missing.
func needs(t *testing.T, progs ...string) {
	t.Helper()
	for _, n := range progs {
		if _, err := os.Stat(filepath.Join("/usr/bin", n)); err != nil {
			t.Skipf("needs /usr/bin/%s (apt-get install %s)", n, n)
		}
	}
}

// checkAttack reports an attack run that was not stopped.
func checkAttack(t *testing.T, v *view, r run, effect string) {
	t.Helper()
	if r.code == 0 {
		t.Errorf("attack succeeded inside the sandbox (exit 0): %s", r.out)
	}
	if r.code == 125 {
		t.Errorf("agent-sandbox refused to run (exit 125), so the attack was never tried: %s", r.out)
	}
	if strings.Contains(r.out, v.canary) {
		t.Errorf("the canary leaked into the output: %s", r.out)
	}
	if effect != "" {
		t.Errorf("the attack had an effect on the host: %s", effect)
	}
}

func runViewCase(t *testing.T, bin string, b backend, m netMode, c viewCase) {
	needs(t, c.needs...)
	once := func(sandboxed bool, script string) (*view, run, string) {
		v := newView(t, bin, b, m)
		x := v.vars()
		check := func() string { return "" }
		if c.setup != nil {
			extra, ch := c.setup(t, v)
			for k, s := range extra {
				x[k] = s
			}
			check = ch
		}
		r := v.agent(sandboxed, v.folder, expand(script, x), opts{})
		return v, r, check()
	}
	script := c.probe
	if script == "" {
		script = c.neighbour
	}
	if c.noControl == "" {
		if _, r, _ := once(false, script); r.code != 0 {
			t.Skipf("control: the probe fails even with --no-sandbox, so it proves nothing here (exit %d): %s", r.code, r.out)
		}
	}
	pinned := b.alone && (c.nonoModes == nil || contains(c.nonoModes, m.name)) && (!c.nonoRootOnly || os.Geteuid() == 0)
	note, engine := "", "nono"
	if pinned {
		note = c.nono
	}
	if b.weaker {
		note, engine = c.weaker, "the weaker sandbox"
	}
	if c.probe != "" {
		v, r, effect := once(true, c.probe)
		switch {
		case note == nonoGuarded || note == weakerGuarded:
			// Judged by the host after the run: the guard's undoing
			// may or may not beat the probe's next command inside.
			if r.code == 125 {
				t.Errorf("agent-sandbox refused to run (exit 125), so the attack was never tried: %s", r.out)
			}
			if effect != "" {
				t.Errorf("under %s the guard did not undo the attack (%s): %s\n%s", engine, note, effect, r.out)
			}
		case note != "":
			// The engine's own behaviour, pinned: the attack gets through.
			if r.code != 0 && effect == "" {
				t.Errorf("under %s this attack used to succeed (%s) and now fails (exit %d): update the row's note and the README's table (Escape classes by backend): %s", engine, note, r.code, r.out)
			} else {
				t.Logf("%s's behaviour, pinned: the attack succeeds (on the host after the run: %q): %s", engine, effect, note)
			}
			// What stays changed on the host is named after the run,
			// except a settings file read by its keys (.mcp.json,
			// .claude/settings*.json), where a key that runs code is
			// taken out (protect-*-hook-added, -server-added) and other
			// changes are the agent's to make.
			if effect != "" && (note == nonoProtect || note == weakerProtect) && !settingsByKeys(effect) && !strings.Contains(r.out, "changed during the run") {
				t.Errorf("under %s a protected file stayed changed (%s) and the run did not name it: %s", engine, effect, r.out)
			}
		default:
			checkAttack(t, v, r, effect)
		}
	}
	_, r, _ := once(true, c.neighbour)
	switch {
	case c.nonoNoNeighbour != "" && b.alone && (c.nonoNoNeighbourModes == nil && pinned || contains(c.nonoNoNeighbourModes, m.name)):
		// nono's own behaviour, pinned: the neighbour cannot work.
		if r.code == 0 {
			t.Errorf("under nono this neighbour used to fail (%s) and now works: update the row's nono note and the README's table (Escape classes by backend): %s", c.nonoNoNeighbour, r.out)
		} else {
			t.Logf("nono's behaviour, pinned: the neighbour fails (exit %d): %s", r.code, c.nonoNoNeighbour)
		}
	case r.code != 0:
		t.Errorf("the legitimate neighbour failed inside the sandbox (exit %d): %s", r.code, r.out)
	}
}

// launcherPidFile is where the signal cases publish agent-sandbox's pid
// (in the workdir, which the probe can read).
const launcherPidFile = ".launcher-pid"

// publishPid writes p's pid into the workdir for the probe.
func (v *view) publishPid(p *os.Process) {
	tmp := filepath.Join(v.work, launcherPidFile+".tmp")
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(p.Pid)), 0o644); err != nil {
		v.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.work, launcherPidFile)); err != nil {
		v.t.Fatal(err)
	}
}

// waitPid is the shell prelude of the signal probes: wait (bounded) for
// the harness to publish agent-sandbox's pid, as $lp.
const waitPid = `i=0; while [ ! -s @WORK/` + launcherPidFile + ` ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
lp=$(cat @WORK/` + launcherPidFile + `)
`

// signalLauncher: the agent tries to kill agent-sandbox (its pid, its
// parent, or each of its threads with tgkill). Pass: agent-sandbox exits
// normally with the probe's own status (7). Control: unsandboxed the
// same probe kills agent-sandbox. Never signals $PPID when it is 0 or 1
// (a process group, or init) or the harness itself.
func signalLauncher(t *testing.T, bin string, b backend, m netMode, threads bool) {
	probe := waitPid + `kill -9 "$lp" 2>/dev/null && echo killed launcher
if [ "$PPID" -gt 1 ] && [ "$PPID" != "@HARNESS" ]; then kill -9 "$PPID" 2>/dev/null && echo killed parent; fi
sleep 1; exit 7`
	if threads {
		needs(t, "python3")
		probe = waitPid + `python3 -c '` + pySyscalls + `
import time
lp = int(open("@WORK/` + launcherPidFile + `").read())
try: tids = [int(x) for x in os.listdir("/proc/%d/task" % lp)]
except OSError: tids = list(range(lp, lp + 64))
hits = [tid for tid in tids if libc.syscall(NR["tgkill"], L(lp), L(tid), L(9)) == 0]
print("tgkill hits", hits)
time.sleep(1)'
exit 7`
	}
	once := func(sandboxed bool) run {
		v := newView(t, bin, b, m)
		return v.agent(sandboxed, v.folder, expand(probe, v.vars()), opts{started: v.publishPid})
	}
	if r := once(false); r.code == 7 {
		t.Skipf("control: unsandboxed the probe did not kill agent-sandbox (exit 7), so it proves nothing here: %s", r.out)
	}
	if r := once(true); r.code != 7 {
		t.Errorf("agent-sandbox did not end with the agent's status 7 (exit %d): the agent reached it with a signal, or the run failed: %s", r.code, r.out)
	}
}

// survivorProbe starts a process in a new session that carries marker in
// its command line and environment, tells the harness, then waits.
func survivorProbe(marker string, wait bool) string {
	s := `setsid env ESCAPE_MARKER=` + marker + ` sh -c "sleep 600; : ` + marker + `" </dev/null >/dev/null 2>&1 &
echo started > @WORK/.started`
	if wait {
		// The agent waits to be killed with its streams on /dev/null: an
		// unsandboxed control's shell, which outlives the SIGKILLed
		// launcher, must not hold the harness's pipe for 30 s.
		s += "\nexec sleep 30 </dev/null >/dev/null 2>&1"
	}
	return s
}

// waitFile polls for p for up to d.
func waitFile(p string, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// survivorAfterKill: the agent leaves a setsid process behind, then the
// harness SIGKILLs agent-sandbox itself. Pass: within 5 s no process
// carrying the marker remains. Control: unsandboxed, it survives.
func survivorAfterKill(t *testing.T, bin string, b backend, m netMode) {
	once := func(sandboxed bool) (run, []int) {
		v := newView(t, bin, b, m)
		marker := newMarker()
		t.Cleanup(func() { killMarked(marker) })
		started := filepath.Join(v.work, ".started")
		r := v.agent(sandboxed, v.folder, expand(survivorProbe(marker, true), v.vars()), opts{started: func(p *os.Process) {
			if waitFile(started, 20*time.Second) {
				time.Sleep(200 * time.Millisecond)
			}
			p.Signal(syscall.SIGKILL)
		}})
		if _, err := os.Stat(started); err != nil {
			t.Fatalf("the probe never started its survivor (exit %d): %s", r.code, r.out)
		}
		left := survivors(marker, 5*time.Second)
		killMarked(marker)
		return r, left
	}
	if _, left := once(false); len(left) == 0 {
		t.Skip("control: unsandboxed no process outlived a SIGKILLed agent-sandbox, so the case proves nothing here")
	}
	if b.alone {
		// nono's own behaviour, pinned: nono and the agent's processes
		// are ordinary processes of the user, and nothing ends them when
		// agent-sandbox is killed (the built-in engine's init is PID 1 of
		// its namespace, so the kernel ends the sandbox with it).
		if r, left := once(true); len(left) == 0 {
			t.Errorf("under nono processes used to outlive a SIGKILLed agent-sandbox and now do not: update this pin and the README's table (Escape classes by backend) (run exit %d: %s)", r.code, r.out)
		} else {
			t.Logf("nono's behaviour, pinned: processes %v of the agent outlived a SIGKILLed agent-sandbox (no PID namespace)", left)
		}
		return
	}
	if r, left := once(true); len(left) > 0 {
		t.Errorf("processes %v of the agent outlived a SIGKILLed agent-sandbox by 5 s (run exit %d: %s)", left, r.code, r.out)
	}
}

// survivorAfterExit: the agent leaves a setsid process behind and exits.
// Pass: after agent-sandbox returns, no process carries the marker (2 s).
// Control: the same script run by /bin/sh directly leaves it running.
func survivorAfterExit(t *testing.T, bin string, b backend, m netMode) {
	v := newView(t, bin, b, m)
	marker := newMarker()
	t.Cleanup(func() { killMarked(marker) })
	script := expand(survivorProbe(marker, false), v.vars())
	if out, err := exec.Command("/bin/sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("control script: %v: %s", err, out)
	}
	if !appears(marker, 5*time.Second) {
		t.Skip("control: run by /bin/sh directly, the setsid process did not survive, so the case proves nothing here")
	}
	killMarked(marker)

	v = newView(t, bin, b, m)
	marker = newMarker()
	t.Cleanup(func() { killMarked(marker) })
	r := v.agent(true, v.folder, expand(survivorProbe(marker, false), v.vars()), opts{})
	if r.code != 0 {
		t.Errorf("the probe (which only starts a background process) failed inside the sandbox (exit %d): %s", r.code, r.out)
	}
	if left := survivors(marker, 2*time.Second); len(left) > 0 {
		t.Errorf("processes %v of the agent outlived the run", left)
	}
}

// swapper is the agent side of the grant race: it exchanges @WORK/sub (a
// directory) and @WORK/subl (a symlink to ~/.ssh) with renameat2
// RENAME_EXCHANGE until @WORK/.stop appears (at most 90 s), or count times.
func swapper(count int) string {
	return `cd @WORK && python3 -c '` + pySyscalls + `
import time
open(".swapping", "w").close()
end, n = time.time() + 90, 0
while time.time() < end and not os.path.exists(".stop") and (` + strconv.Itoa(count) + ` == 0 or n < ` + strconv.Itoa(count) + `):
    if libc.syscall(NR["renameat2"], -100, b"sub", -100, b"subl", 2) != 0:
        raise SystemExit("renameat2: errno %d" % ctypes.get_errno())
    n += 1
print("swaps", n)'`
}

// toctouSwap: while a sandboxed agent swaps a directory in its workdir for
// a symlink to ~/.ssh, the harness launches runs granted that directory
// (as --workdir, or as a folder read grant). Pass: no run ever shows the
// canary (refusals, exit 125, are fine). Neighbour: without the swapper,
// the same runs read the directory's own file. Control: the swap works
// unsandboxed on this filesystem.
func toctouSwap(t *testing.T, bin string, b backend, m netMode, readGrant bool) {
	needs(t, "python3")
	v := newView(t, bin, b, m)
	sub, subl := filepath.Join(v.work, "sub"), filepath.Join(v.work, "subl")
	write(t, filepath.Join(sub, "own.txt"), "own file\n")
	if err := os.Symlink(filepath.Join(v.home, ".ssh"), subl); err != nil {
		t.Fatal(err)
	}
	x := v.vars()
	// Control: two exchanges unsandboxed (leaving sub a directory).
	if r := v.agent(false, v.folder, expand(swapper(2), x), opts{}); r.code != 0 {
		t.Skipf("control: renameat2(RENAME_EXCHANGE) fails here even unsandboxed (exit %d): %s", r.code, r.out)
	}
	os.Remove(filepath.Join(v.work, ".swapping"))

	folder, dir := v.folder, sub
	victim := `cat id_ed25519 own.txt @HOME/.ssh/id_ed25519 2>/dev/null; exit 0`
	args := func() []string { return append(v.sandboxFlags(), "--workdir", sub, folder, "-c", expand(victim, x)) }
	if readGrant {
		folder = filepath.Join(v.root, "agents", "reader")
		write(t, filepath.Join(folder, "agent.toml"), "command = \"/bin/sh\"\n")
		write(t, filepath.Join(folder, "sandbox", "nono.json"), `{"filesystem": {"read": ["`+sub+`"]}}`+"\n")
		dir = filepath.Join(v.root, "work", "elsewhere")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		victim = `cat @WORK/sub/id_ed25519 @WORK/sub/own.txt @HOME/.ssh/id_ed25519 2>/dev/null; exit 0`
		args = func() []string { return append(v.sandboxFlags(), folder, "-c", expand(victim, x)) }
	}

	// Neighbour: no race, the grant works (and ~/.ssh stays unreadable, or the race below proves nothing).
	if r := v.exec(args(), opts{dir: dir}); r.code != 0 || !strings.Contains(r.out, "own file") || strings.Contains(r.out, v.canary) {
		t.Errorf("the legitimate neighbour (a run granted %s, no race) did not read its file (exit %d): %s", sub, r.code, r.out)
	}

	// The race.
	done := make(chan run, 1)
	go func() {
		done <- v.agent(true, v.folder, expand(swapper(0), x), opts{timeout: 120 * time.Second})
	}()
	defer func() {
		os.WriteFile(filepath.Join(v.work, ".stop"), nil, 0o644)
		r := <-done
		if fi, err := os.Lstat(sub); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			os.Rename(sub, filepath.Join(v.work, "tmp-swap"))
			os.Rename(subl, sub)
			os.Rename(filepath.Join(v.work, "tmp-swap"), subl)
		}
		if !strings.Contains(r.out, "swaps") {
			t.Errorf("the swapper did not run inside the sandbox (exit %d): %s", r.code, r.out)
		}
	}()
	if !waitFile(filepath.Join(v.work, ".swapping"), 20*time.Second) {
		t.Errorf("the swapper never started inside the sandbox")
		return
	}
	refused, leaked := 0, 0
	for i := 0; i < toctouLaunches; i++ {
		r := v.exec(args(), opts{dir: dir, timeout: 30 * time.Second})
		if strings.Contains(r.out, v.canary) {
			if b.alone {
				// nono's own behaviour: it resolves the grant's path
				// itself when it starts, after agent-sandbox checked it,
				// and follows the swapped-in symlink. Pinned
				// deterministically by toctou-grant-swapped-after-check;
				// here the race is only measured.
				leaked++
				continue
			}
			t.Errorf("launch %d of %d read ~/.ssh through the swapped grant (exit %d): %s", i+1, toctouLaunches, r.code, r.out)
			return
		}
		if r.code == 125 {
			refused++
		}
	}
	if b.alone {
		t.Logf("nono's behaviour, measured: %d launches, %d refused, %d read ~/.ssh through the swapped grant (pinned by toctou-grant-swapped-after-check)", toctouLaunches, refused, leaked)
		return
	}
	t.Logf("%d launches, %d refused, none read the canary", toctouLaunches, refused)
}

// nonoSwapAfterCheck pins nono's side of the grant race deterministically:
// agent-sandbox checks a granted directory (--workdir, or a folder read
// grant), and the directory is replaced by a symlink to ~/.ssh after that
// check and before nono starts (by a wrapper that does the swap and then
// execs the real nono). nono resolves the grant's path itself when it
// starts, follows the link and grants ~/.ssh: the run reads the canary.
// This is nono's behaviour (it takes paths, not descriptors); the built-in
// engine opens every grant once and builds its rules from the descriptor,
// which toctou-workdir-swap and toctou-read-grant-swap hold it to.
// Neighbour: without the swap the same runs read the directory's own file.
func nonoSwapAfterCheck(t *testing.T, bin string, b backend) {
	nono := nonoOrSkip(t)
	for _, readGrant := range []bool{false, true} {
		name := "workdir"
		if readGrant {
			name = "read-grant"
		}
		t.Run(name, func(t *testing.T) {
			v := newView(t, bin, b, netMode{name: "open"})
			sub := filepath.Join(v.work, "sub")
			write(t, filepath.Join(sub, "own.txt"), "own file\n")
			wrap := filepath.Join(v.root, "wrap")
			// The wrapper swaps only while the file "swap" exists (the
			// neighbour runs without it).
			swapping := filepath.Join(v.root, "swap")
			write(t, filepath.Join(wrap, "nono"), fmt.Sprintf("#!/bin/sh\nif [ -e %[1]s ]; then rm -f %[1]s; mv %[2]s %[2]s.real && ln -s %[3]s %[2]s; fi\nexec %[4]s \"$@\"\n",
				swapping, sub, filepath.Join(v.home, ".ssh"), nono))
			if err := os.Chmod(filepath.Join(wrap, "nono"), 0o755); err != nil {
				t.Fatal(err)
			}
			v.env["PATH"] = wrap + ":" + agentPath()
			folder, dir := v.folder, sub
			victim := "cat id_ed25519 own.txt 2>/dev/null; exit 0"
			args := append(v.sandboxFlags(), "--workdir", sub, folder, "-c", victim)
			if readGrant {
				folder = filepath.Join(v.root, "agents", "reader")
				write(t, filepath.Join(folder, "agent.toml"), "command = \"/bin/sh\"\n")
				write(t, filepath.Join(folder, "sandbox", "nono.json"), `{"filesystem": {"read": ["`+sub+`"]}}`+"\n")
				dir = filepath.Join(v.root, "work", "elsewhere")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				victim = "cat " + sub + "/id_ed25519 " + sub + "/own.txt 2>/dev/null; exit 0"
				args = append(v.sandboxFlags(), folder, "-c", victim)
			}
			restore := func() {
				if fi, err := os.Lstat(sub); err == nil && fi.Mode()&os.ModeSymlink != 0 {
					os.Remove(sub)
					os.Rename(sub+".real", sub)
				}
			}
			t.Cleanup(restore)
			// Neighbour: no swap, the grant works and ~/.ssh stays out.
			if r := v.exec(args, opts{dir: dir}); r.code != 0 || !strings.Contains(r.out, "own file") || strings.Contains(r.out, v.canary) {
				t.Fatalf("neighbour: without the swap the run granted %s did not read its file (exit %d): %s", sub, r.code, r.out)
			}
			write(t, swapping, "")
			r := v.exec(args, opts{dir: dir})
			restore()
			if !strings.Contains(r.out, v.canary) {
				t.Errorf("under nono a grant swapped for a symlink to ~/.ssh after agent-sandbox's check used to reach ~/.ssh and now does not (exit %d): update this pin and the README's table (Escape classes by backend): %s", r.code, r.out)
			} else {
				t.Logf("nono's behaviour, pinned: nono resolved the swapped grant %s to ~/.ssh and the agent read it", sub)
			}
		})
	}
}

// doctorPlanted: a workdir directory on PATH holds an executable named
// nono that touches a canary. `agent-sandbox doctor` must not run it and
// must name it on a warn or fail line. Control: the same PATH runs it from a shell.
func doctorPlanted(t *testing.T, bin string) {
	v := newView(t, bin, backend{name: "none"}, netMode{name: "none"})
	binDir := filepath.Join(v.work, ".venv", "bin")
	canary := filepath.Join(v.root, "planted-nono-ran")
	write(t, filepath.Join(binDir, "nono"), "#!/bin/sh\ntouch "+canary+"\necho nono 0.74.0\n")
	if err := os.Chmod(filepath.Join(binDir, "nono"), 0o755); err != nil {
		t.Fatal(err)
	}
	v.env["PATH"] = binDir + ":/usr/bin:/bin"
	ctl := exec.Command("/bin/sh", "-c", "nono --version")
	ctl.Env = v.environ()
	if out, err := ctl.CombinedOutput(); err != nil {
		t.Skipf("control: the planted nono does not run from a shell with that PATH (%v): %s", err, out)
	}
	if _, err := os.Stat(canary); err != nil {
		t.Skip("control: the planted nono ran but left no canary")
	}
	os.Remove(canary)

	r := v.exec([]string{"doctor"}, opts{})
	if _, err := os.Stat(canary); err == nil {
		t.Errorf("doctor executed the planted %s (exit %d): %s", filepath.Join(binDir, "nono"), r.code, r.out)
	}
	flagged := false
	for _, line := range strings.Split(r.out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "warn" || f[0] == "fail") && strings.Contains(line, filepath.Join(".venv", "bin", "nono")) {
			flagged = true
		}
	}
	if !flagged {
		t.Errorf("doctor has no warn or fail line naming the planted program %s (exit %d): %s", filepath.Join(binDir, "nono"), r.code, r.out)
	}
}

// persistencePaths are config_paths that make the host run code later
// (issue 10 class 9): refused as writable grants, accepted as read grants.
var persistencePaths = []struct {
	path string
	dir  bool
}{
	{"~/.config/autostart", true},
	{"~/.bash_aliases", false},
	{"~/.config/systemd/user", true},
	{"~/.config/environment.d", true},
	{"~/.local/bin", true},
	{"~/.gitconfig", false},
	{"~/.config/git", true},
	{"~/.vimrc", false},
	{"~/.config/nvim", true},
	{"~/.pam_environment", false},
	{"~/.xsessionrc", false},
	{"~/.config/direnv", true},
	{"~/.ipython", true},
}

// configPathCases: an agent folder whose config_paths names a persistence
// path: --dry-run exits 125 naming it. Neighbour: the same path in
// read_paths is accepted. No unsandboxed control: this is a refusal of
// the folder, not something the agent does.
func configPathCases(t *testing.T, bin string, b backend) {
	for _, pp := range persistencePaths {
		name := "config-path" + strings.ReplaceAll(strings.TrimPrefix(pp.path, "~"), "/", "-")
		t.Run(name, func(t *testing.T) {
			v := newView(t, bin, b, netMode{name: "open"})
			abs := filepath.Join(v.home, strings.TrimPrefix(pp.path, "~/"))
			if pp.dir {
				if err := os.MkdirAll(abs, 0o755); err != nil {
					t.Fatal(err)
				}
			} else {
				write(t, abs, "# user file\n")
			}
			folder := func(key string) string {
				f := filepath.Join(v.root, "agents", "persist-"+key)
				write(t, filepath.Join(f, "agent.toml"), fmt.Sprintf("command = \"/bin/sh\"\n%s = [%q]\n", key, pp.path))
				write(t, filepath.Join(f, "sandbox", "nono.json"), "{}\n")
				return f
			}
			r := v.exec(append(v.sandboxFlags(), "--dry-run", folder("config_paths"), "-c", "true"), opts{})
			if r.code != 125 {
				t.Errorf("config_paths = [%q]: --dry-run exit %d, want 125: %s", pp.path, r.code, r.out)
			}
			if !strings.Contains(r.out, pp.path) && !strings.Contains(r.out, abs) {
				t.Errorf("the refusal does not name %s: %s", pp.path, r.out)
			}
			if r := v.exec(append(v.sandboxFlags(), "--dry-run", folder("read_paths"), "-c", "true"), opts{}); r.code != 0 {
				t.Errorf("neighbour: read_paths = [%q] was not accepted (exit %d): %s", pp.path, r.code, r.out)
			}
		})
	}
}

// policyFileCases (issue 15 item 1): a sandbox/nono.json or sandbox/sbx.json
// that exists as a name but cannot be read (dangling symlink, a directory,
// mode 000) must refuse the run with 125, and the agent never starts.
// Neighbour: a valid {} runs the same command. Control: with no policy file
// at all the same command runs (unsandboxed), so the refusal is what kept
// the agent from starting. b.flags nil means no --sandbox-backend.
func policyFileCases(t *testing.T, bin string, b backend) {
	kinds := []struct {
		name string
		make func(t *testing.T, p string)
	}{
		{"dangling-symlink", func(t *testing.T, p string) {
			if err := os.Symlink("missing.json", p); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"unreadable", func(t *testing.T, p string) {
			if os.Geteuid() == 0 {
				t.Skip("root reads a mode-000 file anyway: run this row as an ordinary user (su tester)")
			}
			write(t, p, "{}\n")
			if err := os.Chmod(p, 0); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, file := range []string{"nono.json", "sbx.json"} {
		for _, k := range kinds {
			name := "policy-file-" + k.name
			if file != "nono.json" {
				name = "policy-file-" + strings.TrimSuffix(file, ".json") + "-" + k.name
			}
			t.Run(name, func(t *testing.T) {
				v := newView(t, bin, b, netMode{name: "open"})
				started := filepath.Join(v.work, "agent-started")
				policy := filepath.Join(v.folder, "sandbox", file)
				if file == "nono.json" {
					// The folder then has no readable policy file: without
					// the check it ran unsandboxed.
					if err := os.Remove(policy); err != nil {
						t.Fatal(err)
					}
				}
				k.make(t, policy)
				r := v.exec(append(v.sandboxFlags(), v.folder, "-c", "touch "+started), opts{})
				if r.code != 125 {
					t.Errorf("with %s as sandbox/%s: exit %d, want 125: %s", k.name, file, r.code, r.out)
				}
				if _, err := os.Stat(started); err == nil {
					t.Errorf("the agent started although its policy file could not be read: %s", r.out)
				}
				if !strings.Contains(r.out, file) {
					t.Errorf("the error does not name %s: %s", file, r.out)
				}

				n := newView(t, bin, b, netMode{name: "open"})
				started = filepath.Join(n.work, "agent-started")
				r = n.exec(append(n.sandboxFlags(), n.folder, "-c", "touch "+started), opts{})
				if _, err := os.Stat(started); r.code != 0 || err != nil {
					t.Errorf("neighbour: with a valid nono.json the agent did not run (exit %d): %s", r.code, r.out)
				}

				c := newView(t, bin, b, netMode{name: "open"})
				started = filepath.Join(c.work, "agent-started")
				if err := os.Remove(filepath.Join(c.folder, "sandbox", "nono.json")); err != nil {
					t.Fatal(err)
				}
				r = c.exec([]string{"--no-sandbox", c.folder, "-c", "touch " + started}, opts{})
				if _, err := os.Stat(started); r.code != 0 || err != nil {
					t.Errorf("control: with no policy file the agent did not run unsandboxed (exit %d): %s", r.code, r.out)
				}
			})
		}
	}
}

// emptyAllowList (issue 15 item 2): {"network": {"allow_domain": []}}, or
// --allow-host with an empty value, must not open the network: a probe to
// a harness TCP listener on 127.0.0.1 fails (a refusal, 125, is fine for
// the flag), and --dry-run --json says blocked or allowlist with an empty
// list. Neighbour: with {} (open network) the same probe reaches the
// listener. Control: so does --no-sandbox.
func emptyAllowList(t *testing.T, bin string, b backend, flag bool) {
	needs(t, "python3")
	setup := func() (*view, string, []string, func() string) {
		v := newView(t, bin, b, netMode{name: "open"})
		x, check := tcpListener(t, v.world)
		y := v.vars()
		for k, s := range x {
			y[k] = s
		}
		args := v.sandboxFlags()
		if flag {
			args = append(args, "--allow-host", "")
		} else {
			write(t, filepath.Join(v.folder, "sandbox", "nono.json"), `{"network": {"allow_domain": []}}`+"\n")
		}
		return v, expand(pyTCPTo, y), args, check
	}
	v, probe, _, check := setup()
	if r := v.agent(false, v.folder, probe, opts{}); r.code != 0 || check() == "" {
		t.Skipf("control: the probe does not reach the host listener even with --no-sandbox (exit %d): %s", r.code, r.out)
	}

	v, probe, args, check := setup()
	r := v.exec(append(args, v.folder, "-c", probe), opts{})
	if effect := check(); effect != "" {
		t.Errorf("with an empty allow list the network was open: %s (exit %d): %s", effect, r.code, r.out)
	}
	if r.code == 0 {
		t.Errorf("the probe succeeded (exit 0): %s", r.out)
	}
	if r.code == 125 && !flag {
		t.Errorf("an empty allow_domain list refused the run (exit 125) instead of blocking the network: %s", r.out)
	}

	v, _, args, _ = setup()
	r = v.exec(append(args, "--dry-run", "--json", v.folder, "-c", "true"), opts{})
	if !(flag && r.code == 125) {
		var plan struct {
			Network struct {
				Mode         string   `json:"mode"`
				AllowDomains []string `json:"allow_domains"`
			} `json:"network"`
		}
		// r.out holds stderr too (the warning that the list is empty):
		// the plan is the JSON object from the first line opening one.
		js := r.out
		if i := strings.Index(js, "\n{"); i >= 0 && !strings.HasPrefix(js, "{") {
			js = js[i+1:]
		}
		if err := json.Unmarshal([]byte(js), &plan); err != nil {
			t.Errorf("--dry-run --json (exit %d) did not print a plan: %v: %s", r.code, err, r.out)
		} else if (plan.Network.Mode != "blocked" && plan.Network.Mode != "allowlist") || len(plan.Network.AllowDomains) != 0 {
			t.Errorf("--dry-run --json says network mode %q with allow_domains %q; want blocked or allowlist with an empty list", plan.Network.Mode, plan.Network.AllowDomains)
		}
	}

	v, probe, _, check = setup()
	write(t, filepath.Join(v.folder, "sandbox", "nono.json"), "{}\n")
	if r := v.exec(append(v.sandboxFlags(), v.folder, "-c", probe), opts{}); r.code != 0 || check() == "" {
		t.Errorf("neighbour: with an open network the probe did not reach the host listener (exit %d): %s", r.code, r.out)
	}
}
