package launch

import (
	"bytes"
	"errors"
	"github.com/agent-sandbox/agent-sandbox/internal/guard"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExitStatusPassthrough(t *testing.T) {
	var out, errb bytes.Buffer
	stdio := Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}
	for code, script := range map[int]string{0: "exit 0", 3: "exit 3", 42: "echo hi; exit 42"} {
		if got := Run([]string{"/bin/sh", "-c", script}, nil, "", stdio, nil); got != code {
			t.Errorf("%q: status %d, want %d", script, got, code)
		}
	}
	if got := Run([]string{"/bin/sh", "-c", "kill -TERM $$"}, nil, "", stdio, nil); got != 128+int(syscall.SIGTERM) {
		t.Errorf("killed by SIGTERM: status %d, want %d", got, 128+int(syscall.SIGTERM))
	}
}

func TestStartFailures(t *testing.T) {
	var errb bytes.Buffer
	stdio := Stdio{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &errb}
	if got := Run([]string{"/nonexistent/agent"}, nil, "", stdio, nil); got != ExitNotFound {
		t.Errorf("missing program: %d, want 127", got)
	}
	dir := t.TempDir()
	noexec := dir + "/noexec"
	os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644)
	if got := Run([]string{noexec}, nil, "", stdio, nil); got != ExitNotExecable {
		t.Errorf("non-executable program: %d, want 126", got)
	}
	if !strings.Contains(errb.String(), "agent-sandbox: error: cannot start") {
		t.Errorf("stderr %q", errb.String())
	}
}

// TestSignalsReachAgent: SIGTERM and SIGHUP sent to agent-sandbox reach the
// agent, whose exit status comes back, as soon as the agent runs: with the
// signals registered by Run itself and ahead of it by RegisterSignals. The
// test re-runs its own binary as the launcher so that the signal goes to a
// real separate process.
func TestSignalsReachAgent(t *testing.T) {
	switch os.Getenv("LAUNCH_HELPER") {
	case "early":
		RegisterSignals()
		fallthrough
	case "run":
		os.Exit(Run([]string{"/bin/sh", "-c", `trap 'exit 71' TERM; trap 'exit 72' HUP; echo ready; while :; do sleep 0.05; done`}, nil, "", Stdio{In: strings.NewReader(""), Out: os.Stdout, Err: os.Stderr}, nil))
	}
	for _, mode := range []string{"run", "early"} {
		for sig, want := range map[syscall.Signal]int{syscall.SIGTERM: 71, syscall.SIGHUP: 72} {
			cmd := helper(t, "TestSignalsReachAgent", mode)
			cmd.Process.Signal(sig)
			if got := ExitStatus(waitHelper(t, cmd)); got != want {
				t.Errorf("%s, %v: launcher exited %d, want the agent's %d", mode, sig, got, want)
			}
		}
	}
}

// TestSignalBeforeRun: a signal that comes after RegisterSignals and before
// Run has the effect it would have had without the registration: SIGWINCH
// is ignored, SIGTERM ends agent-sandbox by that signal.
func TestSignalBeforeRun(t *testing.T) {
	if os.Getenv("LAUNCH_HELPER") == "before" {
		RegisterSignals()
		time.Sleep(200 * time.Millisecond) // the registration is done
		os.Stdout.WriteString("ready\n")
		time.Sleep(2 * time.Second)
		os.Exit(0)
	}
	cmd := helper(t, "TestSignalBeforeRun", "before")
	cmd.Process.Signal(syscall.SIGWINCH)
	time.Sleep(50 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	err := waitHelper(t, cmd)
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("the signalled launcher exited %v, want death by SIGTERM", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("the signalled launcher ended %v, want death by SIGTERM", err)
	}
}

// helper starts the test binary running test in LAUNCH_HELPER mode and
// waits for it to print "ready".
func helper(t *testing.T, test, mode string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), "LAUNCH_HELPER="+mode)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "ready\n" {
		cmd.Process.Kill()
		t.Fatalf("helper did not start: %q %v", buf, err)
	}
	return cmd
}

// waitHelper waits for a helper, at most 10 s.
func waitHelper(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the helper did not exit")
		return nil
	}
}

// TestNoProcessOutlivesTheRun: a daemon the agent detaches with setsid and a
// double fork is gone when Run returns (threat class 19).
func TestNoProcessOutlivesTheRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("subreaper sweeping is Linux-only")
	}
	marker := "agent-sandbox-outlive-" + strconv.Itoa(os.Getpid())
	stdio := Stdio{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
	script := `(setsid sh -c 'sleep 600; echo ` + marker + `' </dev/null >/dev/null 2>&1 &) ; sleep 0.2; exit 5`
	if got := Run([]string{"/bin/sh", "-c", script}, nil, "", stdio, nil); got != 5 {
		t.Fatalf("status %d", got)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), marker) {
			// Fail, but leave nothing behind either.
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				syscall.Kill(-pid, syscall.SIGKILL) // the setsid shell leads its group, sleep included
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("process %s outlived the run: %q", p, b)
		}
	}
}

// TestInterruptAfterRun: once the agent has ended, signals are no longer
// passed on: a SIGINT during the checks after the run stops the scan
// (which says what it did not check), the audit still completes, and the
// run exits 130 rather than the agent's status.
func TestInterruptAfterRun(t *testing.T) {
	work := t.TempDir()
	for i := 0; i < 3000; i++ {
		if err := os.WriteFile(filepath.Join(work, "f"+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var errb bytes.Buffer
	released := false
	l := Lifecycle{
		Argv: []string{"/bin/sh", "-c", "exit 0"}, Dir: work,
		Stdio: Stdio{In: strings.NewReader(""), Out: io.Discard, Err: &errb},
		Prepare: func() (func() []string, error) {
			return func() []string {
				released = true
				// The user presses Ctrl-C while the checks run.
				syscall.Kill(os.Getpid(), syscall.SIGINT)
				time.Sleep(100 * time.Millisecond)
				return nil
			}, nil
		},
		Guard: &guard.Options{Workdir: work, QuarantineDir: t.TempDir(), Agent: "t"},
	}
	if got := l.Execute(); got != 130 {
		t.Errorf("status %d, want 130 (interrupted during the checks)", got)
	}
	if !released {
		t.Errorf("the placeholders were not released")
	}
	if !strings.Contains(errb.String(), "because it was interrupted") {
		t.Errorf("the scan does not say it was interrupted: %s", errb.String())
	}
}
