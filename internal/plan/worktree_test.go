package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// TestWorktreeStep: a --worktree run grants the project's objects
// read-only, records the layout in the spec and the plan, refuses a grant
// into the project and the sbx backend.
func TestWorktreeStep(t *testing.T) {
	f := newFixture(t)
	proj := filepath.Join(f.root, "proj")
	tree := filepath.Join(f.root, "store", "k", "a", "tree")
	for _, d := range []string{filepath.Join(proj, ".git", "objects"), filepath.Join(proj, "sub"), tree} {
		os.MkdirAll(d, 0o755)
	}
	fo := f.folder(t, "command = \"/bin/sh\"\n", map[string]string{"sandbox/nono.json": `{"network": {"block": true}}`})
	wt := &WorktreeInput{Tree: tree, Store: filepath.Join(f.root, "store"), Worktree: spec.Worktree{Branch: "a", At: proj,
		Objects: filepath.Join(proj, ".git", "objects"), ObjectsLink: filepath.Join(f.root, "store", "k", "a", "project-objects")}}
	build := func(backend posture.Backend, write []string) (*Plan, error) {
		pst, err := posture.Resolve(posture.Input{Agent: fo.ID, Flags: posture.Flags{Backend: backend}, Nono: fo.Nono, Host: posture.Host{GOOS: "linux"}})
		if err != nil {
			t.Fatal(err)
		}
		return Build(Input{Folder: fo, Posture: pst, Home: f.h, Workdir: tree, RunWrite: write, Worktree: wt,
			Getenv:   func(k string) string { return map[string]string{"PATH": "/usr/bin:/bin"}[k] },
			LookPath: func(c string) (string, error) { return c, nil }})
	}
	p, err := build(posture.Landlock, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Filesystem.Read, wt.Objects) || slices.Contains(p.Filesystem.Allow, proj) || !slices.Contains(p.Filesystem.Allow, tree) {
		t.Errorf("filesystem = %+v", p.Filesystem)
	}
	if p.Spec.Worktree == nil || p.Spec.Worktree.At != proj || p.Worktree == nil || p.Worktree.Branch != "a" || len(p.Worktree.Mounts) != 2 {
		t.Errorf("spec %+v, plan %+v", p.Spec.Worktree, p.Worktree)
	}
	if p.WorktreeLine() == "" {
		t.Error("no line for the run")
	}
	if _, err := build(posture.Landlock, []string{filepath.Join(proj, "sub")}); err == nil || !strings.Contains(err.Error(), "reaches the project") {
		t.Errorf("--write into the project: %v", err)
	}
	other := filepath.Join(f.root, "store", "k", "b", "tree")
	os.MkdirAll(other, 0o755)
	os.MkdirAll(filepath.Join(tree, "sub"), 0o755)
	if _, err := build(posture.Landlock, []string{other}); err == nil || !strings.Contains(err.Error(), "reaches the worktree store") {
		t.Errorf("--write into another run's tree: %v", err)
	}
	if _, err := build(posture.Landlock, []string{filepath.Join(tree, "sub")}); err != nil {
		t.Errorf("--write inside the run's own tree: %v", err)
	}
	if _, err := build(posture.Sbx, nil); err == nil || !strings.Contains(err.Error(), "not supported with the sbx backend") {
		t.Errorf("sbx: %v", err)
	}
}
