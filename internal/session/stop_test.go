package session

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestStop: a stop request reaches the handler, whose error comes back;
// the answer comes even when the session ends (Close) while it is served.
func TestStop(t *testing.T) {
	root := t.TempDir()
	var srv *Server
	asked := make(chan bool, 2)
	var fail atomic.Bool
	srv, err := Open(root, Info{Agent: "a", Workdir: "/w", Engine: "view", Detached: true}, Handlers{
		Stop: func() error {
			asked <- true
			if fail.Load() {
				return errors.New("cannot end")
			}
			go srv.Close() // the session ends at once
			time.Sleep(20 * time.Millisecond)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	c, err := Dial(root, srv.ID())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err == nil || err.Error() != "cannot end" {
		t.Errorf("Stop = %v, want the handler's error", err)
	}
	c.Close()
	fail.Store(false)
	c, _ = Dial(root, srv.ID())
	defer c.Close()
	if err := c.Stop(); err != nil {
		t.Errorf("Stop = %v", err)
	}
	if len(asked) != 2 {
		t.Errorf("the handler was asked %d times, want 2", len(asked))
	}
}

// TestFindings: a detached session's findings are written (0600), listed
// for their workdir only, and taken once.
func TestFindings(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(Dir(root), 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, f := range []Findings{
		{ID: "b", Agent: "x", Workdir: "/w", Ended: now, Reason: "idle", Text: "agent-sandbox: warning: restored\n"},
		{ID: "a", Agent: "x", Workdir: "/w", Ended: now.Add(-time.Minute), Reason: "stop"},
		{ID: "c", Agent: "x", Workdir: "/other", Ended: now, Reason: "idle"},
	} {
		if err := WriteFindings(root, f); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(FindingsPath(root, "b")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("findings file: %v %v, want mode 0600", fi, err)
	}
	p := Pending(root, "/w")
	if len(p) != 2 || p[0].ID != "a" || p[1].ID != "b" {
		t.Fatalf("Pending(/w) = %+v, want a then b", p)
	}
	if d := p[1].Describe(); !strings.Contains(d, "ended on its idle timeout") || !strings.Contains(d, "what it reported") {
		t.Errorf("Describe = %q", d)
	}
	if d := p[0].Describe(); !strings.Contains(d, "agent-sandbox stop") || !strings.Contains(d, "nothing to report") {
		t.Errorf("Describe = %q", d)
	}
	f, err := TakeFindings(root, "b")
	if err != nil || f.Text != "agent-sandbox: warning: restored\n" {
		t.Fatalf("TakeFindings = %+v %v", f, err)
	}
	if _, err := TakeFindings(root, "b"); err == nil {
		t.Error("findings taken twice")
	}
	if l := List(root); len(l) != 0 {
		t.Errorf("List lists findings as sessions: %+v", l)
	}
}

// TestWait: Wait sees a process's end, and times out on one that runs.
func TestWait(t *testing.T) {
	cmd := exec.Command("sleep", "0.1")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep(1): %v", err)
	}
	go func() { _ = cmd.Wait() }()
	if !Wait(cmd.Process.Pid, 10*time.Second) {
		t.Error("Wait did not see the process end")
	}
	if Wait(os.Getpid(), 50*time.Millisecond) {
		t.Error("Wait says this process has ended")
	}
}

// TestOrphans: a detached session's log is an orphan once no process
// holds its lock and no findings lie beside it.
func TestOrphans(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(Dir(root), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(LogPath(root, "live"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := LockLog(f); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"killed", "ended"} {
		if err := os.WriteFile(LogPath(root, id), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteFindings(root, Findings{ID: "ended"}); err != nil {
		t.Fatal(err)
	}
	if o := Orphans(root); len(o) != 1 || o[0] != "killed" {
		t.Errorf("Orphans = %v, want [killed] (live holds its lock, ended has findings)", o)
	}
	f.Close()
	if o := Orphans(root); len(o) != 2 || o[0] != "killed" || o[1] != "live" {
		t.Errorf("Orphans after live's supervisor ended = %v, want [killed live]", o)
	}
}
