//go:build linux

package view

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == InitArg {
		// The test-only switch of Linux 5.10's remount path (see
		// TestViewRemountFallback): read here, in the test binary only.
		forceRemount = os.Getenv(forceRemountEnv) == "1"
		os.Exit(Init())
	}
	os.Exit(m.Run())
}

// testConfig is a small view: the system directories read-only, a
// private /tmp, /dev and /proc, and work read-write.
func testConfig(t *testing.T, work string, script string) Config {
	t.Helper()
	c := Config{Workdir: work, Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}, Network: NetLoopback}
	entries, err := os.ReadDir("/")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p := "/" + e.Name()
		switch e.Name() {
		case "usr", "etc", "lib", "lib64", "bin", "sbin", "opt":
		default:
			continue
		}
		if target, err := os.Readlink(p); err == nil {
			c.Mounts = append(c.Mounts, Mount{Kind: Symlink, Path: p, Target: target})
			continue
		}
		c.Mounts = append(c.Mounts, Mount{Kind: ReadOnly, Path: p})
		c.Landlock.ReadExec = append(c.Landlock.ReadExec, p)
	}
	c.Mounts = append(c.Mounts,
		Mount{Kind: Tmpfs, Path: "/tmp"},
		Mount{Kind: Dir, Path: "/dev"},
		Mount{Kind: ReadWrite, Path: "/dev/null"},
		Mount{Kind: Proc, Path: "/proc"},
		Mount{Kind: ReadWrite, Path: work},
		Mount{Kind: Mask, Path: "/etc/shadow"},
	)
	c.Landlock.ReadOnly = []string{"/proc"}
	c.Landlock.ReadWrite = []string{"/tmp", "/dev/null", work}
	c.Seccomp = landlock.Seccomp{DenyKeyrings: true}
	return c
}

type result struct {
	out  string
	err  error
	code int
}

func runView(t *testing.T, c Config) result {
	t.Helper()
	var out bytes.Buffer
	cmd := &exec.Cmd{Stdout: &out, Stderr: &out}
	p, err := Start(cmd, c)
	var se *SetupError
	if err != nil && !errors.As(err, &se) {
		t.Fatalf("Start: %v", err)
	}
	if err == nil {
		err = p.Wait()
	}
	code := 0
	var ee *ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.Status.ExitStatus()
	case errors.As(err, &se):
		code = se.Code
	case err != nil:
		code = -1
	}
	return result{out.String(), err, code}
}

func TestViewBasics(t *testing.T) {
	work, _ := filepath.EvalSymlinks(t.TempDir())
	secret := filepath.Join(filepath.Dir(work), "secret")
	if err := os.WriteFile(secret, []byte("canary"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `set -e
echo pid=$$
echo hello > ` + work + `/out
test ! -e ` + secret + `
ls /proc | grep -c '^[0-9]' | sed 's/^/procs=/'
cat /proc/self/status | grep -q NoNewPrivs:.*1 && echo nnp
test ! -s /etc/shadow && echo masked
! touch /usr/x 2>/dev/null && echo usr-ro
! touch /newfile 2>/dev/null && echo root-ro
echo tmp > /tmp/x && echo tmp-ok
`
	r := runView(t, testConfig(t, work, script))
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.out)
	}
	for _, want := range []string{"nnp", "masked", "usr-ro", "root-ro", "tmp-ok"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("output lacks %q:\n%s", want, r.out)
		}
	}
	// A private PID namespace: only the sandbox's few processes.
	if i := strings.Index(r.out, "procs="); i < 0 || len(strings.SplitN(r.out[i+6:], "\n", 2)[0]) > 1 {
		t.Errorf("want fewer than 10 processes in /proc:\n%s", r.out)
	}
	if b, err := os.ReadFile(filepath.Join(work, "out")); err != nil || string(b) != "hello\n" {
		t.Errorf("write in the workdir: %q %v", b, err)
	}
}

func TestViewExitStatusAndSurvivors(t *testing.T) {
	work, _ := filepath.EvalSymlinks(t.TempDir())
	r := runView(t, testConfig(t, work, `setsid sh -c 'sleep 600' </dev/null >/dev/null 2>&1 & exit 7`))
	if r.code != 7 {
		t.Fatalf("code %d, want 7 (%v)\n%s", r.code, r.err, r.out)
	}
	r = runView(t, testConfig(t, work, `kill -TERM $$`))
	var ee *ExitError
	if !errors.As(r.err, &ee) || !ee.Status.Signaled() {
		t.Fatalf("want killed by a signal, got %v", r.err)
	}
}

func TestViewMissingCommand(t *testing.T) {
	work, _ := filepath.EvalSymlinks(t.TempDir())
	c := testConfig(t, work, "")
	c.Argv = []string{"/nonexistent/prog"}
	if r := runView(t, c); r.code != 127 {
		t.Fatalf("code %d (%v), want 127", r.code, r.err)
	}
}

func TestViewSymlinkedSourceRefused(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	work := filepath.Join(dir, "work")
	if err := os.Symlink(dir, work); err != nil {
		t.Fatal(err)
	}
	r := runView(t, testConfig(t, work, "true"))
	if r.code != 125 || !strings.Contains(r.err.Error(), "symlink") {
		t.Fatalf("code %d err %v, want 125 naming the symlink", r.code, r.err)
	}
}

func TestViewLoopbackAndProxySocket(t *testing.T) {
	work, _ := filepath.EvalSymlinks(t.TempDir())
	c := testConfig(t, work, `exec 3<>/dev/tcp/127.0.0.1/3128 && printf ping >&3 && head -c4 <&3`)
	c.Argv = []string{"/bin/bash", "-c", c.Argv[2]}
	c.Network = NetProxy
	c.ProxyPort = 3128
	var out bytes.Buffer
	cmd := &exec.Cmd{Stdout: &out, Stderr: &out}
	p, err := Start(cmd, c)
	if err != nil {
		t.Fatal(err)
	}
	l := p.Listener()
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		b := make([]byte, 4)
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Read(b); err == nil && string(b) == "ping" {
			_, _ = conn.Write([]byte("pong"))
		}
		conn.Close()
	}()
	if err := p.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	l.Close()
	if !strings.Contains(out.String(), "pong") {
		t.Fatalf("no answer through the handed-over socket: %q", out.String())
	}
}

// TestViewSkeletonUnderTmpIsReadOnly: a workdir under /tmp is bound into
// the private /tmp; the directories init creates above it are read-only
// (a write there would vanish with the run), while the workdir and the
// rest of /tmp stay writable.
func TestViewSkeletonUnderTmpIsReadOnly(t *testing.T) {
	work, _ := filepath.EvalSymlinks(t.TempDir())
	if !strings.HasPrefix(work, "/tmp/") {
		t.Skipf("the test's temporary directory %s is not under /tmp (set TMPDIR=/tmp)", work)
	}
	parent := filepath.Dir(work)
	r := runView(t, testConfig(t, work, `
touch `+parent+`/planted 2>/dev/null && echo skeleton-writable
touch `+work+`/ok && echo work-writable
touch /tmp/free && echo tmp-writable`))
	if r.code != 0 || strings.Contains(r.out, "skeleton-writable") || !strings.Contains(r.out, "work-writable") || !strings.Contains(r.out, "tmp-writable") {
		t.Fatalf("code %d: %q", r.code, r.out)
	}
}

// TestViewDevpts: the sandbox has its own pty instance: a pty can be
// opened through /dev/ptmx and its peer appears in /dev/pts.
func TestViewDevpts(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs /usr/bin/python3 to open a pty")
	}
	work, _ := filepath.EvalSymlinks(t.TempDir())
	c := testConfig(t, work, `python3 -c 'import os, pty; m, s = pty.openpty(); print(os.ttyname(s))'`)
	c.Mounts = append(c.Mounts, Mount{Kind: Devpts, Path: "/dev/pts"}, Mount{Kind: Symlink, Path: "/dev/ptmx", Target: "pts/ptmx"})
	c.Landlock.ReadWrite = append(c.Landlock.ReadWrite, "/dev/pts")
	r := runView(t, c)
	if r.code != 0 || !strings.HasPrefix(r.out, "/dev/pts/0") {
		t.Fatalf("code %d: %q", r.code, r.out)
	}
}

// TestViewForwardAndInbound: a forwarded port's connections from inside
// reach the parent on 127.0.0.1 and ::1, and the parent reaches a server
// the agent runs on the sandbox's own loopback (listen_port); nothing else
// of the sandbox's loopback is served.
func TestViewForwardAndInbound(t *testing.T) {
	work, _ := filepath.EvalSymlinks(t.TempDir())
	script := `exec 3<>/dev/tcp/127.0.0.1/4711 && printf ping >&3 && head -c4 <&3 && echo
if exec 4<>/dev/tcp/127.0.0.1/4712; then echo unforwarded-open; fi 2>/dev/null
printf served > ` + work + `/answer
# a server on the sandbox's loopback, for the parent to reach
python3 -c 'import socket,sys
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1",4800)); s.listen(1)
open(sys.argv[1]+"/listening","w").close()
c,_=s.accept(); c.sendall(b"inside"); c.close()' ` + work
	c := testConfig(t, work, script)
	c.Argv = []string{"/bin/bash", "-c", script}
	c.ForwardPorts = []int{4711}
	c.Inbound = true
	var out bytes.Buffer
	cmd := &exec.Cmd{Stdout: &out, Stderr: &out}
	p, err := Start(cmd, c)
	if err != nil {
		t.Fatal(err)
	}
	fw := p.Forwards()
	if len(fw) == 0 || fw[0].Port != 4711 || fw[0].IPv6 {
		t.Fatalf("forwards %+v, want 127.0.0.1:4711 first", fw)
	}
	go func() {
		conn, err := fw[0].Accept()
		if err != nil {
			return
		}
		b := make([]byte, 4)
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Read(b); err == nil && string(b) == "ping" {
			_, _ = conn.Write([]byte("pong"))
		}
		conn.Close()
	}()
	got := make(chan string, 1)
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(filepath.Join(work, "listening")); err == nil {
				conn, err := p.DialInside(4800, false)
				if err != nil {
					got <- "dial: " + err.Error()
					return
				}
				b := make([]byte, 6)
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				n, _ := conn.Read(b)
				conn.Close()
				got <- string(b[:n])
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		got <- "the agent's server never listened"
	}()
	if err := p.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, f := range fw {
		f.Close()
	}
	if !strings.Contains(out.String(), "pong") {
		t.Errorf("no answer through the forwarded port: %q", out.String())
	}
	if strings.Contains(out.String(), "unforwarded-open") {
		t.Errorf("a port that is not forwarded was reachable: %q", out.String())
	}
	if g := <-got; g != "inside" {
		t.Errorf("the parent could not reach the agent's server: %q", g)
	}
	if _, err := p.DialInside(4800, false); err == nil {
		t.Errorf("DialInside after the sandbox ended succeeded")
	}
}

// TestMakeTargetCache: mount points made through the per-depth cache of
// parent directories are the same as without it, and a symlink on the way
// is still refused.
func TestMakeTargetCache(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(root+"/a/real", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root+"/a/real", root+"/a/link"); err != nil {
		t.Fatal(err)
	}
	c := &stagedDirs{}
	defer c.release()
	for _, tc := range []struct {
		path string
		dir  bool
		fail bool
	}{
		{"/a/b", true, false},
		{"/a/c", false, false},
		{"/a/b/x/y", true, false},
		{"/a/b/x/z", false, false},
		{"/a/b/w/v", true, false},
		{"/a/link/q/r", true, true}, // through the symlink: refused, cached parents or not
		{"/a/b/x/u", true, false},
	} {
		c.at(tc.path)
		fd, err := makeTarget(c, root, tc.path, tc.dir)
		if tc.fail {
			if err == nil || !strings.Contains(err.Error(), "symlink") {
				t.Errorf("%s: %v, want a refused symlink", tc.path, err)
			}
			if err == nil {
				unix.Close(fd)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		var got unix.Stat_t
		if err := unix.Fstat(fd, &got); err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		var want unix.Stat_t
		if err := unix.Lstat(root+tc.path, &want); err != nil {
			t.Fatalf("%s was not created: %v", tc.path, err)
		}
		if got.Ino != want.Ino || (want.Mode&unix.S_IFMT == unix.S_IFDIR) != tc.dir {
			t.Errorf("%s: descriptor of inode %d, want %d (dir %v)", tc.path, got.Ino, want.Ino, tc.dir)
		}
	}
	if _, err := os.Lstat(root + "/a/real/q"); err == nil {
		t.Errorf("a mount point was made through the symlink")
	}
}

// TestViewForwardLowPort: init can listen on a forwarded port below 1024
// in the sandbox's network namespace even for an ordinary user (it has
// CAP_NET_BIND_SERVICE there), and the agent cannot bind one itself.
func TestViewForwardLowPort(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs /usr/bin/python3 for the agent's bind probe")
	}
	work, _ := filepath.EvalSymlinks(t.TempDir())
	script := `exec 3<>/dev/tcp/127.0.0.1/80 && printf ping >&3 && head -c4 <&3 && echo
python3 -c '
import socket
try:
    socket.socket().bind(("127.0.0.1", 81)); print("agent-bound-81")
except PermissionError:
    print("agent-bind-refused")'`
	c := testConfig(t, work, script)
	c.Argv = []string{"/bin/bash", "-c", script}
	c.ForwardPorts = []int{80}
	var out bytes.Buffer
	p, err := Start(&exec.Cmd{Stdout: &out, Stderr: &out}, c)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		conn, err := p.Forwards()[0].Accept()
		if err != nil {
			return
		}
		b := make([]byte, 4)
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Read(b); err == nil {
			_, _ = conn.Write([]byte("pong"))
		}
		conn.Close()
	}()
	if err := p.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "pong") {
		t.Errorf("no answer through forwarded port 80: %q", out.String())
	}
	if os.Geteuid() != 0 && !strings.Contains(out.String(), "agent-bind-refused") {
		t.Errorf("the agent bound a port below 1024 (it must have no capability): %q", out.String())
	}
}

// A spawned init waits for its Config: what exists when Start sends it is
// in the view (made after the spawn), an aborted init ends without
// running anything, and a Config for another network than the one the
// init was spawned for is refused, the init ended.
// TestInitIdentity: a spawned init has the caller's uid and gid mapped to
// themselves, setgroups denied, and exactly the four ambient capabilities
// it builds the view with, for root too (the maps are written after its
// exec, so a root caller's init does not get all of root's capabilities
// in the namespace).
func TestInitIdentity(t *testing.T) {
	for _, n := range []Network{NetHost, NetLoopback} {
		t.Run(string(n), func(t *testing.T) { testInitIdentity(t, n) })
	}
}

func testInitIdentity(t *testing.T, n Network) {
	p, err := Spawn(&exec.Cmd{}, n)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Abort()
	dir := fmt.Sprintf("/proc/%d/", p.Pid())
	read := func(name string) string {
		b, err := os.ReadFile(dir + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	uid, gid := os.Geteuid(), os.Getegid()
	if got, want := strings.Fields(read("uid_map")), []string{strconv.Itoa(uid), strconv.Itoa(uid), "1"}; !slices.Equal(got, want) {
		t.Errorf("uid_map %q, want %q", got, want)
	}
	if got, want := strings.Fields(read("gid_map")), []string{strconv.Itoa(gid), strconv.Itoa(gid), "1"}; !slices.Equal(got, want) {
		t.Errorf("gid_map %q, want %q", got, want)
	}
	if got := strings.TrimSpace(read("setgroups")); got != "deny" {
		t.Errorf("setgroups %q, want deny", got)
	}
	var want uint64
	for _, c := range []uint{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP, unix.CAP_NET_BIND_SERVICE, unix.CAP_DAC_OVERRIDE, unix.CAP_SYS_RESOURCE} {
		want |= 1 << c
	}
	// Init is past its exec once Spawn returns; its capabilities are
	// those of the exec.
	for _, line := range strings.Split(read("status"), "\n") {
		name, hex, ok := strings.Cut(line, ":\t")
		if !ok || (name != "CapEff" && name != "CapPrm" && name != "CapAmb") {
			continue
		}
		got, err := strconv.ParseUint(hex, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("init's %s is %#x, want %#x (CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SETPCAP, CAP_NET_BIND_SERVICE, CAP_DAC_OVERRIDE, CAP_SYS_RESOURCE)", name, got, want)
		}
	}
}

func TestSpawnThenStart(t *testing.T) {
	work, _ := filepath.EvalSymlinks(t.TempDir())
	var out bytes.Buffer
	p, err := Spawn(&exec.Cmd{Stdout: &out, Stderr: &out}, NetLoopback)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // init waits, its runtime started
	if err := os.WriteFile(filepath.Join(work, "made-after-spawn"), []byte("here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	proc, err := p.Start(testConfig(t, work, "cat made-after-spawn"))
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Wait(); err != nil || out.String() != "here\n" {
		t.Fatalf("run after Spawn: %v, output %q", err, out.String())
	}

	aborted, err := Spawn(&exec.Cmd{Stdout: &out, Stderr: &out}, NetHost)
	if err != nil {
		t.Fatal(err)
	}
	pid := aborted.cmd.Process.Pid
	aborted.Abort()
	if err := unix.Kill(pid, 0); !errors.Is(err, unix.ESRCH) {
		t.Errorf("the aborted init %d is still there (kill 0: %v)", pid, err)
	}

	host, err := Spawn(&exec.Cmd{Stdout: &out, Stderr: &out}, NetHost)
	if err != nil {
		t.Fatal(err)
	}
	pid = host.cmd.Process.Pid
	if _, err := host.Start(testConfig(t, work, "true")); err == nil || !strings.Contains(err.Error(), "another network") {
		t.Errorf("a loopback Config for an init spawned with the host's network: %v", err)
	}
	if err := unix.Kill(pid, 0); !errors.Is(err, unix.ESRCH) {
		t.Errorf("the refused init %d is still there (kill 0: %v)", pid, err)
	}
}

// TestViewReprotect: a read-only bind over a file is detached when the
// host renames another file over it (as git saves its config); the agent
// can then write the new file. Reprotect puts the bind back over what is
// at the path now, after which the agent cannot write it again; a second
// Reprotect of a path still protected changes nothing, and a path that
// is not a guarded mount is refused.
func TestViewReprotect(t *testing.T) {
	work, _ := filepath.EvalSymlinks(t.TempDir())
	cfg := filepath.Join(work, ".git", "config")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	step := func(n int) string { return filepath.Join(work, "step"+strconv.Itoa(n)) }
	// The agent reports whether it can write the config after each step
	// the host announces by creating step<N>.
	script := fmt.Sprintf(`for n in 1 2 3; do
  while [ ! -e %[1]s/step$n ]; do sleep 0.01; done
  if printf 'x\n' >> %[2]s 2>/dev/null; then echo "step$n writable"; else echo "step$n read-only"; fi
  : > %[1]s/done$n
done`, work, cfg)
	c := testConfig(t, work, script)
	c.Mounts = append(c.Mounts,
		Mount{Kind: ReadWrite, Path: filepath.Dir(cfg), Pin: true, Guarded: true},
		Mount{Kind: ReadOnly, Path: cfg, Guarded: true})
	var out bytes.Buffer
	p, err := Start(&exec.Cmd{Stdout: &out, Stderr: &out}, c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Wait()
	waitDone := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(filepath.Join(work, "done"+strconv.Itoa(n))); err == nil {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("the agent did not answer step %d: %s", n, out.String())
	}
	replace := func() {
		t.Helper()
		tmp := cfg + ".lock"
		if err := os.WriteFile(tmp, []byte("[core]\n\tbare = false\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, cfg); err != nil {
			t.Fatal(err)
		}
	}
	// 1: the host replaced the file; nothing put the bind back.
	replace()
	os.WriteFile(step(1), nil, 0o644)
	waitDone(1)
	// 2: replaced again, then protected again.
	replace()
	if err := p.Reprotect(cfg); err != nil {
		t.Fatalf("Reprotect: %v", err)
	}
	if err := p.Reprotect(cfg); err != nil {
		t.Fatalf("Reprotect of a path still protected: %v", err)
	}
	os.WriteFile(step(2), nil, 0o644)
	waitDone(2)
	if err := p.Reprotect(filepath.Join(work, "step1")); err == nil {
		t.Errorf("Reprotect of a path that is no guarded mount succeeded")
	}
	// 3: the pinned directory holding it is still a mount point of its
	// own: Reprotect of it changes nothing.
	if err := p.Reprotect(filepath.Dir(cfg)); err != nil {
		t.Errorf("Reprotect of the pinned directory: %v", err)
	}
	os.WriteFile(step(3), nil, 0o644)
	waitDone(3)
	if err := p.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"step1 writable", "step2 read-only", "step3 read-only"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

// BenchmarkReprotect is the round trip of putting a read-only bind back
// over a file the host replaced: the request to init, its open_tree,
// mount_setattr and move_mount, the answer. It bounds the window in which
// an agent can open the new file for writing (docs/benchmarks.md).
func BenchmarkReprotect(b *testing.B) {
	work, _ := filepath.EvalSymlinks(b.TempDir())
	cfg := filepath.Join(work, "config")
	os.WriteFile(cfg, []byte("x"), 0o644)
	stop := filepath.Join(work, "stop")
	t := &testing.T{}
	c := testConfig(t, work, "while [ ! -e "+stop+" ]; do sleep 0.05; done")
	c.Mounts = append(c.Mounts, Mount{Kind: ReadOnly, Path: cfg, Guarded: true})
	p, err := Start(&exec.Cmd{}, c)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		os.WriteFile(stop, nil, 0o644)
		p.Wait()
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		os.WriteFile(cfg+".new", []byte("y"), 0o644)
		os.Rename(cfg+".new", cfg)
		time.Sleep(time.Millisecond) // the host's rename settles, off the clock
		b.StartTimer()
		if err := p.Reprotect(cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// TestInitDeath: should init die while the agent runs (a host process
// SIGKILLs it), the run ends with 137 (the agent was killed with the
// sandbox), not 125 (which says that nothing ran), and one line says why;
// signals init can ignore (SIGABRT, SIGSEGV sent to it) change nothing.
func TestInitDeath(t *testing.T) {
	work, _ := filepath.EvalSymlinks(t.TempDir())
	var out bytes.Buffer
	cmd := &exec.Cmd{Stdout: &out, Stderr: &out}
	p, err := Start(cmd, testConfig(t, work, `sleep 30`))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	for _, s := range []syscall.Signal{syscall.SIGABRT, syscall.SIGSEGV, syscall.SIGBUS} {
		if err := cmd.Process.Signal(s); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("init died of an ignorable signal: %v\n%s", err, out.String())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err = p.Wait()
	var se *SetupError
	if !errors.As(err, &se) || se.Code != 137 || !strings.Contains(se.Msg, "init ended while the agent ran") {
		t.Errorf("init SIGKILLed: want a SetupError with code 137, got %v", err)
	}
	if strings.Contains(out.String(), "goroutine") {
		t.Errorf("a goroutine dump reached the terminal:\n%s", out.String())
	}
}

// forceRemountEnv, in init's environment (testInitEnv), makes the init a
// test starts take the remount path of kernels without mount_setattr.
const forceRemountEnv = "AGENT_SANDBOX_VIEW_TEST_REMOUNT"

// On a kernel without mount_setattr (Linux 5.10, before 5.12) the view
// sets its flags with mount(2)'s MS_REMOUNT|MS_BIND, mount by mount:
// forced here on this kernel, every bind and each mount below it (the
// host's /sys, whose cgroup and other mounts the user namespace locks
// with their own flags) is read-only, nosuid and nodev, the skeleton and
// root read-only, and a protected file put back during the run is
// read-only again.
func TestViewRemountFallback(t *testing.T) {
	testInitEnv = []string{forceRemountEnv + "=1"}
	defer func() { testInitEnv = nil }()
	work, _ := filepath.EvalSymlinks(t.TempDir())
	c := testConfig(t, work, `awk '{print $5, $6}' /proc/self/mountinfo; echo MARK; grep -c . /proc/self/mountinfo`)
	c.Mounts = append(c.Mounts, Mount{Kind: ReadOnly, Path: "/sys", Optional: true})
	r := runView(t, c)
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.out)
	}
	subs := 0
	for _, line := range strings.Split(strings.SplitN(r.out, "MARK", 2)[0], "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		mp, opts := f[0], ","+f[1]+","
		ro := mp == "/" || mp == "/sys" || strings.HasPrefix(mp, "/sys/") || mp == "/usr" || mp == "/etc"
		if strings.HasPrefix(mp, "/sys/") {
			subs++
		}
		if ro && !strings.Contains(opts, ",ro,") {
			t.Errorf("%s is not read-only in the view: %s", mp, f[1])
		}
		if (ro && mp != "/") && (!strings.Contains(opts, ",nosuid,") || !strings.Contains(opts, ",nodev,")) {
			t.Errorf("%s is not nosuid and nodev in the view: %s", mp, f[1])
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup"); err == nil && subs == 0 {
		t.Errorf("no mount below /sys in the view (the host has /sys/fs/cgroup):\n%s", r.out)
	}
	t.Run("basics", TestViewBasics)
	t.Run("reprotect", TestViewReprotect)
	t.Run("skeleton", TestViewSkeletonUnderTmpIsReadOnly)
}
