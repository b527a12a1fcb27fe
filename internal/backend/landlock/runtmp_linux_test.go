//go:build linux

package landlock

import (
	"os"
	"path/filepath"
	"testing"
)

// A run's TMPDIR is emptied and kept for a later run after a run in the
// view, and removed otherwise; a kept one that is not an empty private
// directory of this user's is never handed out.
func TestRunTmpReuse(t *testing.T) {
	dir := t.TempDir()
	a, err := claimRunTmp(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(a.path, "sub"), 0o700)
	os.WriteFile(filepath.Join(a.path, "sub", "f"), []byte("secret of run a"), 0o600)
	a.release(true)
	b, err := claimRunTmp(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.path != a.path {
		t.Errorf("the kept TMPDIR was not reused: %s, then %s", a.path, b.path)
	}
	if ents, _ := os.ReadDir(b.path); len(ents) != 0 {
		t.Errorf("a reused TMPDIR holds %v from the run before", ents)
	}
	c, err := claimRunTmp(dir) // concurrent with b: its own
	if err != nil {
		t.Fatal(err)
	}
	if c.path == b.path {
		t.Errorf("two runs got the same TMPDIR %s", c.path)
	}
	c.release(false)
	if _, err := os.Lstat(c.path); err == nil {
		t.Errorf("a TMPDIR not to keep was left: %s", c.path)
	}
	b.release(true)

	// Tampered kept ones: widened mode, a file inside, a symlink.
	free := func(n string) string { return filepath.Join(dir, freePrefix+n) }
	os.Remove(free(filepath.Base(b.path)[len("run-"):]))
	os.Mkdir(free("wide"), 0o755)
	os.Chmod(free("wide"), 0o755)
	os.Mkdir(free("full"), 0o700)
	os.WriteFile(filepath.Join(free("full"), "planted"), nil, 0o600)
	os.Symlink(t.TempDir(), free("link"))
	d, err := claimRunTmp(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"wide", "full", "link"} {
		if d.path == filepath.Join(dir, "run-"+n) {
			t.Errorf("the tampered kept TMPDIR %q was handed out", n)
		}
	}
	if ents, _ := os.ReadDir(d.path); len(ents) != 0 {
		t.Errorf("the TMPDIR handed out holds %v", ents)
	}
}
