package landlock

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRootOnly: what an ordinary user could not read is found (a file
// without o+r, a directory without o+rx, not what lies below it), what
// everyone reads is not, nor a symlink, nor what skip names.
func TestRootOnly(t *testing.T) {
	d := t.TempDir()
	mk := func(rel string, mode os.FileMode, dir bool) {
		t.Helper()
		p := filepath.Join(d, rel)
		var err error
		if dir {
			err = os.MkdirAll(p, 0o755)
		} else {
			err = os.WriteFile(p, []byte("x"), 0o644)
		}
		if err == nil {
			err = os.Chmod(p, mode)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	mk("mysql", 0o755, true)
	mk("mysql/debian.cnf", 0o600, false)
	mk("mysql/my.cnf", 0o644, false)
	mk("group-only.conf", 0o640, false)
	mk("live", 0o755, true)
	mk("live/key.pem", 0o600, false)
	mk("passwd", 0o644, false)
	mk("skipped.conf", 0o600, false)
	if err := os.Chmod(filepath.Join(d, "live"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("mysql/debian.cnf", filepath.Join(d, "link")); err != nil {
		t.Fatal(err)
	}
	got := rootOnly(d, []string{filepath.Join(d, "skipped.conf")})
	want := []string{filepath.Join(d, "group-only.conf"), filepath.Join(d, "live"), filepath.Join(d, "mysql", "debian.cnf")}
	if !slices.Equal(got, want) {
		t.Errorf("rootOnly = %v, want %v", got, want)
	}
}
