package guard

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// takeSince reads again only the files whose identity (inode, size,
// ctime) changed since a settled snapshot; a file read within racyMargin
// of its last change is read again every time.
func TestTakeSince(t *testing.T) {
	dir := t.TempDir()
	hooks := filepath.Join(dir, "hooks")
	for _, n := range []string{"a.sample", "b.sample", "c.sample"} {
		write(t, filepath.Join(hooks, n), "#!/bin/sh\necho "+n+"\n")
	}
	reads := func(f func() snapshot) (snapshot, int64) {
		before := fileReads.Load()
		s := f()
		return s, fileReads.Load() - before
	}

	// Just written: not settled, so every file is read again.
	base := take(hooks)
	if s, n := reads(func() snapshot { return takeSince(protect.Entry{Path: hooks}, base) }); n != 3 || !s.same(base) {
		t.Errorf("files changed within racyMargin: %d read (want 3), same %v", n, s.same(base))
	}

	defer func(m time.Duration) { racyMargin = m }(racyMargin)
	racyMargin = -time.Hour // every ctime counts as settled
	base = take(hooks)
	if s, n := reads(func() snapshot { return takeSince(protect.Entry{Path: hooks}, base) }); n != 0 || !s.same(base) {
		t.Errorf("nothing changed: %d files read (want 0), same %v", n, s.same(base))
	}

	// A change in place (same size, a later clock tick), a file replaced
	// by rename, a file added: each read again and seen; the rest not.
	time.Sleep(20 * time.Millisecond)
	write(t, filepath.Join(hooks, "a.sample"), "#!/bin/sh\necho X.sample\n")
	write(t, filepath.Join(dir, "new"), "#!/bin/sh\necho B.sample\n")
	if err := os.Rename(filepath.Join(dir, "new"), filepath.Join(hooks, "b.sample")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(hooks, "pre-commit"), "#!/bin/sh\ncurl evil\n")
	s, n := reads(func() snapshot { return takeSince(protect.Entry{Path: hooks}, base) })
	if n != 3 {
		t.Errorf("%d files read, want 3 (the changed, the replaced, the new)", n)
	}
	got := base.changedEntries(s)
	want := []string{"a.sample", "b.sample", "pre-commit"}
	if len(got) != len(want) {
		t.Fatalf("changed entries %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("changed entries %q, want %q", got, want)
		}
	}
	if c := s.entries["c.sample"]; !c.same(base.entries["c.sample"]) || string(c.content) != "#!/bin/sh\necho c.sample\n" {
		t.Errorf("the unchanged file's snapshot was not kept: %+v", c)
	}

	// A mode change (chmod sets the ctime too) is seen.
	time.Sleep(20 * time.Millisecond)
	base = take(hooks)
	if err := os.Chmod(filepath.Join(hooks, "c.sample"), 0o755); err != nil {
		t.Fatal(err)
	}
	if s := takeSince(protect.Entry{Path: hooks}, base); s.same(base) {
		t.Error("a mode change was not seen")
	}
}

// BenchmarkAuditHooks: the final audit of a .git/hooks as git init
// makes it (13 sample hooks, 27 KB), read whole (take) and against a
// settled snapshot from before the run (takeSince).
func BenchmarkAuditHooks(b *testing.B) {
	hooks := filepath.Join(b.TempDir(), "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 13; i++ {
		body := make([]byte, 2100)
		for j := range body {
			body[j] = byte('a' + (i+j)%26)
		}
		if err := os.WriteFile(filepath.Join(hooks, fmt.Sprintf("hook-%d.sample", i)), body, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	defer func(m time.Duration) { racyMargin = m }(racyMargin)
	racyMargin = -time.Hour // as for hooks older than two seconds
	base := take(hooks)
	b.Run("take", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			take(hooks)
		}
	})
	b.Run("takeSince", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			takeSince(protect.Entry{Path: hooks}, base)
		}
	})
}
