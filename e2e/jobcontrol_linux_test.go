package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// TestJobControl: an agent that stops itself (a TUI's Ctrl-Z: in raw mode
// it reads the key and sends itself SIGTSTP) stops agent-sandbox with it,
// so the user's shell gets its prompt back at once; `fg` (SIGCONT to the
// job's process group) resumes the agent, which then finishes. Before,
// the agent's Landlock domain kept its SIGTSTP from reaching agent-sandbox
// and the shell waited until a second Ctrl-Z. Control: --no-sandbox.
func TestJobControl(t *testing.T) {
	skipWithoutLandlock(t)
	for _, sandboxed := range []bool{false, true} {
		r := newBrokerRun(t)
		done := filepath.Join(r.work, "resumed")
		args := []string{"--sandbox-backend", "landlock", r.folder(), "-c", "kill -TSTP $$; echo yes > " + done}
		if !sandboxed {
			args = []string{"--no-sandbox", r.folder(), "-c", "kill -TSTP 0; echo yes > " + done}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, r.bin, args...)
		cmd.Dir = r.work
		cmd.Env = withCover([]string{"HOME=" + r.home, "PATH=" + agentPath()})
		// A job of its own, as a shell runs one.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		stoppedCh := make(chan syscall.WaitStatus, 1)
		go func() {
			var ws syscall.WaitStatus
			for {
				_, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil)
				if err != syscall.EINTR {
					break
				}
			}
			stoppedCh <- ws
		}()
		var ws syscall.WaitStatus
		select {
		case ws = <-stoppedCh:
		case <-time.After(20 * time.Second):
			syscall.Kill(-pid, syscall.SIGKILL)
			<-stoppedCh
			cancel()
			t.Fatalf("sandboxed %v: agent-sandbox did not stop with its agent: the shell would wait for a second Ctrl-Z", sandboxed)
		}
		if !ws.Stopped() {
			cancel()
			t.Fatalf("sandboxed %v: agent-sandbox ended (%v) instead of stopping", sandboxed, ws)
		}
		// The shell's fg.
		syscall.Kill(-pid, syscall.SIGCONT)
		for {
			_, err := syscall.Wait4(pid, &ws, 0, nil)
			if err != syscall.EINTR {
				break
			}
		}
		cancel()
		if !ws.Exited() || ws.ExitStatus() != 0 {
			t.Errorf("sandboxed %v: after fg the run ended with %v", sandboxed, ws)
		}
		if _, err := os.Stat(done); err != nil {
			t.Errorf("sandboxed %v: the agent did not resume: %v", sandboxed, err)
		}
	}
}

// ptyShell is an interactive bash in a pseudo-terminal of its own, with job
// control, as the user's terminal runs one; what the terminal shows is
// collected for the awaits.
type ptyShell struct {
	t    *testing.T
	ptmx *os.File
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  []byte
	more chan struct{} // a send after each read
	mark int           // where the next await looks from
}

func startPtyShell(t *testing.T, dir string, env []string) *ptyShell {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("needs bash for an interactive shell with job control")
	}
	cmd := exec.Command(bash, "--norc", "--noprofile", "-i")
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, env...), "PS1=$ ", "INPUTRC=/dev/null", "HISTFILE=/dev/null")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 120})
	if err != nil {
		t.Skipf("cannot start a shell in a pseudo-terminal: %v", err)
	}
	s := &ptyShell{t: t, ptmx: ptmx, cmd: cmd, more: make(chan struct{}, 1)}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			if n > 0 {
				s.mu.Lock()
				s.out = append(s.out, b[:n]...)
				s.mu.Unlock()
				select {
				case s.more <- struct{}{}:
				default:
				}
			}
			if err != nil {
				close(s.more)
				return
			}
		}
	}()
	t.Cleanup(func() {
		// Every process of the terminal's session: the shell, its jobs,
		// and what they started.
		sid := cmd.Process.Pid
		ptmx.Close()
		killSession(sid)
		_ = cmd.Wait()
	})
	return s
}

// killSession sends SIGKILL to every process whose session is sid.
func killSession(sid int) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := unix.Getsid(pid); err == nil && s == sid {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// send types text into the terminal.
func (s *ptyShell) send(text string) {
	s.t.Helper()
	if _, err := s.ptmx.Write([]byte(text)); err != nil {
		s.t.Fatalf("typing %q: %v", text, err)
	}
}

// await waits until the terminal shows want after the mark, and moves the
// mark past it; it fails the test with what the terminal showed.
func (s *ptyShell) await(want, what string) {
	s.t.Helper()
	s.awaitAny(what, want)
}

// awaitAny waits until the terminal shows one of wants after the mark,
// moves the mark past it and returns its index; it fails the test with
// what the terminal showed.
func (s *ptyShell) awaitAny(what string, wants ...string) int {
	s.t.Helper()
	want := strings.Join(wants, `" or "`)
	deadline := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		found := -1
		for k, w := range wants {
			if i := bytes.Index(s.out[s.mark:], []byte(w)); i >= 0 {
				s.mark += i + len(w)
				found = k
				break
			}
		}
		s.mu.Unlock()
		if found >= 0 {
			return found
		}
		select {
		case _, ok := <-s.more:
			if !ok {
				s.mu.Lock()
				ok = false
				for _, w := range wants {
					ok = ok || bytes.Contains(s.out[s.mark:], []byte(w))
				}
				s.mu.Unlock()
				if !ok {
					s.t.Fatalf("%s: the terminal closed without showing %q:\n%s", what, want, s.tail())
				}
			}
		case <-deadline:
			s.t.Fatalf("%s: the terminal did not show %q in 30 s:\n%s", what, want, s.tail())
		}
	}
}

// awaitWithin is await that gives up after d, returning false (the mark
// stays).
func (s *ptyShell) awaitWithin(d time.Duration, want string) bool {
	deadline := time.After(d)
	for {
		s.mu.Lock()
		i := bytes.Index(s.out[s.mark:], []byte(want))
		if i >= 0 {
			s.mark += i + len(want)
		}
		s.mu.Unlock()
		if i >= 0 {
			return true
		}
		select {
		case _, ok := <-s.more:
			if !ok {
				return false
			}
		case <-deadline:
			return false
		}
	}
}

// settle waits until the terminal has shown nothing new for quiet, at
// most max.
func (s *ptyShell) settle(quiet, max time.Duration) {
	end := time.Now().Add(max)
	s.mu.Lock()
	n := len(s.out)
	s.mu.Unlock()
	last := time.Now()
	for time.Now().Before(end) && time.Since(last) < quiet {
		time.Sleep(20 * time.Millisecond)
		s.mu.Lock()
		if len(s.out) != n {
			n, last = len(s.out), time.Now()
		}
		s.mu.Unlock()
	}
}

// stoppedIn reports whether a process of the terminal's session named
// comm is stopped (state T).
func (s *ptyShell) stoppedIn(comm string) bool {
	sid := s.cmd.Process.Pid
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if got, err := unix.Getsid(pid); err != nil || got != sid {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		st := string(b)
		i, j := strings.IndexByte(st, '('), strings.LastIndexByte(st, ')')
		if i >= 0 && j > i && j+2 < len(st) && st[i+1:j] == comm && st[j+2] == 'T' {
			return true
		}
	}
	return false
}

// suspend types Ctrl-Z until the shell says the job stopped. A Ctrl-Z
// that reaches a program while it resets the terminal (less, on its
// way back from a stop) can be lost, and is typed again; a program that
// stopped while the shell still waits is the failure this test is for.
func (s *ptyShell) suspend(comm, what string) {
	s.t.Helper()
	for try := 0; try < 10; try++ {
		s.send("\x1a")
		if s.awaitWithin(3*time.Second, "Stopped") {
			return
		}
		if s.stoppedIn(comm) {
			s.t.Fatalf("%s: %s stopped, and agent-sandbox with the shell's job did not:\n%s", what, comm, s.tail())
		}
	}
	s.t.Fatalf("%s: Ctrl-Z did not stop the job in 10 tries:\n%s", what, s.tail())
}

// command types line into the shell, which holds the terminal, and waits
// until it shows want. A line typed while readline still sets the
// terminal up can be lost (seen once in a few hundred cycles, without a
// sandbox too): it is typed again, over an emptied line (Ctrl-U).
func (s *ptyShell) command(line, want string, shellPgrp int, what string) {
	s.t.Helper()
	for try := 0; try < 3; try++ {
		s.send("\x15" + line + "\r")
		if s.awaitWithin(5*time.Second, want) {
			return
		}
		if s.foreground() != shellPgrp {
			break
		}
	}
	s.await(want, what)
}

// count is how often text was shown so far.
func (s *ptyShell) count(text string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Count(s.out, []byte(text))
}

// tail is the end of what the terminal showed, readable.
func (s *ptyShell) tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.out
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	ps, _ := exec.Command("ps", "-o", "pid,ppid,pgid,stat,wchan:20,args", "-g", strconv.Itoa(s.cmd.Process.Pid)).CombinedOutput()
	stty, _ := exec.Command("stty", "-a", "-F", fmt.Sprintf("/proc/%d/fd/0", s.cmd.Process.Pid)).CombinedOutput()
	return strconv.Quote(string(b)) + "\nthe terminal's processes:\n" + string(ps) + "its modes:\n" + string(stty)
}

// foreground is the terminal's foreground process group.
func (s *ptyShell) foreground() int {
	pgrp, err := unix.IoctlGetInt(int(s.ptmx.Fd()), unix.TIOCGPGRP)
	if err != nil {
		s.t.Fatalf("reading the terminal's foreground process group: %v", err)
	}
	return pgrp
}

// awaitForeground waits until the terminal's foreground process group is
// not the shell's (a job took the terminal), polling: the terminal has no
// event for it. Typing earlier would reach the terminal while the shell
// still changes its modes.
func (s *ptyShell) awaitForeground(shellPgrp int, what string) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for s.foreground() == shellPgrp {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: the shell kept the terminal for 30 s:\n%s", what, s.tail())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// awaitShell waits until the shell reads the terminal again: it holds the
// terminal and readline has put it in its own mode (not canonical),
// polling (the terminal has no event for it). Text typed while the shell
// still switches modes can be lost.
func (s *ptyShell) awaitShell(shellPgrp int, what string) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tio, err := unix.IoctlGetTermios(int(s.ptmx.Fd()), unix.TCGETS)
		if err != nil {
			s.t.Fatalf("reading the terminal's modes: %v", err)
		}
		if s.foreground() == shellPgrp && tio.Lflag&unix.ICANON == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: the shell did not read the terminal again in 30 s:\n%s", what, s.tail())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// tuiProgram is a program run in the job-control cycles: how it is
// started (its argv inside the sandbox), what it shows once it reads
// input, what to type after `fg` in cycle i and what it then shows, and
// how it is quit.
type tuiProgram struct {
	name  string
	comm  string // its process's name
	argv  []string
	ready string
	input func(i int) (typed, shown string)
	// resumed is what it shows once `fg` of cycle i has continued it
	// ("": nothing), awaited before typing: less flushes what was typed
	// while it was stopped.
	resumed func(i int) string
	quit    string
}

// jobControlPrograms are the programs of TestJobControlCycles: cat (the
// terminal's own Ctrl-Z stops the whole job), vim (in raw mode it reads
// the key and stops itself), less and python's REPL.
func jobControlPrograms(work string) []tuiProgram {
	return []tuiProgram{
		{name: "cat", comm: "cat", argv: []string{"sh", "-c", "echo cat-$((6*7))-ready; exec cat"}, ready: "cat-42-ready",
			// The terminal echoes the line, cat writes it again.
			input: func(i int) (string, string) { l := fmt.Sprintf("line-%d", i); return l + "\r", l + "\r\n" + l + "\r\n" }, quit: "\x04"},
		{name: "vim", comm: "vim", argv: []string{"vim", "-u", "NONE", "-i", "NONE", "-N", "-n", "jc-vim.txt"}, ready: "vim-file-ready",
			input:   func(i int) (string, string) { return fmt.Sprintf(":echo 7000+%d\r", i), strconv.Itoa(7000 + i) },
			resumed: func(int) string { return "vim-file-ready" }, quit: ":q!\r"},
		{name: "less", comm: "less", argv: []string{"less", "jc-less.txt"}, ready: "row-0001|",
			// A jump far past the shown screen.
			input: func(i int) (string, string) {
				n := 100 + 40*i
				return fmt.Sprintf("%dg", n), fmt.Sprintf("row-%04d|", n)
			},
			resumed: func(i int) string {
				if i == 1 {
					return "row-0001|"
				}
				return fmt.Sprintf("row-%04d|", 100+40*(i-1))
			}, quit: "q"},
		{name: "python3", comm: "python3", argv: []string{"python3", "-q"}, ready: ">>> ",
			input: func(i int) (string, string) {
				return fmt.Sprintf("print(9000+%d)\r", i), fmt.Sprintf("\r\n%d\r\n", 9000+i)
			}, quit: "exit()\r"},
	}
}

// nonoNoTerminal is what nono 0.78.0 says when it cannot start on a
// terminal under agent-sandbox.
const nonoNoTerminal = "Failed to create PTY proxy"

// TestJobControlCycles: in an interactive shell on a pseudo-terminal,
// each program runs sandboxed and goes through 20 cycles of Ctrl-Z, a
// command in the outer shell, `fg` and typing into it, then is quit and
// the run ends 0, under every engine (and unsandboxed, the control).
// Before, agent-sandbox under the view acted on a stale "stopped" report
// after `fg` and stopped the job again (5 of 5 cycles with cat).
func TestJobControlCycles(t *testing.T) {
	for _, tool := range []string{"vim", "less", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: apt-get install %s (.ci/run does)", tool, tool)
		}
	}
	const cycles = 20
	for _, name := range engineNames {
		t.Run(name, func(t *testing.T) {
			r := newBrokerRun(t)
			e := engineFor(t, r, name)
			write(t, filepath.Join(r.work, "jc-vim.txt"), "vim-file-ready\n")
			var rows strings.Builder
			for i := 1; i <= 1000; i++ {
				fmt.Fprintf(&rows, "row-%04d|\n", i)
			}
			write(t, filepath.Join(r.work, "jc-less.txt"), rows.String())
			for _, p := range jobControlPrograms(r.work) {
				t.Run(p.name, func(t *testing.T) {
					sh := startPtyShell(t, r.work, e.env)
					shellPgrp := sh.cmd.Process.Pid
					sh.awaitShell(shellPgrp, "the outer shell starting")
					sh.send("echo shell-$((2*21))-up\r")
					sh.await("shell-42-up", "the outer shell")
					quoted := make([]string, 0, len(p.argv))
					for _, a := range e.argv(p.argv...) {
						quoted = append(quoted, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
					}
					sh.send(strings.Join(quoted, " ") + "\r")
					if sh.awaitAny(p.name+" starting", p.ready, nonoNoTerminal) == 1 {
						// nono alone is refused on a terminal (its PTY
						// proxy's Unix socket); inside the view, where
						// this row runs it, it must start.
						t.Fatalf("nono did not start on a terminal inside the view (%q):\n%s", nonoNoTerminal, sh.tail())
					}
					stops := sh.count("Stopped")
					for i := 1; i <= cycles; i++ {
						step := fmt.Sprintf("%s, cycle %d", p.name, i)
						sh.suspend(p.comm, step+": Ctrl-Z")
						sh.await("$ ", step+": the prompt after Ctrl-Z")
						sh.awaitShell(shellPgrp, step+": the prompt after Ctrl-Z")
						sh.command(fmt.Sprintf("echo $((50000+%d))", i), strconv.Itoa(50000+i), shellPgrp, step+": a command in the outer shell")
						sh.await("$ ", step+": the prompt after the command")
						sh.awaitShell(shellPgrp, step+": the prompt after the command")
						if n := sh.count("Stopped"); n != stops+i {
							t.Fatalf("%s: the job stopped %d times for %d Ctrl-Z:\n%s", step, n-stops, i, sh.tail())
						}
						sh.send("fg\r")
						sh.awaitForeground(shellPgrp, step+": fg")
						if p.resumed != nil {
							// A full-screen program repaints on SIGCONT;
							// a repaint the pty's reader split across the
							// mark (seen unsandboxed too) is asked again
							// once with Ctrl-L, which only redraws.
							if !sh.awaitWithin(10*time.Second, p.resumed(i)) {
								sh.send("\x0c")
								sh.await(p.resumed(i), step+": the program's screen after fg (and Ctrl-L)")
							}
							if name == "nono" {
								// nono (0.78.0, exec_strategy.rs) sends
								// the child SIGCONT and then SIGWINCH when it
								// resumes: less repaints twice and may flush
								// its input at the second. Keys typed between
								// the two repaints were lost (once in
								// hundreds of cycles, as agentsb under load):
								// type once the screen is quiet.
								sh.settle(300*time.Millisecond, 3*time.Second)
							}
						}
						typed, shown := p.input(i)
						sh.send(typed)
						sh.await(shown, step+": typing after fg")
						if fg := sh.foreground(); fg == shellPgrp {
							t.Fatalf("%s: after fg the shell holds the terminal again (the job stopped once more):\n%s", step, sh.tail())
						}
					}
					sh.send(p.quit)
					sh.await("$ ", p.name+": quitting")
					sh.awaitShell(shellPgrp, p.name+": quitting")
					sh.send("echo run-exit=$?\r")
					sh.await("run-exit=0", p.name+": the run's exit status")
					if n := sh.count("Stopped"); n != stops+cycles {
						t.Errorf("%s: the job stopped %d times for %d Ctrl-Z:\n%s", p.name, n-stops, cycles, sh.tail())
					}
					sh.send("exit\r")
				})
			}
		})
	}
}
