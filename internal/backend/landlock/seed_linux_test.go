//go:build linux

package landlock

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSeedCache: the copy gets every file of the host's cache with its
// contents and mode (made writable), never a hard link to it; a later
// seeding replaces what the agent changed, keeps what it added, and
// follows no symlink the agent planted in its copy (a directory swapped
// for a link to a host directory gets nothing written through it).
func TestSeedCache(t *testing.T) {
	root := t.TempDir()
	src, dst, outside := filepath.Join(root, "src"), filepath.Join(root, "copy"), filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(src, "a", "b"), filepath.Join(src, "c"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(src, "a", "b", "f"), "host\n", 0o444)
	mustWrite(t, filepath.Join(src, "c", "g"), "gee\n", 0o644)
	if err := os.Symlink("a/b/f", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	st, err := seedCache(src, dst)
	if err != nil || st.Files != 3 {
		t.Fatalf("first seeding: %+v %v", st, err)
	}
	copied := filepath.Join(dst, "a", "b", "f")
	if b, _ := os.ReadFile(copied); string(b) != "host\n" {
		t.Errorf("copy holds %q", b)
	}
	var hs, cs syscall.Stat_t
	if err := syscall.Stat(filepath.Join(src, "a", "b", "f"), &hs); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(copied, &cs); err != nil {
		t.Fatal(err)
	}
	if hs.Ino == cs.Ino || hs.Nlink != 1 {
		t.Errorf("the copy is a hard link of the host's file (inode %d, links %d)", cs.Ino, hs.Nlink)
	}
	if cs.Mode&0o777 != 0o644 {
		t.Errorf("copy mode %o, want 644 (the host's 444, writable by its owner)", cs.Mode&0o777)
	}
	if l, _ := os.Readlink(filepath.Join(dst, "link")); l != "a/b/f" {
		t.Errorf("symlink copied as %q", l)
	}
	if st, err := seedCache(src, dst); err != nil || st.Files != 0 || st.Same != 3 {
		t.Errorf("a second seeding of an unchanged cache copied again: %+v %v", st, err)
	}
	// The agent poisons its copy, adds a file, and swaps a directory for
	// a symlink to a host directory.
	mustWrite(t, copied, "POISON\n", 0o644)
	mustWrite(t, filepath.Join(dst, "mine"), "agent's\n", 0o644)
	if err := os.RemoveAll(filepath.Join(dst, "c")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dst, "c")); err != nil {
		t.Fatal(err)
	}
	st, err = seedCache(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(copied); string(b) != "host\n" {
		t.Errorf("the changed file was not brought back to the host's: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "mine")); string(b) != "agent's\n" {
		t.Errorf("the agent's own file was not kept: %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("seeding wrote through the agent's symlink into %s: %v", outside, ents)
	}
	if st.Skipped == 0 {
		t.Errorf("the symlinked directory was not skipped: %+v", st)
	}
	// A missing host cache gives an empty copy.
	if _, err := seedCache(filepath.Join(root, "none"), filepath.Join(root, "copy2")); err != nil || !dirExists(filepath.Join(root, "copy2")) {
		t.Errorf("missing source: %v", err)
	}
}

func mustWrite(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}
