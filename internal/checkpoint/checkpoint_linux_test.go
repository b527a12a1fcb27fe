//go:build linux

package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tree makes a small project: tracked-looking files, an ignored .env and
// node_modules, an empty directory, a 0600 file, a symlink, a hook.
func tree(t *testing.T) (stateRoot, workdir string) {
	t.Helper()
	base := t.TempDir()
	stateRoot, workdir = filepath.Join(base, "state"), filepath.Join(base, "w")
	files := map[string]string{
		"README":                "read me\n",
		"src/main.go":           "package main\n",
		"src/lib/x.go":          "package lib\n",
		".gitignore":            "node_modules/\n.env\n*.log\n",
		".env":                  "TOKEN=1\n",
		"node_modules/m.js":     "module\n",
		".git/HEAD":             "ref: refs/heads/main\n",
		".git/hooks/pre-commit": "#!/bin/sh\ntouch " + filepath.Join(base, "RAN") + "\n",
		"sub/.git":              "gitdir: ../.git/modules/sub\n",
		"sub/s.txt":             "sub\n",
	}
	for p, c := range files {
		full := filepath.Join(workdir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.Chmod(filepath.Join(workdir, ".git/hooks/pre-commit"), 0o755))
	must(t, os.WriteFile(filepath.Join(workdir, "secret"), []byte("s\n"), 0o600))
	must(t, os.Mkdir(filepath.Join(workdir, "empty"), 0o750))
	must(t, os.Symlink("src/main.go", filepath.Join(workdir, "link")))
	return stateRoot, workdir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestTakeRecordsAndSkips(t *testing.T) {
	root, w := tree(t)
	s, err := Open(root, w, Settings{})
	must(t, err)
	s.racyAfter = time.Now().Add(time.Hour)
	m, err := s.Take(nil)
	must(t, err)
	idx := index(m)
	for _, p := range []string{"README", "src/lib/x.go", ".env", "secret", "empty", "link", ".git/hooks/pre-commit", "sub"} {
		if idx[p] == nil {
			t.Errorf("%s not recorded", p)
		}
	}
	if idx["node_modules/m.js"] != nil || !under("node_modules/m.js", m.Skipped) {
		t.Errorf("node_modules recorded, want it left out and named: %v", m.Skipped)
	}
	if e := idx["secret"]; e == nil || e.Mode != 0o600 {
		t.Errorf("secret: %+v, want mode 0600", e)
	}
	if e := idx["link"]; e == nil || e.Type != TypeSymlink || e.Target != "src/main.go" {
		t.Errorf("link: %+v", e)
	}
	if e := idx["sub"]; e == nil || !e.Repo {
		t.Errorf("sub: %+v, want a nested repository", e)
	}
	// Unchanged: the same checkpoint, nothing read or written (the files
	// are not new enough to be racily clean: ctime is set by the kernel,
	// so the cache is given a later bound instead).
	s2, _ := Open(root, w, Settings{})
	s2.racyAfter = time.Now().Add(time.Hour)
	m2, err := s2.Take(nil)
	must(t, err)
	if m2.ID != m.ID || s2.wrote != 0 {
		t.Errorf("unchanged tree: checkpoint %s (want %s), %d blobs written", m2.ID, m.ID, s2.wrote)
	}
}

// TestRestoreExact is the agent's damage undone, byte, mode, symlink and
// empty directory alike; a symlink planted in place of a directory is
// removed, and nothing is written through it.
func TestRestoreExact(t *testing.T) {
	root, w := tree(t)
	victim := filepath.Join(filepath.Dir(w), "victim")
	must(t, os.Mkdir(victim, 0o755))
	s, err := Open(root, w, Settings{})
	must(t, err)
	before, err := s.Take(nil)
	must(t, err)

	must(t, os.RemoveAll(filepath.Join(w, "src")))
	must(t, os.Symlink(victim, filepath.Join(w, "src")))
	must(t, os.WriteFile(filepath.Join(w, "README"), []byte("rewritten\n"), 0o644))
	must(t, os.Remove(filepath.Join(w, ".env")))
	must(t, os.Remove(filepath.Join(w, "empty")))
	must(t, os.Mkdir(filepath.Join(w, "newdir"), 0o755))
	must(t, os.WriteFile(filepath.Join(w, "new0600"), []byte("n"), 0o600))
	must(t, os.Chmod(filepath.Join(w, "secret"), 0o644))
	must(t, os.WriteFile(filepath.Join(w, ".gitattributes"), []byte("* filter=evil\n"), 0o644))
	must(t, os.Remove(filepath.Join(w, "link")))
	must(t, os.Symlink("/etc/passwd", filepath.Join(w, "link")))

	cur, err := s.Take(before)
	must(t, err)
	if len(Diff(before, cur)) == 0 {
		t.Fatal("no change seen")
	}
	must(t, s.Restore(before, cur))
	after, err := s.Scan(before)
	must(t, err)
	if d := Diff(before, after); len(d) != 0 || after.Digest != before.Digest {
		t.Fatalf("restored tree differs: %v (digest %s, want %s)", d, after.Digest, before.Digest)
	}
	if ents, _ := os.ReadDir(victim); len(ents) != 0 {
		t.Fatalf("written through the planted symlink: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(w), "RAN")); err == nil {
		t.Fatal("a hook ran")
	}
	// The state before the restore is kept: restoring it brings the
	// damage back (an undo of the undo).
	now, err := s.Take(before)
	must(t, err)
	must(t, s.Restore(cur, now))
	again, err := s.Scan(before)
	must(t, err)
	if d := Diff(cur, again); len(d) != 0 {
		t.Fatalf("undo of the undo differs: %v", d)
	}
}

func TestOtherVersionAndCorrupt(t *testing.T) {
	root, w := tree(t)
	s, err := Open(root, w, Settings{})
	must(t, err)
	m, err := s.Take(nil)
	must(t, err)
	// A corrupt manifest: one clear error, the file left as it is.
	p := s.path("manifests", m.ID+".json.gz")
	must(t, os.WriteFile(p, []byte("garbage"), 0o600))
	if _, err := s.Manifest(m.ID); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("corrupt manifest: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "garbage" {
		t.Error("corrupt manifest changed")
	}
	// A store of layout 1 (before deltas) is read, and marked 2 so that
	// an older build refuses it.
	must(t, os.WriteFile(s.path("format"), []byte("agent-sandbox checkpoint store 1\nworkdir "+w+"\n"), 0o600))
	_, err = Open(root, w, Settings{})
	must(t, err)
	if b, _ := os.ReadFile(s.path("format")); string(b) != "agent-sandbox checkpoint store 2\nworkdir "+w+"\n" {
		t.Errorf("a store of layout 1 is marked %q", b)
	}
	// Another version's store.
	must(t, os.WriteFile(s.path("format"), []byte("agent-sandbox checkpoint store 99\n"), 0o600))
	if _, err := Open(root, w, Settings{}); err == nil || !strings.Contains(err.Error(), "another version") {
		t.Errorf("other version: %v", err)
	}
}

func TestMissingBlobChangesNothing(t *testing.T) {
	root, w := tree(t)
	s, err := Open(root, w, Settings{})
	must(t, err)
	before, err := s.Take(nil)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(w, "README"), []byte("new\n"), 0o644))
	cur, err := s.Take(before)
	must(t, err)
	must(t, os.Remove(s.objectPath(index(before)["README"].Hash)))
	if err := s.Restore(before, cur); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("restore with a missing blob: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(w, "README")); string(b) != "new\n" {
		t.Fatal("the workdir was changed")
	}
}

func TestSizeLimit(t *testing.T) {
	root, w := tree(t)
	s, err := Open(root, w, Settings{MaxBytes: 10})
	must(t, err)
	if _, err := s.Take(nil); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
}

func TestUndoRefusesWhileLive(t *testing.T) {
	root, w := tree(t)
	a, err := Begin(BeginOptions{StateRoot: root, Workdir: w, Command: "x", Mode: ModeOn, Warn: io.Discard})
	must(t, err)
	err = Undo(root, w, Settings{}, UndoOptions{Out: io.Discard, Err: io.Discard, Confirm: func() bool { return true }})
	if !errors.Is(err, ErrLive) {
		t.Fatalf("undo during a run: %v", err)
	}
	a.End(0)
	err = Undo(root, w, Settings{}, UndoOptions{Out: io.Discard, Err: io.Discard})
	if err != nil {
		t.Fatalf("undo after the run: %v", err)
	}
}

func TestRequiredFailureRefuses(t *testing.T) {
	root, w := tree(t)
	must(t, os.MkdirAll(filepath.Join(root, "checkpoints"), 0o700))
	must(t, os.WriteFile(StoreDir(root, w), []byte("not a directory"), 0o600))
	if _, err := Begin(BeginOptions{StateRoot: root, Workdir: w, Mode: ModeRequired, Warn: io.Discard}); err == nil {
		t.Fatal("required checkpoint failed silently")
	}
	var warn strings.Builder
	a, err := Begin(BeginOptions{StateRoot: root, Workdir: w, Mode: ModeOn, Warn: &warn})
	if err != nil || !strings.Contains(warn.String(), "without a checkpoint") {
		t.Fatalf("mode on: %v, warned %q", err, warn.String())
	}
	a.End(0)
}

func TestIgnoreRules(t *testing.T) {
	rs := parseRules([]string{"# c", "node_modules/", "*.log", "/build", "docs/**/*.tmp", "!keep.log", ""})
	for _, c := range []struct {
		p    string
		dir  bool
		want bool
	}{
		{"node_modules", true, true}, {"a/node_modules", true, true}, {"node_modules", false, false},
		{"x.log", false, true}, {"a/b/x.log", false, true}, {"build", true, true}, {"a/build", true, false},
		{"docs/a/b/c.tmp", false, true}, {"docs/c.tmp", false, true}, {"src/c.tmp", false, false},
	} {
		if got := rs.ignored(c.p, c.dir); got != c.want {
			t.Errorf("ignored(%q, %v) = %v, want %v", c.p, c.dir, got, c.want)
		}
	}
}

// TestRestoreKeepsWhatItDidNotRecord: what the checkpoint of the current
// state left out (a FIFO, an ignored file over the cap, in a directory the
// agent made) is not deleted by the undo: nothing is lost.
func TestRestoreKeepsWhatItDidNotRecord(t *testing.T) {
	root, w := tree(t)
	s, err := Open(root, w, Settings{IgnoredFileMax: 4})
	must(t, err)
	before, err := s.Take(nil)
	must(t, err)
	must(t, os.MkdirAll(filepath.Join(w, "made/deep"), 0o755))
	must(t, unix.Mkfifo(filepath.Join(w, "made/deep/pipe"), 0o600))
	must(t, os.WriteFile(filepath.Join(w, "made/big.log"), []byte("more than four bytes"), 0o644))
	must(t, os.WriteFile(filepath.Join(w, "made/small"), []byte("x"), 0o644))
	cur, err := s.Take(before)
	must(t, err)
	must(t, s.Restore(before, cur))
	for _, p := range []string{"made/deep/pipe", "made/big.log"} {
		if _, err := os.Lstat(filepath.Join(w, p)); err != nil {
			t.Errorf("%s was not kept by the checkpoint and is gone: %v", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(w, "made/small")); err == nil {
		t.Error("made/small (recorded) was not removed")
	}
}

func TestPruneByAge(t *testing.T) {
	root, w := tree(t)
	var warn strings.Builder
	for i := 0; i < 3; i++ {
		a, err := Begin(BeginOptions{StateRoot: root, Workdir: w, Command: fmt.Sprintf("agent%d", i), Mode: ModeOn, Warn: &warn})
		must(t, err)
		must(t, os.WriteFile(filepath.Join(w, "README"), []byte(fmt.Sprintf("round %d\n", i)), 0o644))
		a.End(0)
	}
	s, err := Open(root, w, Settings{KeepAge: time.Hour})
	must(t, err)
	runs, _, err := s.Runs()
	must(t, err)
	if len(runs) != 3 {
		t.Fatalf("%d runs recorded, want 3", len(runs))
	}
	// The first two are made old; the latest is always kept.
	for _, r := range runs[:2] {
		r.Start = r.Start.Add(-48 * time.Hour)
		must(t, s.SaveRun(r))
	}
	lines := s.Prune(time.Now())
	if len(lines) != 2 || !strings.Contains(lines[0], "pruned run "+runs[0].ID) || !strings.Contains(lines[0], "older than") {
		t.Fatalf("prune said %q", lines)
	}
	left, _, _ := s.Runs()
	if len(left) != 1 || left[0].ID != runs[2].ID {
		t.Fatalf("runs left: %v", left)
	}
	m, err := s.Manifest(left[0].Before)
	must(t, err)
	must(t, s.CheckBlobs(m))
	if _, err := s.Manifest(runs[0].Before); err == nil && runs[0].Before != left[0].Before && runs[0].Before != left[0].After {
		t.Error("a pruned run's checkpoint is still there")
	}
}
