package quiesce

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// marked lists the processes whose command line holds marker.
func marked(marker string) []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(marker)) {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// TestEndKillsDetachedForkers: a run whose agent has exited but left a
// detached (setsid) shell that keeps forking new processes, and a chain
// of nested ones: End kills them all, round after round, and proves it;
// no marked process is left.
func TestEndKillsDetachedForkers(t *testing.T) {
	if err := Begin(); err != nil {
		t.Fatal(err)
	}
	sleep := "1000." + strconv.Itoa(os.Getpid())
	script := `(setsid sh -c 'while :; do sleep ` + sleep + ` & done' </dev/null >/dev/null 2>&1 &)
(sh -c 'sh -c "sleep ` + sleep + `" & sleep ` + sleep + `' </dev/null >/dev/null 2>&1 &)
exit 0`
	cmd := exec.Command("/bin/sh", "-c", script)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(marked(sleep)) < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // waiting for the attacker to be up, not for End
	}
	if n := len(marked(sleep)); n < 3 {
		t.Fatalf("control: only %d marked processes started", n)
	}
	g := Track(cmd.Process.Pid, false).End()
	if !g.Proven() {
		t.Fatalf("End did not prove the run gone: %s", g.Problem())
	}
	if left := marked(sleep); len(left) > 0 {
		t.Errorf("processes of the run outlived End: %v", left)
	}
	kids, err := children(os.Getpid())
	if err != nil || len(kids) > 0 {
		t.Errorf("children left: %v (%v)", kids, err)
	}
}

// TestEndLeavesTheEndedChild: the view's init (Track's ended) is not
// killed or waited for: End proves at once.
func TestEndLeavesTheEndedChild(t *testing.T) {
	if err := Begin(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	start := time.Now()
	g := Track(cmd.Process.Pid, true).End()
	if !g.Proven() || time.Since(start) > time.Second {
		t.Fatalf("End with an ended child: proven %v after %v (%s)", g.Proven(), time.Since(start), g.Problem())
	}
	if err := syscall.Kill(cmd.Process.Pid, 0); err != nil {
		t.Errorf("End killed the ended child")
	}
}

// TestZeroGoneProvesNothing: only End makes a proof.
func TestZeroGoneProvesNothing(t *testing.T) {
	var g Gone
	if g.Proven() || g.Problem() == "" {
		t.Errorf("the zero Gone proves the run gone")
	}
	if g.WithRemote("x").Remote() != "x" {
		t.Errorf("WithRemote")
	}
}
