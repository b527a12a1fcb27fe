//go:build linux

package checkpoint

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestDeltaChain: later checkpoints that change little are deltas of the
// one before; each reads back as the tree a fresh walk records, through
// a chain of them, and the chain is cut at maxDeltaDepth.
func TestDeltaChain(t *testing.T) {
	root, w := tree(t)
	s, err := Open(root, w, Settings{})
	must(t, err)
	s.racyAfter = time.Now().Add(time.Hour)
	first, err := s.Take(nil)
	must(t, err)
	if _, err := os.Stat(s.manifestPath(first.ID)); err != nil {
		t.Fatalf("the first checkpoint is not whole: %v", err)
	}
	ids := []string{first.ID}
	changes := []func(i int){
		func(i int) { must(t, os.WriteFile(filepath.Join(w, "README"), []byte(fmt.Sprint("round ", i)), 0o644)) },
		func(i int) { must(t, os.MkdirAll(filepath.Join(w, fmt.Sprintf("new%d/a-b", i)), 0o755)) },
		func(i int) {
			must(t, os.Remove(filepath.Join(w, "link")))
			must(t, os.Symlink(fmt.Sprint("t", i), filepath.Join(w, "link")))
		},
		func(i int) { must(t, os.Chmod(filepath.Join(w, "secret"), os.FileMode(0o600|(i/6+1)%2*0o040))) },
		func(i int) { must(t, os.RemoveAll(filepath.Join(w, fmt.Sprintf("new%d", i-3)))) },
		func(i int) {
			must(t, os.WriteFile(filepath.Join(w, "src", fmt.Sprintf("a.%d", i)), []byte("x"), 0o644))
		},
	}
	for i := 0; i < maxDeltaDepth+3; i++ {
		changes[i%len(changes)](i)
		m, err := s.Take(nil)
		must(t, err)
		if !sort.SliceIsSorted(m.Entries, func(a, b int) bool { return cmpWalk(m.Entries[a].Path, m.Entries[b].Path) < 0 }) {
			t.Fatalf("checkpoint %d: entries out of walk order", i)
		}
		back, err := s.Manifest(m.ID)
		must(t, err)
		if !reflect.DeepEqual(back.Entries, m.Entries) || back.Digest != m.Digest || !reflect.DeepEqual(back.Rules, m.Rules) || !reflect.DeepEqual(back.Skipped, m.Skipped) {
			t.Fatalf("checkpoint %d reads back as another tree", i)
		}
		if m.ID == ids[len(ids)-1] {
			t.Fatalf("checkpoint %d: the change was not seen", i)
		}
		_, derr := os.Stat(s.deltaPath(m.ID))
		h, _ := s.head()
		switch {
		case i < maxDeltaDepth && (derr != nil || h.Depth != i+1):
			t.Errorf("checkpoint %d (one change) is not a delta of depth %d: %v, depth %d", i, i+1, derr, h.Depth)
		case i == maxDeltaDepth && (derr == nil || h.Depth != 0):
			t.Errorf("checkpoint %d: a chain of %d deltas, want it cut at %d", i, h.Depth, maxDeltaDepth)
		}
		ids = append(ids, m.ID)
	}
	// Every one still reads back, and a restore to a delta is exact.
	for _, id := range ids {
		if _, err := s.Manifest(id); err != nil {
			t.Errorf("checkpoint %s: %v", id, err)
		}
	}
	// A change of most of the tree is written whole.
	for i := 0; i < 100; i++ {
		must(t, os.WriteFile(filepath.Join(w, fmt.Sprintf("bulk%02d", i)), []byte("b"), 0o644))
	}
	m, err := s.Take(nil)
	must(t, err)
	if _, err := os.Stat(s.manifestPath(m.ID)); err != nil {
		t.Errorf("a checkpoint of a much changed tree is a delta")
	}
}

// TestDeltaCorruptRefused: a delta that does not give the tree it
// recorded (here: a removal taken out of it), or whose base is gone, is
// a corrupt store, never a smaller tree.
func TestDeltaCorruptRefused(t *testing.T) {
	root, w := tree(t)
	s, err := Open(root, w, Settings{})
	must(t, err)
	s.racyAfter = time.Now().Add(time.Hour)
	base, err := s.Take(nil)
	must(t, err)
	must(t, os.Remove(filepath.Join(w, "README")))
	m, err := s.Take(nil)
	must(t, err)
	d, err := s.readDelta(m.ID)
	must(t, err)
	if len(d.Removed) != 1 || d.Removed[0] != "README" {
		t.Fatalf("delta removes %q, want README", d.Removed)
	}
	d.Removed = nil
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	must(t, json.NewEncoder(zw).Encode(d))
	must(t, zw.Close())
	must(t, os.WriteFile(s.deltaPath(m.ID), buf.Bytes(), 0o600))
	if _, err := s.Manifest(m.ID); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("a tampered delta: %v, want a corrupt store", err)
	}
	must(t, os.Remove(s.manifestPath(base.ID)))
	if _, err := s.Manifest(m.ID); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a delta without its base: %v, want its base named missing", err)
	}
}

// TestPruneUnchains: a kept checkpoint stored as a delta of a pruned one
// is written whole, and the pruned one goes.
func TestPruneUnchains(t *testing.T) {
	root, w := tree(t)
	s, err := Open(root, w, Settings{})
	must(t, err)
	s.racyAfter = time.Now().Add(time.Hour)
	a, err := s.Take(nil)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(w, "README"), []byte("two"), 0o644))
	b, err := s.Take(nil)
	must(t, err)
	if _, err := os.Stat(s.deltaPath(b.ID)); err != nil {
		t.Fatalf("the second checkpoint is not a delta: %v", err)
	}
	s.removeRuns([]*Run{{ID: "r1", Before: a.ID, After: b.ID}, {ID: "r2", Before: b.ID}}, map[string]bool{"r1": true})
	if s.hasManifest(a.ID) {
		t.Error("the pruned checkpoint is still there")
	}
	if _, err := os.Stat(s.deltaPath(b.ID)); err == nil {
		t.Error("the kept checkpoint is still a delta of the pruned one")
	}
	back, err := s.Manifest(b.ID)
	must(t, err)
	if !reflect.DeepEqual(back.Entries, b.Entries) {
		t.Error("the kept checkpoint reads back as another tree")
	}
	must(t, s.CheckBlobs(back))
}

func TestCmpWalk(t *testing.T) {
	in := []string{"a", "a.txt", "a/b", "a/b/c", "a-b", "a/.x", "b", "a/b.c", "A", "a/b/c/d", "ab"}
	sort.Slice(in, func(i, j int) bool { return cmpWalk(in[i], in[j]) < 0 })
	want := []string{"A", "a", "a/.x", "a/b", "a/b/c", "a/b/c/d", "a/b.c", "a-b", "a.txt", "ab", "b"}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("walk order %q, want %q", in, want)
	}
}

// TestWalkReadAhead: a tree with more directories than are read ahead
// at once is recorded as a walk without read-ahead records it, and a
// walk that stops on an error (the size limit) leaves no descriptor
// open.
func TestWalkReadAhead(t *testing.T) {
	root, w := tree(t)
	for i := 0; i < prefetchMax+100; i++ {
		d := filepath.Join(w, "wide", fmt.Sprintf("d%03d", i%37), fmt.Sprintf("e%03d", i))
		must(t, os.MkdirAll(d, 0o755))
		must(t, os.WriteFile(filepath.Join(d, "f"), []byte(fmt.Sprint(i)), 0o644))
	}
	s, err := Open(root, w, Settings{})
	must(t, err)
	m, err := s.Scan(nil)
	must(t, err)
	var want []string
	must(t, filepath.Walk(w, func(p string, info os.FileInfo, err error) error {
		must(t, err)
		rel, _ := filepath.Rel(w, p)
		if rel == "node_modules" {
			return filepath.SkipDir
		}
		if rel != "." && rel != ".env" {
			want = append(want, filepath.ToSlash(rel))
		}
		return nil
	}))
	sort.Slice(want, func(i, j int) bool { return cmpWalk(want[i], want[j]) < 0 })
	var got []string
	for _, e := range m.Entries {
		if e.Path != ".env" {
			got = append(got, e.Path)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("recorded %d paths, want %d (a walk's order)", len(got), len(want))
	}
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		must(t, err)
		return len(ents)
	}
	before := fds()
	small, err := Open(root+"2", w, Settings{MaxBytes: 200})
	must(t, err)
	for i := 0; i < 3; i++ {
		if _, err := small.Take(nil); err == nil {
			t.Fatal("a walk over the size limit did not stop")
		}
	}
	if after := fds(); after > before {
		t.Errorf("%d descriptors open after walks that stopped, %d before", after, before)
	}
}

// TestUnreadableLeftOut: a directory and a file the user cannot read are
// named and left out (the directory is opened ahead by the read-ahead),
// and the walk goes on. It needs an ordinary user: root reads them.
func TestUnreadableLeftOut(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a mode-0 directory; run as an ordinary user")
	}
	root, w := tree(t)
	must(t, os.MkdirAll(filepath.Join(w, "locked/in"), 0o755))
	must(t, os.WriteFile(filepath.Join(w, "shut"), []byte("x"), 0o000))
	must(t, os.Chmod(filepath.Join(w, "locked"), 0o000))
	t.Cleanup(func() { os.Chmod(filepath.Join(w, "locked"), 0o755) })
	s, err := Open(root, w, Settings{})
	must(t, err)
	m, err := s.Take(nil)
	must(t, err)
	whys := map[string]string{}
	for _, sk := range m.Skipped {
		whys[sk.Path] = sk.Why
	}
	if whys["locked"] != "unreadable directory" || whys["shut"] != "unreadable file" {
		t.Errorf("left out: %v", m.Skipped)
	}
	if index(m)["README"] == nil {
		t.Error("the walk stopped at the unreadable directory")
	}
}

// TestListingReused: a directory whose modification and change times
// are the ones recorded (and old enough) is not read again, its listing
// taken from the head cache; one where a name was added, removed or
// renamed since is read, and the change recorded.
func TestListingReused(t *testing.T) {
	root, w := tree(t)
	time.Sleep(20 * time.Millisecond)
	s, err := Open(root, w, Settings{})
	must(t, err)
	s.racyAfter = time.Now() // the tree is older than this: trusted
	time.Sleep(20 * time.Millisecond)
	first, err := s.Take(nil)
	must(t, err)
	s.listed.Store(0)
	again, err := s.Take(nil)
	must(t, err)
	if again.ID != first.ID || s.listed.Load() == 0 {
		t.Fatalf("unchanged tree: checkpoint %s (want %s), %d listings reused", again.ID, first.ID, s.listed.Load())
	}
	all := s.listed.Load()
	for _, change := range []func(){
		func() { must(t, os.WriteFile(filepath.Join(w, "src/lib/new.go"), []byte("x"), 0o644)) },
		func() { must(t, os.Rename(filepath.Join(w, "src/lib/new.go"), filepath.Join(w, "src/lib/renamed.go"))) },
		func() { must(t, os.Remove(filepath.Join(w, "src/lib/x.go"))) },
	} {
		time.Sleep(20 * time.Millisecond)
		change()
		s.listed.Store(0)
		m, err := s.Take(nil)
		must(t, err)
		n := s.listed.Load()
		fresh, err := s.Scan(nil)
		must(t, err)
		var got, want []string
		for _, e := range m.Entries {
			got = append(got, e.Path)
		}
		for _, e := range fresh.Entries {
			want = append(want, e.Path)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after a change in src/lib: recorded %q, a fresh walk %q", got, want)
		}
		if n != all-1 {
			t.Errorf("%d listings reused after a change in one directory, want %d", n, all-1)
		}
	}
}
