//go:build linux

package guard

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keepNothing stands in for the sandbox's init in Share: the test's own
// close of the instance is its last.
func keepNothing(*os.File) error { return nil }

// TestGuardTreeWatch: through the guard (its own inotify instance and
// loop, internal/workscan's watch of the tree), a run in which nothing
// changed ends with no finding; a run that planted files below recorded
// directories ends with them found: the guard gives the watch its
// events. An instance this process must destroy itself (no Share) gets
// no watch of the tree. (What the watch spares: workscan's
// TestWatchedScanAsksNothing.)
func TestGuardTreeWatch(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for d := 0; d < 60; d++ {
		for _, s := range []string{"s0", "s1"} {
			write(t, filepath.Join(root, fmt.Sprintf("d%02d", d), s, "f"), "x")
		}
	}
	run := func(agent func()) string {
		g := newTest(t, root)
		g.Share(keepNothing)
		g.Watch(nil)
		if g.tw == nil {
			t.Fatal("no tree watch with Share")
		}
		g.pre.Previous() // the walk is over: the watch is in place
		agent()
		var out bytes.Buffer
		g.End(&out, quiet(t), nil, nil)
		return out.String()
	}
	if out := run(func() {}); out != "" {
		t.Errorf("nothing changed: findings %q", out)
	}
	out := run(func() {
		write(t, filepath.Join(root, "d12", "s1", ".envrc"), "planted")
		mustRename(t, filepath.Join(root, "d20", "s0"), filepath.Join(root, "d20", "s0.old"))
		mustRename(t, filepath.Join(root, "d21", "s0"), filepath.Join(root, "d20", "s0"))
		write(t, filepath.Join(root, "d20", "s0", ".vscode", "tasks.json"), "{}")
	})
	for _, want := range []string{"d12/s1/.envrc", "d20/s0/.vscode"} {
		if !strings.Contains(out, want) {
			t.Errorf("missed %s:\n%s", want, out)
		}
	}
	g := newTest(t, root)
	g.Watch(nil)
	if g.tw != nil {
		t.Error("a tree watch without Share")
	}
	g.End(&bytes.Buffer{}, quiet(t), nil, nil)
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}
