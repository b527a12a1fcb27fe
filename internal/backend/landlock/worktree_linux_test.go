//go:build linux

package landlock

import (
	"slices"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/spec"
	"github.com/agent-sandbox/agent-sandbox/internal/view"
)

// TestWorktreeView: a --worktree run's view shows the tree at the
// project's path (an Alias, after the binds), binds the project's objects
// read-only where the alternates name them, and starts the agent there.
func TestWorktreeView(t *testing.T) {
	s := spec.Spec{Workdir: "/s/k/a/tree", Worktree: &spec.Worktree{Branch: "a", At: "/home/u/proj",
		Objects: "/home/u/proj/.git/objects", ObjectsLink: "/s/k/a/project-objects"}}
	c := view.Config{Workdir: s.Workdir, Mounts: []view.Mount{{Kind: view.ReadWrite, Path: s.Workdir}}}
	worktreeView(&c, s)
	if c.Workdir != "/home/u/proj" {
		t.Errorf("workdir %s", c.Workdir)
	}
	want := []view.Mount{
		{Kind: view.ReadWrite, Path: s.Workdir},
		{Kind: view.ReadOnly, Path: "/s/k/a/project-objects", Source: "/home/u/proj/.git/objects"},
		{Kind: view.Alias, Path: "/home/u/proj", Source: s.Workdir},
	}
	if !slices.Equal(c.Mounts, want) {
		t.Errorf("mounts %+v", c.Mounts)
	}
	if !slices.Contains(c.Landlock.ReadOnly, "/s/k/a/project-objects") {
		t.Errorf("no read rule for the objects link: %+v", c.Landlock.ReadOnly)
	}
	// Without --worktree nothing changes.
	c2 := view.Config{Workdir: "/w"}
	worktreeView(&c2, spec.Spec{Workdir: "/w"})
	if c2.Workdir != "/w" || len(c2.Mounts) != 0 {
		t.Errorf("%+v", c2)
	}
}
