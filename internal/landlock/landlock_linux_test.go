//go:build linux

package landlock

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"golang.org/x/sys/unix"
)

// fsFixture is a writable work dir, a read-only dir with a file, and a
// secret in a directory that is not granted at all.
type fsFixture struct {
	work, ro, roFile, rx, secretDir, secret, outside string
}

func newFSFixture(t *testing.T) fsFixture {
	t.Helper()
	f := fsFixture{work: t.TempDir(), ro: t.TempDir(), rx: t.TempDir(), secretDir: t.TempDir(), outside: t.TempDir()}
	f.roFile = filepath.Join(f.ro, "agent.toml")
	f.secret = filepath.Join(f.secretDir, "id_ed25519")
	must(t, os.WriteFile(f.roFile, []byte("read-only\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(f.ro, "script"), []byte("#!/bin/sh\necho ran\n"), 0o755))
	must(t, os.WriteFile(f.secret, []byte("canary-secret\n"), 0o600))
	must(t, os.Mkdir(filepath.Join(f.work, "sub"), 0o755))
	return f
}

func (f fsFixture) policy(t *testing.T) Policy {
	p := systemPolicy(t)
	p.ReadOnly = append(p.ReadOnly, f.ro)
	p.ReadExec = append(p.ReadExec, f.rx)
	p.ReadWrite = append(p.ReadWrite, f.work)
	return p
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// probeScript runs each probe as "name command..." and prints name=ok or
// name=denied for it.
const probeScript = `
probe() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name=ok"; else echo "$name=denied"; fi; }
`

// parseProbes turns name=ok|denied lines into a map.
func parseProbes(out string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && (v == "ok" || v == "denied") {
			m[k] = v
		}
	}
	return m
}

func TestFilesystem(t *testing.T) {
	k := testKernel(t, "host")
	f := newFSFixture(t)
	script := probeScript + fmt.Sprintf(`
work=%q ro=%q rx=%q secret=%q secretdir=%q outside=%q
probe read_etc cat /etc/passwd
probe list_usr ls /usr/bin
probe exec_usr /usr/bin/true
probe write_work sh -c 'echo hi > "$1/out" && test "$(cat "$1/out")" = hi' _ "$work"
probe mkdir_work mkdir "$work/d"
probe rename_within_work mv "$work/out" "$work/sub/out"
probe exec_work sh -c 'printf "#!/bin/sh\nexit 0\n" > "$1/x" && chmod +x "$1/x" && "$1/x"' _ "$work"
probe read_ro cat "$ro/agent.toml"
probe list_ro ls "$ro"
probe write_ro sh -c 'echo x >> "$1/agent.toml"' _ "$ro"
probe create_ro sh -c 'echo x > "$1/new"' _ "$ro"
probe exec_ro "$ro/script"
probe read_secret cat "$secret"
probe list_secretdir ls "$secretdir"
probe write_secretdir sh -c 'echo x > "$1/new"' _ "$secretdir"
probe write_outside sh -c 'echo x > "$1/escape"' _ "$outside"
probe write_readexec sh -c 'echo x > "$1/new"' _ "$rx"
probe symlink_create ln -s "$secret" "$work/leak"
probe symlink_read cat "$work/leak"
probe hardlink_secret ln "$secret" "$work/k"
probe hardlink_ro ln "$ro/agent.toml" "$work/hl"
probe mknod_char mknod "$work/null" c 1 3
echo done
`, f.work, f.ro, f.rx, f.secret, f.secretDir, f.outside)
	r := runConfined(t, f.policy(t), k, "/bin/sh", "-c", script)
	if r.err != nil || !strings.Contains(r.out, "done") {
		t.Fatalf("probe script failed: %v\n%s", r.err, r.out)
	}
	got := parseProbes(r.out)
	want := map[string]string{
		"read_etc": "ok", "list_usr": "ok", "exec_usr": "ok",
		"write_work": "ok", "mkdir_work": "ok", "rename_within_work": "ok", "exec_work": "ok",
		"read_ro": "ok", "list_ro": "ok", "write_ro": "denied", "create_ro": "denied", "exec_ro": "denied",
		"read_secret": "denied", "list_secretdir": "denied", "write_secretdir": "denied",
		"write_outside": "denied", "write_readexec": "denied",
		"symlink_create": "ok", "symlink_read": "denied",
		"hardlink_secret": "denied", "hardlink_ro": "denied",
		"mknod_char": "denied",
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: got %q, want %q", name, got[name], w)
		}
	}
	if t.Failed() {
		t.Logf("child output:\n%s", r.out)
	}

	// The effects, seen from the (unconfined) parent.
	if b, err := os.ReadFile(f.secret); err != nil || string(b) != "canary-secret\n" {
		t.Errorf("parent cannot read the secret after the run (parent confined?): %v", err)
	}
	if b, _ := os.ReadFile(f.roFile); string(b) != "read-only\n" {
		t.Errorf("read-only file changed: %q", b)
	}
	for _, p := range []string{filepath.Join(f.outside, "escape"), filepath.Join(f.secretDir, "new"), filepath.Join(f.rx, "new"), filepath.Join(f.work, "k"), filepath.Join(f.work, "hl")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists: the child wrote outside its grants", p)
		}
	}
}

func TestHardLinkNeedsSameFilesystem(t *testing.T) {
	// The hard link probes above prove something only if a link between
	// the two directories would otherwise work: check that without a
	// sandbox.
	a, b := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(a, "f"), nil, 0o644))
	if err := os.Link(filepath.Join(a, "f"), filepath.Join(b, "f")); err != nil {
		t.Skipf("skipping: hard links between temp dirs fail even without a sandbox (%v), so TestFilesystem's hard link probes are vacuous here", err)
	}
}

// In the fresh process of TestParentStaysUnconfined the main goroutine
// keeps the process's first thread: a goroutine that exits locked ends its
// thread, except on that first thread, which the runtime cannot end and
// parks for good instead (with its no_new_privs), so the confining
// goroutine must never run there.
func init() {
	if os.Getenv("AGENT_SANDBOX_LANDLOCK_FRESH") == "1" {
		runtime.LockOSThread()
	}
}

// TestParentStaysUnconfined runs in a fresh test process of its own: in
// the shared one, a thread an earlier test confined may not have ended
// yet, and confined threads could not be told apart.
func TestParentStaysUnconfined(t *testing.T) {
	if os.Getenv("AGENT_SANDBOX_LANDLOCK_FRESH") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestParentStaysUnconfined$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "AGENT_SANDBOX_LANDLOCK_FRESH=1")
		out, err := cmd.CombinedOutput()
		switch {
		case strings.Contains(string(out), "--- SKIP: TestParentStaysUnconfined"):
			t.Skipf("in a fresh process: %s", out)
		case err != nil || !strings.Contains(string(out), "--- PASS: TestParentStaysUnconfined"):
			t.Fatalf("in a fresh process (%v):\n%s", err, out)
		}
		return
	}
	k := testKernel(t, "host")
	f := newFSFixture(t)
	if nnp, total := nnpThreads(t); nnp != 0 {
		t.Fatalf("%d of %d threads of a fresh test process already have no_new_privs", nnp, total)
	}
	cmd := exec.Command("/bin/sh", "-c", "read line; exit 0")
	stdin, err := cmd.StdinPipe()
	must(t, err)
	proc, err := start(cmd, f.policy(t), Seccomp{}, k)
	if err != nil {
		t.Fatal(err)
	}

	// While the child runs, exactly one thread (the one that started it)
	// carries no_new_privs.
	if nnp, total := nnpThreads(t); nnp != 1 {
		t.Errorf("while the child runs, %d of %d threads have no_new_privs, want exactly 1", nnp, total)
	}
	// Other threads read the secret and fork unconfined children.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 32 {
		wg.Go(func() {
			if _, err := os.ReadFile(f.secret); err != nil {
				errs <- err
			}
		})
	}
	wg.Go(func() {
		if out, err := exec.Command("/bin/cat", f.secret).CombinedOutput(); err != nil {
			errs <- fmt.Errorf("unconfined cat: %v: %s", err, out)
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("parent confined while the child runs: %v", err)
	}

	stdin.Close()
	if err := proc.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	// The confining thread ends with its goroutine.
	deadline := time.Now().Add(5 * time.Second)
	for {
		nnp, total := nnpThreads(t)
		if nnp == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after Wait, %d of %d threads still have no_new_privs", nnp, total)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.ReadFile(f.secret); err != nil {
		t.Errorf("parent cannot read the secret after the run: %v", err)
	}
}

func TestNoNewPrivs(t *testing.T) {
	for _, mode := range []string{"host", "netns"} {
		t.Run(mode, func(t *testing.T) {
			k := testKernel(t, mode)
			p := systemPolicy(t)
			p.ReadOnly = []string{"/proc"}
			if mode == "netns" {
				p.Network = NetBlocked
			}
			r := runConfined(t, p, k, "/bin/grep", "-E", "^(NoNewPrivs|TracerPid):", "/proc/self/status")
			if r.err != nil {
				t.Fatalf("%v: %s", r.err, r.out)
			}
			if !regexpMatch(`NoNewPrivs:\s+1\b`, r.out) {
				t.Errorf("child does not have no_new_privs:\n%s", r.out)
			}
			if !regexpMatch(`TracerPid:\s+0\b`, r.out) {
				t.Errorf("child is still traced:\n%s", r.out)
			}
		})
	}
}

func TestNoCapabilities(t *testing.T) {
	for _, mode := range []string{"host", "netns"} {
		t.Run(mode, func(t *testing.T) {
			k := testKernel(t, mode)
			p := systemPolicy(t)
			p.ReadOnly = []string{"/proc"}
			if mode == "netns" {
				p.Network = NetBlocked
			}
			// sh execs grep: the second execve must not grant
			// capabilities either (for a root caller, once uid 0 is
			// mapped in the namespace).
			r := runConfined(t, p, k, "/bin/sh", "-c", "grep -E '^Cap(Inh|Prm|Eff|Amb):' /proc/self/status")
			if r.err != nil {
				t.Fatalf("%v: %s", r.err, r.out)
			}
			lines := strings.Fields(r.out)
			if len(lines) != 8 {
				t.Fatalf("unexpected output:\n%s", r.out)
			}
			for i := 0; i < len(lines); i += 2 {
				if strings.Trim(lines[i+1], "0") != "" {
					t.Errorf("child (caller euid %d) has capabilities: %s %s", os.Geteuid(), lines[i], lines[i+1])
				}
			}
		})
	}
}

func TestUserNamespaceMapsCallerIDs(t *testing.T) {
	k := testKernel(t, "netns")
	p := systemPolicy(t)
	p.Network = NetBlocked
	r := runConfined(t, p, k, "/bin/sh", "-c", "echo $(id -u) $(id -g)")
	if r.err != nil {
		t.Fatalf("%v: %s", r.err, r.out)
	}
	want := fmt.Sprintf("%d %d", os.Geteuid(), os.Getegid())
	if got := strings.TrimSpace(r.out); got != want {
		t.Errorf("child sees uid/gid %q, want the caller's %q", got, want)
	}
	if !r.proc.Enforcement.NetNamespace {
		t.Errorf("Enforcement.NetNamespace = false in netns mode")
	}
}

func TestExitStatus(t *testing.T) {
	for _, mode := range []string{"host", "netns"} {
		t.Run(mode, func(t *testing.T) {
			k := testKernel(t, mode)
			p := systemPolicy(t)
			if mode == "netns" {
				p.Network = NetBlocked
			}
			r := runConfined(t, p, k, "/bin/sh", "-c", "exit 7")
			if got := exitCode(r.err); got != 7 {
				t.Errorf("exit code %d (err %v), want 7", got, r.err)
			}
			r = runConfined(t, p, k, "/bin/sh", "-c", "kill -KILL $$")
			var ee *exec.ExitError
			if !errors.As(r.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Errorf("child killed by SIGKILL: Wait returned %v", r.err)
			}
		})
	}
}

func TestExecOutsideGrantsFails(t *testing.T) {
	k := testKernel(t, "host")
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	must(t, os.WriteFile(prog, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	cmd := exec.Command(prog)
	_, err := start(cmd, systemPolicy(t), Seccomp{}, k)
	if err == nil {
		t.Fatal("Start of a program outside every grant succeeded")
	}
	if !strings.Contains(err.Error(), "ReadExec") {
		t.Errorf("error does not tell what to do: %v", err)
	}
}

func TestMissingPathsAreSkipped(t *testing.T) {
	k := testKernel(t, "host")
	missing := filepath.Join(t.TempDir(), "does-not-exist")
	p := systemPolicy(t)
	p.ReadWrite = append(p.ReadWrite, missing)
	p.ReadExec = append(p.ReadExec, "/nonexistent-landlock-test/bin")
	r := runConfined(t, p, k, "/bin/true")
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, want := range []string{missing, "/nonexistent-landlock-test/bin"} {
		if !slices.Contains(r.proc.Enforcement.Skipped, want) {
			t.Errorf("Skipped = %q, want it to contain %s", r.proc.Enforcement.Skipped, want)
		}
	}
	e, err := Plan(p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(e.Skipped, missing) {
		t.Errorf("Plan's Skipped = %q, want it to contain %s", e.Skipped, missing)
	}
}

func TestRelativePathRefused(t *testing.T) {
	p := systemPolicy(t)
	p.ReadWrite = append(p.ReadWrite, "work")
	_, err := Start(exec.Command("/bin/true"), p)
	if err == nil || !strings.Contains(err.Error(), `"work" is not absolute`) {
		t.Errorf("Start with a relative path: %v", err)
	}
}

// TestOlderABIRulesets builds the ruleset for every ABI up to the
// kernel's, as an older kernel would get it, and checks that it loads
// and confines.
func TestOlderABIRulesets(t *testing.T) {
	host := testKernel(t, "host")
	f := newFSFixture(t)
	for abi := 1; abi <= min(host.abi, maxKnownABI); abi++ {
		t.Run(fmt.Sprintf("ABI%d", abi), func(t *testing.T) {
			k := host
			k.abi = abi
			script := probeScript + fmt.Sprintf(`
probe read_etc cat /etc/passwd
probe write_work sh -c 'echo hi > "$1/out"' _ %q
probe read_secret cat %q
`, f.work, f.secret)
			r := runConfined(t, f.policy(t), k, "/bin/sh", "-c", script)
			got := parseProbes(r.out)
			if r.err != nil || got["read_etc"] != "ok" || got["write_work"] != "ok" || got["read_secret"] != "denied" {
				t.Errorf("ABI %d ruleset: %v %v\n%s", abi, got, r.err, r.out)
			}
			if r.proc.Enforcement.ABI != abi {
				t.Errorf("Enforcement.ABI = %d, want %d", r.proc.Enforcement.ABI, abi)
			}
		})
	}
}

// tcpListener accepts and counts connections on 127.0.0.1.
type tcpListener struct {
	net.Listener
	mu    sync.Mutex
	count int
}

func listenTCP(t *testing.T) *tcpListener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	tl := &tcpListener{Listener: l}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			tl.mu.Lock()
			tl.count++
			tl.mu.Unlock()
			c.Close()
		}
	}()
	return tl
}

func (l *tcpListener) accepted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count
}

func (l *tcpListener) port() uint16 { return uint16(l.Addr().(*net.TCPAddr).Port) }

// udpReceived reports whether any datagram reaches c within d.
func udpReceived(c net.PacketConn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 64)
	_, _, err := c.ReadFrom(buf)
	return err == nil
}

func TestNetwork(t *testing.T) {
	exe := testExe(t)
	for _, mode := range []string{"open", "netns", "tcp"} {
		t.Run(mode, func(t *testing.T) {
			var k kernel
			p := systemPolicy(t)
			if mode == "open" {
				k = testKernel(t, "host")
			} else {
				k = testKernel(t, mode)
				p.Network = NetBlocked
			}
			tcp := listenTCP(t)
			udp, err := net.ListenPacket("udp", "127.0.0.1:0")
			must(t, err)
			defer udp.Close()

			// Controls: the probes work without a sandbox.
			if out, err := runBare(t, exe, "connect-tcp", tcp.Addr().String()); err != nil {
				t.Fatalf("control: TCP probe fails without a sandbox: %v %s", err, out)
			}
			if out, err := runBare(t, exe, "send-udp", udp.LocalAddr().String()); err != nil || !udpReceived(udp, 2*time.Second) {
				t.Fatalf("control: UDP probe fails without a sandbox: %v %s", err, out)
			}
			for udpReceived(udp, 200*time.Millisecond) {
				// Drain the control's other datagrams.
			}
			before := tcp.accepted()

			r := runConfined(t, p, k, exe, "connect-tcp", tcp.Addr().String())
			e := r.proc.Enforcement
			switch mode {
			case "open":
				if r.err != nil {
					t.Errorf("NetOpen: TCP connect failed: %v %s", r.err, r.out)
				}
			case "netns":
				if !e.NetNamespace {
					t.Fatalf("Enforcement.NetNamespace = false")
				}
				if r.err == nil || tcp.accepted() != before {
					t.Errorf("netns: TCP connect to the host's loopback worked: %s", r.out)
				}
			case "tcp":
				if e.NetNamespace || !e.TCPRules {
					t.Fatalf("Enforcement = %+v, want TCP rules without a namespace", e)
				}
				if r.err == nil || tcp.accepted() != before || !strings.Contains(r.out, "permission denied") {
					t.Errorf("TCP rules: connect was not denied with EACCES: %v %s", r.err, r.out)
				}
			}

			r = runConfined(t, p, k, exe, "send-udp", udp.LocalAddr().String())
			got := udpReceived(udp, 500*time.Millisecond)
			switch {
			case mode == "open" && !got:
				t.Errorf("NetOpen: UDP datagram did not arrive: %v %s", r.err, r.out)
			case mode == "netns" && got:
				t.Errorf("netns: a UDP datagram reached the host (%s)", r.out)
			case mode == "tcp" && e.UDPRules && got:
				t.Errorf("UDP rules: a UDP datagram reached the host (%s)", r.out)
			case mode == "tcp" && !e.UDPRules:
				if !slices.ContainsFunc(e.Warnings, func(w string) bool { return strings.HasPrefix(w, "UDP (DNS included) is not confined") }) {
					t.Errorf("no UDP warning in TCP rules mode: %q", e.Warnings)
				}
				t.Logf("UDP is not confined in TCP rules mode on ABI %d (datagram arrived: %v), as warned", e.ABI, got)
			}
		})
	}
}

func TestAllowTCPConnect(t *testing.T) {
	exe := testExe(t)
	k := testKernel(t, "tcp")
	allowed, other := listenTCP(t), listenTCP(t)
	p := systemPolicy(t)
	p.Network = NetBlocked
	p.AllowTCPConnect = []uint16{allowed.port()}
	if r := runConfined(t, p, k, exe, "connect-tcp", allowed.Addr().String()); r.err != nil {
		t.Errorf("connect to the allowed port %d failed: %v %s", allowed.port(), r.err, r.out)
	}
	if r := runConfined(t, p, k, exe, "connect-tcp", other.Addr().String()); r.err == nil {
		t.Errorf("connect to port %d, which is not allowed, worked", other.port())
	}
}

func TestAbstractUnixSocket(t *testing.T) {
	exe := testExe(t)
	for _, mode := range []string{"open", "netns", "tcp"} {
		t.Run(mode, func(t *testing.T) {
			p := systemPolicy(t)
			var k kernel
			if mode == "open" {
				k = testKernel(t, "host")
			} else {
				k = testKernel(t, mode)
				p.Network = NetBlocked
			}
			if mode != "netns" && k.abi < abiScope {
				t.Skipf("skipping: abstract Unix socket scoping needs Landlock ABI %d, the kernel has ABI %d", abiScope, k.abi)
			}
			name := "agent-sandbox-canary-" + randomHex(t)
			l, err := net.Listen("unix", "@"+name)
			must(t, err)
			defer l.Close()
			var mu sync.Mutex
			accepted := 0
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					mu.Lock()
					accepted++
					mu.Unlock()
					c.Close()
				}
			}()
			if out, err := runBare(t, exe, "connect-abstract", name); err != nil {
				t.Fatalf("control: abstract socket probe fails without a sandbox: %v %s", err, out)
			}
			time.Sleep(50 * time.Millisecond)
			mu.Lock()
			before := accepted
			mu.Unlock()
			r := runConfined(t, p, k, exe, "connect-abstract", name)
			time.Sleep(50 * time.Millisecond)
			mu.Lock()
			after := accepted
			mu.Unlock()
			if r.err == nil || after != before {
				t.Errorf("child connected to the abstract socket @%s: %s", name, r.out)
			}
		})
	}
}

func TestSignalScoping(t *testing.T) {
	for _, mode := range []string{"host", "netns", "tcp"} {
		t.Run(mode, func(t *testing.T) {
			k := testKernel(t, mode)
			if k.abi < abiScope {
				t.Skipf("skipping: signal scoping needs Landlock ABI %d, the kernel has ABI %d", abiScope, k.abi)
			}
			p := systemPolicy(t)
			if mode != "host" {
				p.Network = NetBlocked
			}
			sleep := exec.Command("/bin/sleep", "600")
			must(t, sleep.Start())
			defer func() { sleep.Process.Kill(); sleep.Wait() }()
			pid := strconv.Itoa(sleep.Process.Pid)

			if out, err := runBare(t, "/bin/sh", "-c", "kill -0 "+pid); err != nil {
				t.Fatalf("control: kill -0 fails without a sandbox: %v %s", err, out)
			}
			script := probeScript + fmt.Sprintf(`
probe kill0 kill -0 %[1]s
probe term kill -TERM %[1]s
probe stop kill -STOP %[1]s
probe killself kill -0 $$
`, pid)
			r := runConfined(t, p, k, "/bin/sh", "-c", script)
			got := parseProbes(r.out)
			for _, name := range []string{"kill0", "term", "stop"} {
				if got[name] != "denied" {
					t.Errorf("%s: got %q, want denied", name, got[name])
				}
			}
			if got["killself"] != "ok" {
				t.Errorf("the child cannot signal itself: %q", got["killself"])
			}
			if !processAlive(sleep.Process.Pid) {
				t.Errorf("the sleep process outside the sandbox was killed")
			}
			if b, _ := os.ReadFile("/proc/" + pid + "/stat"); strings.Contains(string(b), ") T ") {
				t.Errorf("the sleep process outside the sandbox was stopped")
			}
		})
	}
}

func TestUserNamespacesAvailableMatchesProbe(t *testing.T) {
	ok, why := probeUserNamespaces()
	if ok != UserNamespacesAvailable() {
		t.Fatal("UserNamespacesAvailable disagrees with the cached probe")
	}
	if !ok && why == "" {
		t.Error("no reason given for unavailable user namespaces")
	}
	t.Logf("user namespaces available: %v %s", ok, why)
}

func randomHex(t *testing.T) string {
	b := make([]byte, 8)
	_, err := rand.Read(b)
	must(t, err)
	return hex.EncodeToString(b)
}

// TestTerminal checks that a ReadWrite /dev/tty is usable as a terminal
// (ioctl_dev on ABI 5+) and that the caller's session settings survive.
func TestTerminal(t *testing.T) {
	k := testKernel(t, "host")
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("skipping: cannot open a pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	must(t, pty.Setsize(ptmx, &pty.Winsize{Rows: 33, Cols: 77}))
	go io.Copy(io.Discard, ptmx)

	var out strings.Builder
	cmd := exec.Command("/bin/sh", "-c", "stty size < /dev/tty > \"$1\"", "_", "/dev/stderr")
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Stdin, cmd.Stdout = tty, tty
	cmd.Stderr = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	p := systemPolicy(t)
	p.ReadWrite = append(p.ReadWrite, "/dev/tty")
	proc, err := start(cmd, p, Seccomp{}, k)
	tty.Close()
	if err != nil {
		t.Fatal(err)
	}
	err = proc.Wait()
	if got := strings.TrimSpace(out.String()); err != nil || got != "33 77" {
		t.Errorf("stty size on /dev/tty: %q, %v (want \"33 77\")", got, err)
	}
}

// TestTerminalInjection: TIOCSTI into the controlling terminal works
// unconfined (control) and fails with EPERM in the sandbox, whatever
// dev.tty.legacy_tiocsti says (threat class 17).
func TestTerminalInjection(t *testing.T) {
	k := testKernel(t, "host")
	run := func(confined bool) (string, error) {
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Skipf("skipping: cannot open a pseudo-terminal: %v", err)
		}
		defer ptmx.Close()
		var out strings.Builder
		cmd := exec.Command(testExe(t), "tiocsti", "x")
		cmd.Env = []string{helperEnv + "=1"}
		cmd.Stdin, cmd.Stderr = tty, &out
		cmd.Stdout = &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		if !confined {
			err = cmd.Run()
			tty.Close()
			return out.String(), err
		}
		p := systemPolicy(t)
		proc, err := start(cmd, p, Seccomp{}, k)
		tty.Close()
		if err != nil {
			t.Fatal(err)
		}
		err = proc.Wait()
		return out.String(), err
	}
	out, err := run(false)
	if err != nil {
		if strings.Contains(out, "operation not permitted") || strings.Contains(out, "EPERM") {
			t.Skipf("skipping: TIOCSTI is disabled on this host (dev.tty.legacy_tiocsti=0), so the control cannot succeed: %s", out)
		}
		t.Fatalf("control (unconfined) TIOCSTI failed: %s %v", out, err)
	}
	out, err = run(true)
	if err == nil || !strings.Contains(out, "operation not permitted") {
		t.Fatalf("confined TIOCSTI: %q, %v; want EPERM", out, err)
	}
}

// TestTruncateByPathBelowABI3: Landlock mediates truncate(2) by path only
// from ABI 3, so on an older kernel the seccomp filter refuses it (EPERM):
// the agent could otherwise empty any file its user owns outside its
// grants (found by the kernel matrix, e2e/kernels, on Debian 12's 6.1).
// The rules are built for ABI 2 on this kernel (they take exactly an ABI 2
// kernel's branches); the control at the host's ABI shows Landlock's own
// refusal (EACCES), and unconfined the probe truncates.
func TestTruncateByPathBelowABI3(t *testing.T) {
	host := testKernel(t, "host")
	if host.abi < abiTruncate {
		t.Skipf("skipping: the control needs Landlock ABI %d (truncate), the kernel has ABI %d", abiTruncate, host.abi)
	}
	victim := filepath.Join(t.TempDir(), "notes")
	probe := func(k *kernel) string {
		must(t, os.WriteFile(victim, []byte("the user's notes\n"), 0o644))
		cmd := exec.Command(testExe(t), "truncate", victim)
		cmd.Env = []string{helperEnv + "=1"}
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if k == nil {
			_ = cmd.Run()
			return out.String()
		}
		proc, err := start(cmd, systemPolicy(t), Seccomp{}, *k)
		if err != nil {
			t.Fatal(err)
		}
		_ = proc.Wait()
		return out.String()
	}
	if out := probe(nil); !strings.Contains(out, "ok") {
		t.Fatalf("control (unconfined): %q; want the file truncated", out)
	}
	if out := probe(&host); !strings.Contains(out, "permission denied") {
		t.Errorf("ABI %d: %q; want Landlock's EACCES", host.abi, out)
	}
	abi2 := host
	abi2.abi = abiRefer
	if out := probe(&abi2); !strings.Contains(out, "operation not permitted") {
		t.Errorf("ABI 2: %q; want seccomp's EPERM", out)
	}
	if b, _ := os.ReadFile(victim); len(b) == 0 {
		t.Errorf("the file was truncated")
	}
}

// TestFscryptRefused: the ioctls that make a directory encrypted and add
// a key fail with EPERM in the sandbox, and with something else outside
// (the control: EOPNOTSUPP where the filesystem has no encryption, as on
// the machines here, where the attack itself cannot be run).
func TestFscryptRefused(t *testing.T) {
	k := testKernel(t, "host")
	dir := t.TempDir()
	probe := func(confined bool) string {
		cmd := exec.Command(testExe(t), "fscrypt", dir)
		cmd.Env = []string{helperEnv + "=1"}
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if !confined {
			_ = cmd.Run()
			return out.String()
		}
		p := systemPolicy(t)
		p.ReadWrite = append(p.ReadWrite, dir)
		proc, err := start(cmd, p, Seccomp{}, k)
		if err != nil {
			t.Fatal(err)
		}
		_ = proc.Wait()
		return out.String()
	}
	const both = "set-policy: operation not permitted; add-key: operation not permitted"
	if out := probe(false); strings.Contains(out, both) || !strings.Contains(out, "set-policy") {
		t.Fatalf("control (unconfined): %q; want another error than EPERM", out)
	} else {
		t.Logf("control (unconfined): %s", out)
	}
	if out := probe(true); !strings.Contains(out, both) {
		t.Errorf("confined: %q; want EPERM for both", out)
	}
}

func TestTerminalFilterShape(t *testing.T) {
	all := Seccomp{DenyKeyrings: true, DenyUnixSockets: true, DenyUserns: true, DenyHostIPC: true, NotifyConnect: true}
	for arch, a := range seccompArches {
		for _, f := range [][]unix.SockFilter{seccompFilter(a, all), seccompFilter(a, Seccomp{DenyUserns: true})} {
			for i, ins := range f {
				if ins.Code&0x07 == 0x05 && (i+1+int(ins.Jt) >= len(f) || i+1+int(ins.Jf) >= len(f)) {
					t.Errorf("%s: instruction %d jumps past the end", arch, i)
				}
			}
			if f[len(f)-1].K != 0x7fff0000 {
				t.Errorf("%s: the filter does not end by allowing", arch)
			}
		}
		f := terminalFilter(a)
		for i, ins := range f {
			if ins.Code&0x07 == 0x05 && i+1+int(ins.Jt) >= len(f) || i+1+int(ins.Jf) > len(f) {
				t.Errorf("%s: instruction %d jumps past the end", arch, i)
			}
		}
		if f[len(f)-1].K != 0x7fff0000 {
			t.Errorf("%s: the filter does not end by allowing", arch)
		}
	}
}

// TestWriteOnly: a WriteOnly directory takes new and changed files but
// cannot be read or listed; a WriteOnly file can be appended to, not read.
func TestWriteOnly(t *testing.T) {
	k := testKernel(t, "host")
	dir := t.TempDir()
	wo := dir + "/wo"
	must(t, os.Mkdir(wo, 0o755))
	must(t, os.WriteFile(wo+"/old", []byte("canary-old\n"), 0o644))
	file := dir + "/log"
	must(t, os.WriteFile(file, []byte("canary-log\n"), 0o644))
	p := systemPolicy(t)
	p.WriteOnly = []string{wo, file}
	for _, tc := range []struct {
		script string
		ok     bool
	}{
		{`echo new > "$1/new"`, true},
		{`echo more >> "$1/old"`, true},
		{`echo line >> "$2"`, true},
		{`cat "$1/old"`, false},
		{`ls "$1"`, false},
		{`cat "$2"`, false},
	} {
		r := runConfined(t, p, k, "/bin/sh", "-c", tc.script, "_", wo, file)
		if (r.err == nil) != tc.ok || strings.Contains(r.out, "canary") {
			t.Errorf("%s: err=%v out=%q, want success=%v and no canary", tc.script, r.err, r.out, tc.ok)
		}
	}
}
