package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An ordinary process inside (issue 39, items 1 and 4): the agent starts
// with the signal dispositions and mask an unsandboxed run gives it, and
// the signals a user sends to agent-sandbox reach it, under every engine.

// callerWrapper is a Python program that starts its arguments the way a
// caller with its own signal settings would: SIGUSR2 and SIGTTIN blocked,
// SIGINT, SIGQUIT, SIGHUP and SIGXFSZ ignored (a background job of a
// non-interactive shell, nohup), SIGPIPE at its default.
const callerWrapper = `import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2, signal.SIGTTIN})
for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGXFSZ):
    signal.signal(s, signal.SIG_IGN)
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])
`

// dispositionProbe is the agent of TestSignalDispositions: bash runs a
// pipeline whose writer must die of SIGPIPE and an alarm(2) timeout that
// must fire, then becomes grep (exec: the agent's own pid, the only one
// the weaker sandbox's /proc layer shows; bash's own SIGQUIT, which it
// ignores for itself, is restored for it), which shows its SigIgn and
// SigBlk.
const dispositionProbe = `yes | head -1 >/dev/null; echo "pipestatus ${PIPESTATUS[*]}"
python3 -c 'import signal, time; signal.alarm(1); time.sleep(20); print("no" + "-alarm")'; echo "alarm $?"
(set -o pipefail; yes | head -1 >/dev/null; echo "pipefail $?")
exec grep -E '^Sig(Ign|Blk):' /proc/self/status`

// TestSignalDispositions: every engine starts the agent with the signal
// dispositions and mask --no-sandbox gives it (the caller's mask; every
// signal at its default, as Go's exec leaves them), not with the sandbox's
// own ignored signals: before, the view's init left SIGPIPE, SIGALRM,
// SIGXCPU, SIGXFSZ and four more ignored in every program inside (SigIgn
// 0000000033803020), so `yes | head -1` printed "Broken pipe" and alarm()
// never fired; nono leaves its own SIGPIPE ignored.
func TestSignalDispositions(t *testing.T) {
	py, why := tool("python3")
	if py == "" {
		t.Fatalf("needs python3 for the caller's signal settings and the alarm probe: %s", why)
	}
	wrapper := filepath.Join(t.TempDir(), "caller.py")
	write(t, wrapper, callerWrapper)
	run := func(t *testing.T, e runEngine, r *brokerRun) string {
		t.Helper()
		cmd := e.command(r, "bash", "-c", dispositionProbe)
		cmd.Args = append([]string{py, wrapper}, cmd.Args...)
		cmd.Path = py
		cmd.Stdin = nil
		out, err := runWithin(cmd, 90*time.Second)
		if err != nil {
			t.Fatalf("%s: %v\n%s", e.name, err, out)
		}
		return out
	}
	fields := regexp.MustCompile(`(?m)^(SigIgn:|SigBlk:|pipestatus|alarm|pipefail)\s.*$`)
	// The control: what the caller's settings give an unsandboxed agent.
	ctlRun := newBrokerRun(t)
	control := run(t, engineFor(t, ctlRun, "no-sandbox"), ctlRun)
	want := strings.Join(fields.FindAllString(control, -1), "\n")
	for _, line := range []string{"SigBlk:\t0000000000100800", "SigIgn:\t0000000000000000", "pipestatus 141 0", "alarm 142", "pipefail 141"} {
		if !strings.Contains(control, line) {
			t.Fatalf("control: --no-sandbox does not give %q (the caller blocks SIGUSR2 and SIGTTIN; the rest is the host's default):\n%s", line, control)
		}
	}
	for _, name := range engineNames[1:] {
		t.Run(name, func(t *testing.T) {
			r := newBrokerRun(t)
			e := engineFor(t, r, name)
			out := run(t, e, r)
			got := strings.Join(fields.FindAllString(out, -1), "\n")
			if name == "nono" {
				// nono (a Rust program) ignores SIGPIPE and leaves it so
				// for the agent; agent-sandbox does not put a program of
				// its own before the agent's command, which nono checks
				// (README, "Signals and processes"). Everything else is
				// as unsandboxed, and that exact difference is checked.
				want := strings.NewReplacer("SigIgn:\t0000000000000000", "SigIgn:\t0000000000001000",
					"pipestatus 141 0", "pipestatus 1 0", "pipefail 141", "pipefail 1").Replace(want)
				if got != want {
					t.Errorf("nono: the agent's signal settings are not an unsandboxed run's with SIGPIPE ignored (as README says):\ngot:\n%s\nwant:\n%s\nfull output:\n%s", got, want, out)
				}
				if strings.Contains(out, "no-alarm") {
					t.Errorf("nono: SIGALRM is ignored inside:\n%s", out)
				}
				return
			}
			if got != want {
				t.Errorf("%s: the agent's signal settings differ from an unsandboxed run's:\ngot:\n%s\nwant (--no-sandbox):\n%s\nfull output:\n%s", name, got, want, out)
			}
			if strings.Contains(out, "Broken pipe") || strings.Contains(out, "no-alarm") {
				t.Errorf("%s: SIGPIPE or SIGALRM is ignored inside:\n%s", name, out)
			}
		})
	}
}

// forwardedSignals are the signals a user sends to agent-sandbox (kill
// -SIG PID) that must reach the agent, SIGTERM last (it ends the probe).
var forwardedSignals = []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGWINCH, syscall.SIGTERM}

// TestSignalsReachAgent: each signal a user sends to agent-sandbox's pid
// (USR1, USR2, HUP, INT, QUIT, WINCH, TERM) reaches the agent, which traps
// it, under every engine. Before, nono (whose supervisor keeps SIGUSR1 for
// its own pause and has no handler for SIGUSR2, which then killed it) lost
// SIGUSR1 and died of SIGUSR2.
func TestSignalsReachAgent(t *testing.T) {
	var traps []string
	for _, s := range forwardedSignals {
		name := strings.TrimPrefix(sigName(s), "SIG")
		if s == syscall.SIGTERM {
			traps = append(traps, fmt.Sprintf(`trap 'echo got %s; kill $p; exit 7' %s`, name, name))
			continue
		}
		traps = append(traps, fmt.Sprintf(`trap 'echo got %s' %s`, name, name))
	}
	probe := strings.Join(traps, "\n") + "\nsleep 1000 & p=$!\necho ready\nwhile :; do wait $p; done"
	for _, name := range engineNames {
		t.Run(name, func(t *testing.T) {
			r := newBrokerRun(t)
			e := engineFor(t, r, name)
			cmd := e.command(r, "bash", "-c", probe)
			cmd.Stdin = nil
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout, cmd.Stderr = pw, pw
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pw.Close()
			pid := cmd.Process.Pid
			defer func() {
				syscall.Kill(-pid, syscall.SIGKILL)
				cmd.Wait()
			}()
			lines := make(chan string, 64)
			go func() {
				sc := bufio.NewScanner(pr)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
				pr.Close()
			}()
			var seen []string
			await := func(want string) bool {
				deadline := time.After(60 * time.Second)
				for {
					select {
					case l, ok := <-lines:
						if !ok {
							return false
						}
						seen = append(seen, l)
						if l == want {
							return true
						}
					case <-deadline:
						return false
					}
				}
			}
			if !await("ready") {
				t.Fatalf("%s: the probe did not start:\n%s", name, strings.Join(seen, "\n"))
			}
			for _, s := range forwardedSignals {
				sn := strings.TrimPrefix(sigName(s), "SIG")
				if err := syscall.Kill(pid, s); err != nil {
					t.Fatalf("%s: kill -%s %d: %v", name, sn, pid, err)
				}
				if !await("got " + sn) {
					t.Fatalf("%s: kill -%s to agent-sandbox did not reach the agent:\n%s", name, sn, strings.Join(seen, "\n"))
				}
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				}
				if code != 7 {
					t.Errorf("%s: agent-sandbox exited %d (%v), want the agent's 7", name, code, err)
				}
			case <-time.After(60 * time.Second):
				t.Errorf("%s: agent-sandbox did not end after the agent did", name)
			}
			for l := range lines {
				seen = append(seen, l)
			}
		})
	}
}

// sigName is the signal's name, SIGUSR1 and so on.
func sigName(s syscall.Signal) string {
	names := map[syscall.Signal]string{syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2", syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT",
		syscall.SIGQUIT: "SIGQUIT", syscall.SIGWINCH: "SIGWINCH", syscall.SIGTERM: "SIGTERM", syscall.SIGALRM: "SIGALRM"}
	return names[s]
}

// runWithin runs cmd to its end, with its output, killing its process
// group after timeout.
func runWithin(cmd *exec.Cmd, timeout time.Duration) (string, error) {
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(timeout):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return out.String(), fmt.Errorf("did not finish in %v (a hang)", timeout)
	}
}
