//go:build linux

package workscan

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watchedTree makes a workdir of 60 directories (d00-d59, each with s0 and
// s1 below it) whose records are trusted, and returns it.
func watchedTree(t *testing.T) string {
	t.Helper()
	shortRacyMargin(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for d := 0; d < 60; d++ {
		for _, s := range []string{"s0", "s1"} {
			write(t, filepath.Join(root, fmt.Sprintf("d%02d", d), s, "f"), "x")
		}
	}
	time.Sleep(50 * time.Millisecond)
	return root
}

// treeUnderWatch reads root's tree with a watch through an inotify
// instance of its own, and returns the tree, the watch and a function
// that ends the watch (reading every event queued, as the guard's end
// does) and returns the directories it vouches for.
func treeUnderWatch(t *testing.T, root string) (*Tree, *Watch, func() []string) {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	tw := NewWatch(fd, root)
	if tw == nil {
		t.Fatal("no watch")
	}
	tr := readTree(root, nil, nil, tw)
	if !tr.complete {
		t.Fatal("the tree was not read")
	}
	end := func() []string {
		drain(tw, fd)
		var out []string
		for d := range tw.clean(tr) {
			rel, _ := filepath.Rel(root, d)
			out = append(out, rel)
		}
		slices.Sort(out)
		return out
	}
	return tr, tw, end
}

// clean returns the directories of t the watch vouches for.
func (w *Watch) clean(t *Tree) map[string]bool {
	out := map[string]bool{}
	for d, td := range t.Dirs {
		if w.vouches(d, td, t) {
			out[d] = true
		}
	}
	return out
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// TestTreeWatch: the watch vouches for every directory nothing changed
// in, and for none whose entries, place or attributes changed, or below
// one whose entries or place changed (a directory swapped in under a
// recorded name); for nothing when its queue overflowed, when the
// workdir was replaced, or before its events were all read; and it keeps
// to its bound.
func TestTreeWatch(t *testing.T) {
	t.Run("nothing changed", func(t *testing.T) {
		root := watchedTree(t)
		tr, _, end := treeUnderWatch(t, root)
		if got := end(); len(got) != len(tr.Dirs) {
			t.Errorf("vouched for %d of %d directories", len(got), len(tr.Dirs))
		}
	})
	t.Run("changes", func(t *testing.T) {
		root := watchedTree(t)
		tr, _, end := treeUnderWatch(t, root)
		at := func(p string) string { return filepath.Join(root, p) }
		started := time.Now()
		write(t, at("d05/.envrc"), "planted")              // an entry created
		if err := os.Chmod(at("d07"), 0o700); err != nil { // the directory's own attributes (and what lies below: unsearchable with another mode)
			t.Fatal(err)
		}
		write(t, at("d09/s0/f"), "changed in place") // not an entry change
		// A directory swapped in under a recorded name: d40/s0 is now
		// d41's s0, which gains a planted file.
		mustRename(t, at("d40/s0"), at("d40/s0.old"))
		mustRename(t, at("d41/s0"), at("d40/s0"))
		write(t, at("d40/s0/.envrc"), "planted")
		// A recorded directory left unchanged, its parent moved away and
		// another made in its place: the path leads elsewhere.
		mustRename(t, at("d43"), at("d43.old"))
		write(t, at("d43/s0/.envrc"), "planted")
		got := end()
		vouched := func(p string) bool { _, ok := slices.BinarySearch(got, p); return ok }
		for _, p := range []string{".", "d05", "d07", "d07/s0", "d40", "d40/s0", "d41", "d41/s0", "d43", "d43/s0"} {
			if vouched(p) {
				t.Errorf("vouched for %s, which changed or lies below a change", p)
			}
		}
		for _, p := range []string{"d05/s0", "d06", "d08", "d09", "d09/s0", "d42/s1", "d59/s1"} {
			if !vouched(p) {
				t.Errorf("did not vouch for %s, which did not change", p)
			}
		}
		// The scan over the watched tree finds what a full walk finds.
		full, _ := scanJoin(root, started, nil)
		watched, _ := scanJoin(root, started, tr)
		if watched != full || !strings.Contains(watched, "d40/s0/.envrc") || !strings.Contains(watched, "d05/.envrc") || !strings.Contains(watched, "d43/s0/.envrc") {
			t.Errorf("the scan over the watched tree:\n%s\nfull:\n%s", watched, full)
		}
	})
	t.Run("an event before the reading is registered", func(t *testing.T) {
		// The guard's loop reads an event of a watch add placed before
		// the walk has read the directory and kept it (an agent that
		// follows the reading, through IN_ACCESS, can time that): the
		// event counts.
		root := watchedTree(t)
		prev := readTree(root, nil, nil, nil) // the previous run's, trusted
		fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		tw := NewWatch(fd, root)
		loop := func() { // what the guard's loop does with what is queued
			buf := make([]byte, 64*1024)
			for {
				n, err := unix.Read(fd, buf)
				if err != nil || n <= 0 {
					return
				}
				events(buf[:n], func(ev *unix.InotifyEvent, name string) { tw.Event(ev.Wd, ev.Mask, name, false) })
			}
		}
		tr := &Tree{Dirs: map[string]treeDir{}, watch: tw, watched: true}
		target := filepath.Join(root, "d10", "s0")
		var walk func(dir string)
		walk = func(dir string) { // readTree's steps, the agent acting between them
			tok, fi := tw.add(dir)
			fresh := tr.fresh
			ents, err := prev.list(dir, tr, fi)
			if err != nil {
				t.Fatal(err)
			}
			if dir == target {
				write(t, filepath.Join(dir, ".envrc"), "planted")
				loop()
			}
			td, ok := tr.Dirs[dir]
			tw.keep(dir, tok, fi, td, ok, tr.fresh > fresh)
			for _, e := range ents {
				if e.IsDir() {
					walk(filepath.Join(dir, e.N))
				}
			}
		}
		started := time.Now()
		walk(root)
		tr.complete = true
		drain(tw, fd)
		if tw.vouches(target, tr.Dirs[target], tr) {
			t.Error("vouched for the directory the agent changed before it was kept")
		}
		if got, _ := scanJoin(root, started, tr); !strings.Contains(got, "d10/s0/.envrc") {
			t.Errorf("the scan missed d10/s0/.envrc: %q", got)
		}
	})
	t.Run("records too recent to trust", func(t *testing.T) {
		// Read after their watches: vouched for while unchanged, from
		// the tree the walk read only (not from an earlier run's).
		root := watchedTree(t)
		racyMargin = time.Hour
		tr, tw, end := treeUnderWatch(t, root)
		write(t, filepath.Join(root, "d03", "new"), "x")
		got := end()
		if len(got) != len(tr.Dirs)-1 || slices.Contains(got, "d03") {
			t.Errorf("vouched for %d of %d directories (d03 changed): %v", len(got), len(tr.Dirs), got)
		}
		saved := &Tree{Dirs: tr.Dirs}
		if n := len(tw.clean(saved)); n != 0 {
			t.Errorf("vouched for %d untrusted records of another tree", n)
		}
	})
	t.Run("overflow", func(t *testing.T) {
		root := watchedTree(t)
		_, tw, end := treeUnderWatch(t, root)
		tw.Event(-1, unix.IN_Q_OVERFLOW, "", true)
		if got := end(); len(got) != 0 {
			t.Errorf("vouched for %d directories after an overflow", len(got))
		}
	})
	t.Run("workdir replaced", func(t *testing.T) {
		root := watchedTree(t)
		_, _, end := treeUnderWatch(t, root)
		mustRename(t, root, root+".old")
		if err := os.Mkdir(root, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(root + ".old") })
		if got := end(); len(got) != 0 {
			t.Errorf("vouched for %d directories of a workdir replaced", len(got))
		}
	})
	t.Run("not finished", func(t *testing.T) {
		root := watchedTree(t)
		tr, tw, _ := treeUnderWatch(t, root)
		if got := tw.clean(tr); len(got) != 0 {
			t.Errorf("vouched for %d directories before its events were read", len(got))
		}
	})
	t.Run("bound", func(t *testing.T) {
		defer func(old int) { treeWatchMax = old }(treeWatchMax)
		treeWatchMax = 10
		root := watchedTree(t)
		_, tw, end := treeUnderWatch(t, root)
		got := end()
		if tw.placed > 10 || len(got) == 0 || len(got) > 10 {
			t.Errorf("bound 10: %d watches placed, vouched for %d", tw.placed, len(got))
		}
	})
}

// drain does what the guard's drain does with the tree's watch
// (guard.watcher.drain): it gives the watch the events still queued on
// fd, then ends it. A read that fails leaves it vouching for nothing.
func drain(tw *Watch, fd int) {
	defer tw.Finish()
	buf := make([]byte, 64*1024)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			tw.Event(-1, unix.IN_Q_OVERFLOW, "", true)
			return
		}
		if n == 0 {
			return // all read
		}
		n, err = unix.Read(fd, buf)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil || n <= 0 {
			tw.Event(-1, unix.IN_Q_OVERFLOW, "", true)
			return
		}
		events(buf[:n], func(ev *unix.InotifyEvent, name string) { tw.Event(ev.Wd, ev.Mask, name, true) })
	}
}

// events calls f for each inotify event in buf (as the guard's loop
// reads them).
func events(buf []byte, f func(ev *unix.InotifyEvent, name string)) {
	for len(buf) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[0]))
		size := unix.SizeofInotifyEvent + int(ev.Len)
		if size > len(buf) {
			return
		}
		name := strings.TrimRight(string(buf[unix.SizeofInotifyEvent:size]), "\x00")
		buf = buf[size:]
		f(ev, name)
	}
}

// liveWatch starts, as the guard's Watch does, a walk of root's tree
// with a watch through an inotify instance of its own, and a loop that
// gives the watch each event as it comes (as the guard's loop does for
// a directory it does not watch itself: shared false). It returns the
// prewalk, the watch and a function that ends the loop and the watch
// (drain) once the run is over.
func liveWatch(t *testing.T, root string) (*Prewalk, *Watch, func()) {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	tw := NewWatch(fd, root)
	if tw == nil {
		t.Fatal("no watch")
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64*1024)
		for {
			select {
			case <-stop:
				return
			default:
			}
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, err := unix.Poll(fds, 50); err != nil || n == 0 {
				continue // the loop's period: stop is looked at each 50 ms
			}
			n, err := unix.Read(fd, buf)
			if err != nil || n <= 0 {
				continue
			}
			events(buf[:n], func(ev *unix.InotifyEvent, name string) { tw.Event(ev.Wd, ev.Mask, name, false) })
		}
	}()
	pre := StartPrewalk(root, "", tw)
	end := func() {
		close(stop)
		<-done
		drain(tw, fd)
	}
	return pre, tw, end
}

// TestWatchedScanAsksNothing: with the watch's events given as they come
// (as the guard's loop gives them), a run in which nothing changed ends
// without asking any recorded directory again; without a watch (none can
// be placed) every trusted record is asked. (Through the guard:
// guard.TestGuardTreeWatch.)
func TestWatchedScanAsksNothing(t *testing.T) {
	root := watchedTree(t)
	run := func() (string, int64) {
		pre, _, end := liveWatch(t, root)
		pre.Previous() // the walk is over: the watch is in place
		end()
		dirChecks.Store(0)
		out, _ := scanJoin(root, time.Now(), pre.Finish(nil))
		return out, dirChecks.Load()
	}
	if out, n := run(); out != "" || n != 0 {
		t.Errorf("nothing changed: %d directories asked again, findings %q", n, out)
	}
	defer func(old int) { treeWatchMax = old }(treeWatchMax)
	treeWatchMax = 0
	if _, n := run(); n < 100 {
		t.Errorf("without a watch: %d directories asked again", n)
	}
}

// benchWatchedTree reads root's tree again with a watch (starting from
// tr, as a run does from the tree the previous one left) and ends the
// watch: the scan over it asks no directory nothing changed in.
func benchWatchedTree(b *testing.B, root string, tr *Tree) *Tree {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Close(fd) })
	tw := NewWatch(fd, root)
	watched := readTree(root, nil, tr, tw)
	drain(tw, fd)
	return watched
}

// TestTreeWatchRemoves: a directory whose entries changed more than the
// watch remembers (a build's output) has its watch removed while the run
// goes on, and nothing below it is vouched for; its siblings still are.
func TestTreeWatchRemoves(t *testing.T) {
	root := watchedTree(t)
	pre, tw, end := liveWatch(t, root)
	pre.Previous() // the walk is over: the watch is in place
	d30 := filepath.Join(root, "d30")
	tw.mu.Lock()
	wd := tw.dirs[d30].wd
	tw.mu.Unlock()
	for i := 0; i <= treeEventsMax; i++ {
		write(t, filepath.Join(d30, fmt.Sprintf("out%03d", i)), "x")
	}
	waitFor(t, "the watch of d30 removed", func() bool {
		tw.mu.Lock()
		defer tw.mu.Unlock()
		return tw.removed[wd]
	})
	end()
	clean := tw.clean(pre.t)
	for _, p := range []string{"d30", "d30/s0", "d30/s1"} {
		if clean[filepath.Join(root, p)] {
			t.Errorf("vouched for %s", p)
		}
	}
	if !clean[filepath.Join(root, "d31", "s0")] {
		t.Errorf("did not vouch for d31/s0")
	}
}

// TestTreeWatchPatched: a directory whose entries changed by a few names
// is not read again: its entries are its record's and the changed names,
// each asked by lstat; the scan finds what a full walk finds. Not when its
// own attributes changed, nor past treeEventsMax events.
func TestTreeWatchPatched(t *testing.T) {
	root := watchedTree(t)
	for i := 0; i < 100; i++ {
		write(t, filepath.Join(root, "d03", fmt.Sprintf("f%03d", i)), "x")
	}
	time.Sleep(30 * time.Millisecond)
	tr, tw, end := treeUnderWatch(t, root)
	started := time.Now()
	at := func(p string) string { return filepath.Join(root, p) }
	write(t, at("d03/new"), "x") // made and removed
	if err := os.Remove(at("d03/new")); err != nil {
		t.Fatal(err)
	}
	write(t, at("d03/.envrc"), "planted")
	mustRename(t, at("d03/s0"), at("d03/s2"))
	if err := os.Mkdir(at("d03/.git"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, at("d03/.git/config"), "[core]\n\tfsmonitor = true\n")
	write(t, at("d04/new"), "x")
	if err := os.Chmod(at("d04"), 0o700); err != nil {
		t.Fatal(err)
	}
	end()
	p, ok := tw.patched(at("d03"), tr.Dirs[at("d03")], tr)
	var names []string
	for _, e := range p.Ents {
		names = append(names, e.N)
	}
	if !ok || strings.Join(names, " ") != ".envrc .git s1 s2" {
		t.Errorf("d03 patched %v: %q, want .envrc .git s1 s2", ok, names)
	}
	if _, ok := tw.patched(at("d04"), tr.Dirs[at("d04")], tr); ok {
		t.Error("d04, whose mode changed, patched")
	}
	dirReads.Store(0)
	watched, _ := scanJoin(root, started, tr)
	reads := dirReads.Load()
	full, _ := scanJoin(root, started, nil)
	if watched != full || !strings.Contains(watched, "d03/.envrc") || !strings.Contains(watched, "d03/.git/config") {
		t.Errorf("the scan over the watched tree:\n%s\nfull:\n%s", watched, full)
	}
	// Read again: d04 (its mode), d03/s2 (moved: not at its recorded
	// path), d03/.git (new). Not d03.
	if reads > 3 {
		t.Errorf("the scan read %d directories, want at most 3 (d04, d03/s2, d03/.git)", reads)
	}
}

// TestTreeWatchPatchedNotTrusted: a change after the watch's events were
// read (another run's agent in the same workdir, the user) is in no event;
// a patched record, which has the directory's ctime of the scan's moment,
// is never trusted, so the next run reads the directory again and finds
// what was planted below the new entry.
func TestTreeWatchPatchedNotTrusted(t *testing.T) {
	root := watchedTree(t)
	tr, _, end := treeUnderWatch(t, root)
	at := func(p string) string { return filepath.Join(root, p) }
	started := time.Now()
	write(t, at("d03/a"), "x") // an event in d03: patched, not vouched
	end()
	if err := os.Mkdir(at("d03/x"), 0o755); err != nil { // after the events were read
		t.Fatal(err)
	}
	time.Sleep(3 * racyMargin)
	_, next := scanJoin(root, started, tr)
	if next.Dirs[at("d03")].Trusted {
		t.Error("the patched record of d03 is trusted")
	}
	time.Sleep(3 * racyMargin)
	started = time.Now()
	write(t, at("d03/x/.envrc"), "planted") // the next run's agent
	got, _ := scanWith(root, started, readTree(root, nil, next, nil), next)
	if !strings.Contains(got, "d03/x/.envrc") {
		t.Errorf("the next run's scan missed d03/x/.envrc:\n%s", got)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
