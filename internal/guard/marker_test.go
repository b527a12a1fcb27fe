package guard

import (
	"bytes"
	"encoding/gob"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/protect"
	"github.com/agent-sandbox/agent-sandbox/internal/quiesce"
)

// killedRun is a guard over a git config whose run's marker is kept in
// runDir, as a run's Begin leaves it.
func killedRun(t *testing.T) (root, cfg, runDir string, g *Guard) {
	t.Helper()
	base := t.TempDir()
	root, runDir = filepath.Join(base, "work"), filepath.Join(base, "runs")
	cfg = filepath.Join(root, ".git", "config")
	write(t, cfg, "[core]\n\tbare = false\n")
	e := protect.Entry{Path: cfg, Name: protect.GitConfig, Guard: protect.Audited, Format: protect.FormatGit, Why: "git runs it", Root: root}
	g, err := Begin(Options{Ledger: protect.Ledger{Entries: []protect.Entry{e}}, Workdir: root, QuarantineDir: filepath.Join(base, "quarantine"), Agent: "test", RunDir: runDir})
	if err != nil {
		t.Fatal(err)
	}
	return root, cfg, runDir, g
}

// TestEndNotFinal: an audit without the quiesce step's proof says DANGER,
// and keeps the run's marker for the next start; with it, the marker goes.
func TestEndNotFinal(t *testing.T) {
	_, _, runDir, g := killedRun(t)
	g.Watch(nil)
	var out bytes.Buffer
	if fs := g.End(&out, quiesce.Gone{}, nil, nil); !hasKind(fs, KindNotFinal) || !strings.Contains(out.String(), "DANGER: the audit after this run is not final") {
		t.Errorf("an unproven quiesce is not said: %s", out.String())
	}
	if m, _ := filepath.Glob(filepath.Join(runDir, "*.run")); len(m) != 1 {
		t.Errorf("the marker of a run not proven gone was not kept: %v", m)
	}
	_, _, runDir, g = killedRun(t)
	g.Watch(nil)
	g.End(&out, quiet(t), nil, nil)
	if m, _ := filepath.Glob(filepath.Join(runDir, "*.run")); len(m) != 0 {
		t.Errorf("the marker of a finished run was kept: %v", m)
	}
}

// TestRecoverKilledRun: a marker left by an agent-sandbox that no longer
// runs is audited by Recover: the planted core.fsmonitor is restored and
// the user told; a marker of a run going on is left alone.
func TestRecoverKilledRun(t *testing.T) {
	_, cfg, runDir, _ := killedRun(t) // never ended: as if killed
	var out bytes.Buffer
	if n := Recover(Options{RunDir: runDir, QuarantineDir: filepath.Join(t.TempDir(), "q")}, &out); n != 0 {
		t.Fatalf("Recover audited a run that is still going (this process's): %d\n%s", n, out.String())
	}
	// The process that wrote it is gone: a finished child's pid.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	p := markerPath(runDir)
	b, _ := os.ReadFile(p)
	var m marker
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&m); err != nil {
		t.Fatal(err)
	}
	m.Pid = dead.Process.Pid
	var enc bytes.Buffer
	gob.NewEncoder(&enc).Encode(m)
	os.Remove(p)
	os.WriteFile(filepath.Join(runDir, "1.run"), enc.Bytes(), 0o600)
	write(t, cfg, "[core]\n\tbare = false\n\tfsmonitor = \"touch /tmp/pwned\"\n")
	if n := Recover(Options{RunDir: runDir, QuarantineDir: filepath.Join(t.TempDir(), "q")}, &out); n != 1 {
		t.Fatalf("Recover audited %d runs, want the killed one:\n%s", n, out.String())
	}
	if b, _ := os.ReadFile(cfg); strings.Contains(string(b), "fsmonitor") {
		t.Errorf("the killed run's planted setting is still there:\n%s\n%s", b, out.String())
	}
	if !strings.Contains(out.String(), "ended without its final audit") || !strings.Contains(out.String(), "fsmonitor") {
		t.Errorf("the user is not told: %s", out.String())
	}
	if m, _ := filepath.Glob(filepath.Join(runDir, "*.run")); len(m) != 0 {
		t.Errorf("the recovered marker was kept: %v", m)
	}
}
