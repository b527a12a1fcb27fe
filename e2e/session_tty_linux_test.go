//go:build linux

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ttyRun is `agent-sandbox exec ...` started at a terminal of the test's
// own (a pty pair: the test holds the master, exec's stdio is the slave,
// its controlling terminal).
type ttyRun struct {
	master, slave *os.File
	cmd           *exec.Cmd
	mu            sync.Mutex
	out           strings.Builder
	before        *unix.Termios
}

// startAtTTY starts bin with args at a fresh terminal of rows x cols.
func startAtTTY(t *testing.T, bin string, env []string, dir string, rows, cols uint16, args ...string) *ttyRun {
	t.Helper()
	master, slave := openPty(t)
	if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		t.Fatal(err)
	}
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	r := &ttyRun{master: master, slave: slave, before: before}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Env, r.cmd.Dir = append(env, "TERM=xterm"), dir
	r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = slave, slave, slave
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			_ = r.cmd.Wait()
		}
	})
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			r.mu.Lock()
			r.out.Write(b[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return r
}

// output is what the terminal showed so far, without carriage returns.
func (r *ttyRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.ReplaceAll(r.out.String(), "\r", "")
}

// waitFor waits up to 30 s for the terminal to show want.
func (r *ttyRun) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(r.output(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q: %q", want, r.output())
		}
		time.Sleep(20 * time.Millisecond) // polling a terminal's output: there is no event to await
	}
}

// wait waits for exec's end and returns its exit status and the
// terminal's output; it checks that the terminal's modes are as before.
func (r *ttyRun) wait(t *testing.T) (int, string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		_ = r.cmd.Process.Kill()
		t.Fatalf("exec did not end within 60 s: %q", r.output())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	after, terr := unix.IoctlGetTermios(int(r.slave.Fd()), unix.TCGETS)
	if terr != nil {
		t.Fatal(terr)
	}
	if after.Iflag != r.before.Iflag || after.Oflag != r.before.Oflag || after.Lflag != r.before.Lflag || after.Cflag != r.before.Cflag || after.Cc != r.before.Cc {
		t.Errorf("exec left the caller's terminal changed: %+v, was %+v", after, r.before)
	}
	// What exec relayed before it ended reaches the master shortly
	// after (the test's own read).
	time.Sleep(100 * time.Millisecond)
	return code, r.output()
}

// TestSessionExecTTY: at a terminal, `agent-sandbox exec` gives the
// command a terminal of its own, a pty of the session's (ttyname finds it
// in the sandbox), sized as the caller's and resized with it; Ctrl-C
// reaches the command through it; the caller's terminal modes are
// restored; the caller's terminal never enters the sandbox (the command's
// descriptors are the session's pty); -T gives no terminal, -t one
// without a caller's terminal, and exec with pipes passes them as they
// are.
func TestSessionExecTTY(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	bin := buildAgentSandbox(t)
	home := t.TempDir()
	work := homeTempDir(t, "session-tty")
	env := sessionEnv(home)
	s := startSession(t, bin, nil, env, work)
	pts := regexp.MustCompile(`(?m)^/\.agent-sandbox-pts/[0-9]+$`) // exec's own instance (view.ExecPts)

	t.Run("tty", func(t *testing.T) {
		r := startAtTTY(t, bin, env, work, 33, 111, "exec", s.id, "--", "sh", "-c", "tty; readlink /proc/self/fd/0 /proc/self/fd/1 /proc/self/fd/2")
		code, out := r.wait(t)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 4 || !pts.MatchString(lines[0]) {
			t.Fatalf("exec -- tty at a terminal: exit %d, %q: want a name of exec's pty instance", code, out)
		}
		for _, l := range lines[1:] {
			if l != lines[0] {
				t.Errorf("the command's stdio %q is not its own terminal %s (the caller's terminal entered the sandbox?): %q", l, lines[0], out)
			}
		}
	})

	t.Run("size", func(t *testing.T) {
		script := `stty size; echo ready; i=0; while [ "$(stty size)" != "40 120" ]; do i=$((i+1)); [ $i -gt 600 ] && exit 5; sleep 0.05; done; echo resized $(stty size)`
		r := startAtTTY(t, bin, env, work, 33, 111, "exec", s.id, "--", "sh", "-c", script)
		r.waitFor(t, "ready")
		if !strings.Contains(r.output(), "33 111\n") {
			t.Errorf("the command's terminal is not the caller's size (33 111): %q", r.output())
		}
		if err := unix.IoctlSetWinsize(int(r.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120}); err != nil {
			t.Fatal(err)
		}
		if code, out := r.wait(t); code != 0 || !strings.Contains(out, "resized 40 120") {
			t.Errorf("the caller's resize did not reach the command's terminal: exit %d, %q", code, out)
		}
	})

	t.Run("ctrl-c", func(t *testing.T) {
		script := `trap 'echo got-int; exit 3' INT; echo ready; sleep 30 & wait`
		r := startAtTTY(t, bin, env, work, 24, 80, "exec", s.id, "--", "sh", "-c", script)
		r.waitFor(t, "ready")
		if _, err := r.master.Write([]byte{3}); err != nil {
			t.Fatal(err)
		}
		if code, out := r.wait(t); code != 3 || !strings.Contains(out, "got-int") {
			t.Errorf("Ctrl-C at the caller's terminal: exit %d, %q; want the command's INT trap (exit 3)", code, out)
		}
	})

	t.Run("no-tty", func(t *testing.T) {
		r := startAtTTY(t, bin, env, work, 24, 80, "exec", "-T", s.id, "--", "tty")
		if code, out := r.wait(t); code != 1 || pts.MatchString(out) || !strings.Contains(out, "not a tty") {
			t.Errorf("exec -T -- tty: exit %d, %q; want no terminal (not a tty, exit 1)", code, out)
		}
	})

	t.Run("pipes", func(t *testing.T) {
		if out, code := execIn(t, bin, nil, env, work, s.id, "tty"); code != 1 || !strings.Contains(out, "not a tty") {
			t.Errorf("exec with pipes -- tty: exit %d, %q; want not a tty", code, out)
		}
		cmd := exec.Command(bin, "exec", "-t", s.id, "--", "sh", "-c", "tty; stty size")
		cmd.Env, cmd.Dir = env, work
		out, err := cmd.CombinedOutput()
		o := strings.ReplaceAll(string(out), "\r", "")
		if err != nil || !pts.MatchString(o) || !strings.Contains(o, "24 80") {
			t.Errorf("exec -t with pipes: %v, %q; want a name of exec's pty instance and 24 80", err, o)
		}
	})
	_ = s.end(t)
}

// TestSessionExecSocket: the view's init serves exec on the session's
// exec socket itself (no hop through the supervisor): the socket is
// 0600 in the 0700 session directory, refuses a request without the
// token and any request but exec, is out of reach of an exec'd command
// (by path, through /proc, by an abstract name), a command started
// through it counts in ps until it ends, and without it exec goes
// through the control socket as before.
func TestSessionExecSocket(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3 for the socket probes")
	}
	bin := buildAgentSandbox(t)
	home := t.TempDir()
	work := homeTempDir(t, "session-execsock")
	env := sessionEnv(home)
	s := startSession(t, bin, nil, env, work)
	dir := filepath.Join(home, ".local", "state", "agent-sandbox", "sessions", s.id)
	sock := filepath.Join(dir, "exec")
	checkControlSocket(t, sock)
	checkForgedRequest(t, sock)
	tok, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"v":1,"token":"` + string(tok) + `","op":"info"}`)
	_, _ = c.Write(append([]byte{0, 0, 0, byte(len(body))}, body...))
	resp, _ := io.ReadAll(c)
	c.Close()
	if !strings.Contains(string(resp), "control socket") {
		t.Errorf("info on the exec socket: %q, want a refusal naming the control socket", resp)
	}

	probe := fmt.Sprintf(`python3 - <<'EOF'
import socket, glob
got = []
for path in [%q] + glob.glob("/proc/*/root" + %q):
    try:
        s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(path); got.append(path)
    except OSError:
        pass
try:
    s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect("\0" + %q); got.append("abstract")
except OSError:
    pass
print("GOT", got)
EOF`, sock, sock, sock)
	if out, code := execIn(t, bin, nil, env, work, s.id, probe); code != 0 || !strings.Contains(out, "GOT []") {
		t.Errorf("an exec'd command reached the exec socket (exit %d): %s", code, out)
	}

	// Counted while it runs.
	x := exec.Command(bin, "exec", s.id, "--", "sh", "-c", "echo started; read x; exit 6")
	x.Env, x.Dir = env, work
	xin, err := x.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	xout, err := x.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(xout).ReadString('\n'); line != "started\n" {
		t.Fatalf("the exec'd command did not start: %q", line)
	}
	if l := psJSON(t, bin, nil, env, work); len(l) != 1 || l[0].Processes != 2 {
		t.Errorf("ps while a command started through the exec socket runs: %+v, want 2 processes", l)
	}
	xin.Close()
	if err := x.Wait(); err == nil || x.ProcessState.ExitCode() != 6 {
		t.Errorf("exec's status: %v, want exit 6", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for l := psJSON(t, bin, nil, env, work); len(l) != 1 || l[0].Processes != 1; l = psJSON(t, bin, nil, env, work) {
		if time.Now().After(deadline) {
			t.Fatalf("ps still counts the ended command: %+v", l)
		}
		time.Sleep(20 * time.Millisecond) // the end report reaches the supervisor after exec's status
	}

	// Without the exec socket: through the control socket.
	if err := os.Rename(sock, sock+".away"); err != nil {
		t.Fatal(err)
	}
	if out, code := execIn(t, bin, nil, env, work, s.id, "echo via-control; exit 4"); code != 4 || !strings.Contains(out, "via-control") {
		t.Errorf("exec through the control socket: exit %d, %q", code, out)
	}
	tty := exec.Command(bin, "exec", "-t", s.id, "--", "sh", "-c", "tty; exit 5")
	tty.Env, tty.Dir = env, work
	out, err := tty.CombinedOutput()
	if tty.ProcessState == nil || tty.ProcessState.ExitCode() != 5 || !regexp.MustCompile(`(?m)^/\.agent-sandbox-pts/[0-9]+\r?$`).Match(out) {
		t.Errorf("exec -t through the control socket: %v, %q; want a name of exec's pty instance and exit 5", err, out)
	}
	_ = os.Rename(sock+".away", sock)
	if err := s.end(t); err != nil {
		t.Errorf("the session's run: %v: %s", err, s.out)
	}
}
