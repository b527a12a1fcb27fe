package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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
