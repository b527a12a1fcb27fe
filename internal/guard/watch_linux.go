//go:build linux

package guard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// watcher follows the ledger's entries with inotify: the directory that
// holds each (its nearest existing ancestor while it is missing), each
// pinned directory's parent, and, for engines that bind nothing, each
// hooks directory's inside.
type watcher struct {
	g    *Guard
	f    *os.File // the inotify instance, non-blocking (Go's poller)
	fd   int      // f's descriptor
	mu   sync.Mutex
	wds  map[int32]string // watch descriptor → directory
	dirs map[string]int32 // directory → watch descriptor
	// ids are the directory each watch descriptor was placed on (device
	// and inode): a watched directory renamed away and a new one made at
	// its path is watched again (the old watch follows the old one).
	ids map[int32]dirID
	// pins are the view's pinned directories: a host that replaces one
	// detaches every mount below it.
	pins map[string]bool
	// masks are the view's masked paths (Watch).
	masks   map[string]bool
	once    sync.Once
	done    chan struct{}
	started bool
}

// watchMask is what a watched directory reports: entries created,
// removed, renamed in or out, written, their attributes changed, and the
// directory itself going away.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_DONT_FOLLOW | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// newWatcher sets the watches up; events queue in the kernel until start.
func newWatcher(g *Guard) (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, errors.New("watching the protected paths: inotify: " + err.Error())
	}
	w := &watcher{g: g, f: os.NewFile(uintptr(fd), "inotify"), fd: fd, wds: map[int32]string{}, dirs: map[string]int32{}, ids: map[int32]dirID{}, pins: map[string]bool{}, masks: map[string]bool{}, done: make(chan struct{})}
	for _, p := range g.opts.Ledger.Pins() {
		w.pins[p] = true
	}
	w.ensure()
	return w, nil
}

// wanted are the directories the watch should follow.
func (w *watcher) wanted() []string {
	var out []string
	for _, st := range w.g.states {
		out = append(out, filepath.Dir(st.e.Path))
		if st.e.Dir && st.e.Name == protect.GitHooks {
			out = append(out, st.e.Path)
		}
	}
	for p := range w.pins {
		out = append(out, filepath.Dir(p))
	}
	for p := range w.masks {
		out = append(out, filepath.Dir(p))
	}
	return out
}

// addMasks watches the engine's masked paths too (before start).
func (w *watcher) addMasks(masks []string) {
	if len(masks) == 0 {
		return
	}
	for _, m := range masks {
		w.masks[m] = true
	}
	w.ensure()
}

// dirID names a directory by device and inode.
type dirID struct{ dev, ino uint64 }

// dirIDOf is the device and inode of the directory at d, and whether d is a
// directory (not followed if a link).
func dirIDOf(d string) (dirID, bool) {
	var st unix.Stat_t
	if err := unix.Lstat(d, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return dirID{}, false
	}
	return dirID{uint64(st.Dev), uint64(st.Ino)}, true
}

// ensure adds a watch for each wanted directory, or, while one is
// missing, for its nearest existing ancestor; a wanted directory whose
// path now holds another directory than the one watched (the agent
// renamed it away and made a new one) is watched again, the old watch
// removed. It reports whether it placed a watch on a directory not
// watched before: what that directory already holds came without events,
// and the caller checks every entry.
func (w *watcher) ensure() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	added := false
	for _, d := range w.wanted() {
		for {
			if wd, ok := w.dirs[d]; ok {
				if id, isDir := dirIDOf(d); isDir && id == w.ids[wd] {
					break
				}
			}
			wd, err := unix.InotifyAddWatch(w.fd, d, watchMask)
			if err == nil {
				if old, ok := w.dirs[d]; ok && old != int32(wd) {
					w.drop(old)
				}
				if _, known := w.wds[int32(wd)]; !known {
					added = true
				}
				w.wds[int32(wd)], w.dirs[d] = d, int32(wd)
				// Read after the watch: if another directory took the
				// path in between, the next ensure sees the mismatch.
				w.ids[int32(wd)], _ = dirIDOf(d)
				break
			}
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	return added
}

// drop forgets watch descriptor wd (its directory moved away from the
// path it was placed for) and removes the watch when no other path uses
// it.
func (w *watcher) drop(wd int32) {
	delete(w.wds, wd)
	delete(w.ids, wd)
	for _, other := range w.dirs {
		if other == wd {
			return
		}
	}
	_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
}

// start begins acting on the events (those queued since newWatcher
// first), in the background.
func (w *watcher) start() {
	w.mu.Lock()
	w.started = true
	w.mu.Unlock()
	// What happened between the snapshots and now (the view was built
	// in between) is in the queue.
	go w.loop()
}

// stop ends the watch and waits until no event is being handled.
func (w *watcher) stop() {
	w.once.Do(func() {
		w.mu.Lock()
		started := w.started
		w.mu.Unlock()
		if started {
			// Unblock the loop's read; the loop ends on the timeout.
			_ = w.f.SetReadDeadline(time.Now())
			<-w.done
		}
		w.drain()
		// Destroying an inotify instance waits for an SRCU grace period
		// (about 10 ms here): when the sandbox's init shares it (Share),
		// that happens in init's exit instead, which overlaps this
		// process's checks.
		w.f.Close()
	})
}

// inotifyFd is the instance's descriptor, for the tree's watch.
func (w *watcher) inotifyFd() int { return w.fd }

// drain gives the tree's watch, and the lock files of read-only entries
// (lockEvent), the events still queued once the loop has ended, then
// ends the tree's watch (workscan.Watch.Finish). A read that fails leaves the
// tree's watch vouching for nothing.
func (w *watcher) drain() {
	tw := w.g.tw // nil when only the lock files of read-only entries are to be seen (lockEvent)
	defer tw.Finish()
	buf := make([]byte, 64*1024)
	for {
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
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
		n, err = unix.Read(w.fd, buf)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil || n <= 0 {
			tw.Event(-1, unix.IN_Q_OVERFLOW, "", true)
			return
		}
		events(buf[:n], func(ev *unix.InotifyEvent, name string) {
			tw.Event(ev.Wd, ev.Mask, name, true) // nothing to remove: the instance is closed next
			w.mu.Lock()
			dir, ok := w.wds[ev.Wd]
			w.mu.Unlock()
			if ok {
				w.lockEvent(filepath.Join(dir, name), ev.Mask)
			}
		})
	}
}

// events calls f for each inotify event in buf.
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

// share hands the inotify instance to keep (the sandbox's init), so that
// its destruction is not this process's to wait for.
func (w *watcher) share(keep func(*os.File) error) error { return keep(w.f) }

func (w *watcher) loop() {
	defer close(w.done)
	buf := make([]byte, 64*1024)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return // closed by stop
		}
		w.handle(buf[:n])
	}
}

// handle acts on a buffer of events.
func (w *watcher) handle(buf []byte) {
	touched := map[*state]uint32{}
	var order []*state
	rewatch, all := false, false
	var pinsHit []string
	events(buf, func(ev *unix.InotifyEvent, name string) {
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			w.g.tw.Event(ev.Wd, ev.Mask, "", true)
			all = true
			return
		}
		w.mu.Lock()
		dir, ok := w.wds[ev.Wd]
		w.g.tw.Event(ev.Wd, ev.Mask, name, ok) // under w.mu, as ensure's watches are placed
		if ev.Mask&unix.IN_IGNORED != 0 {
			delete(w.wds, ev.Wd)
			if w.dirs[dir] == ev.Wd {
				delete(w.dirs, dir)
			}
		}
		w.mu.Unlock()
		if !ok {
			return
		}
		if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0 {
			// The directory itself went: what was below it is checked.
			rewatch, all = true, true
			return
		}
		path := filepath.Join(dir, name)
		if ev.Mask&unix.IN_ISDIR != 0 && ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
			rewatch = true // a missing directory on the way may exist now
		}
		if w.masks[path] && ev.Mask&structural != 0 && w.g.reprotect != nil {
			if err := w.g.reprotect(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				w.g.note(path, KindDanger, "DANGER: "+path+" was replaced on the host during the run and could not be hidden again ("+err.Error()+"): the agent could read it for the rest of the run")
			}
		}
		if w.pins[path] && ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_DELETE|unix.IN_MOVED_FROM) != 0 {
			pinsHit = append(pinsHit, path)
			rewatch = true
		}
		w.lockEvent(path, ev.Mask)
		if st := w.g.byPath[path]; st != nil {
			if _, seen := touched[st]; !seen {
				order = append(order, st)
			}
			touched[st] |= ev.Mask
		}
		if st := w.g.byPath[dir]; st != nil && st.e.Dir {
			// Inside a watched directory entry (hooks, without binds).
			if _, seen := touched[st]; !seen {
				order = append(order, st)
			}
			touched[st] |= unix.IN_MODIFY
		}
	})
	if rewatch && w.ensure() {
		all = true // a new watch: what its directory holds came without events
	}
	for _, pin := range pinsHit {
		w.reprotectBelow(pin)
	}
	if all {
		w.all()
		return
	}
	for _, st := range order {
		w.act(st, touched[st])
	}
}

// lockEvent follows the lock file of a read-only entry, which git (and
// other tools with its protocol) creates beside the file, writes, and
// renames over it: under the view that rename fails (the entry is a
// mount point: "Device or resource busy", which says nothing of the
// sandbox) and the tool removes its lock file. mask is the event's on the
// lock file: created, renamed away (the change went through: the host's
// own, or an engine that binds nothing), or removed while it still
// existed (refused).
func (g *Guard) lockEvent(st *state, mask uint32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		st.lock = true
	case mask&unix.IN_MOVED_FROM != 0:
		st.lock = false
	case mask&unix.IN_DELETE != 0 && st.lock:
		st.lock = false
		if g.bound {
			st.refused++
		}
	}
}

// lockEvent passes an event on path to the guard when path is the lock
// file of a read-only entry (Guard.lockEvent).
func (w *watcher) lockEvent(path string, mask uint32) {
	if base, ok := strings.CutSuffix(path, ".lock"); ok {
		if st := w.g.byPath[base]; st != nil && st.e.Guard == protect.ReadOnly && !st.e.Dir {
			w.g.lockEvent(st, mask)
		}
	}
}

// structural events replace or remove a directory entry.
const structural = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_DELETE | unix.IN_MOVED_FROM

// act handles the events mask of one entry.
func (w *watcher) act(st *state, mask uint32) {
	e := st.e
	if e.Guard == protect.ReadOnly && mask&structural != 0 && w.g.reprotect != nil && e.Link == "" {
		w.reprotect(st)
	}
	// A file is audited once a write is complete (closed, or renamed
	// into place), never half-written: an editor's truncate-then-write
	// would look like a broken file. A hooks directory's inside changes
	// are complete entries.
	// Once the host replaced an entry, the agent may hold the new file
	// open for writing from its window: every write then counts, not
	// only a closed one.
	w.g.mu.Lock()
	held := st.windows > 0
	w.g.mu.Unlock()
	complete := mask&(unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO) != 0 || mask == 0 || held && mask&unix.IN_MODIFY != 0
	switch {
	case e.Guard == protect.Audited || e.Format != protect.FormatOpaque:
		if complete {
			w.g.audit(st, false)
		}
	case restoresWhole(e) && !w.g.bound:
		w.g.audit(st, false)
	}
}

// reprotect has the engine bind st's entry again, and counts the window.
func (w *watcher) reprotect(st *state) {
	t0 := time.Now()
	err := w.g.reprotect(st.e.Path)
	d := time.Since(t0)
	w.g.mu.Lock()
	st.windows++
	w.g.windows = append(w.g.windows, d)
	w.g.mu.Unlock()
	if err != nil {
		w.g.note(st.e.Path, KindDanger, "DANGER: "+st.e.Path+" was replaced on the host during the run and could not be made read-only again ("+err.Error()+"): the agent could write it for the rest of the run; inspect it ("+st.e.Why+")")
	}
}

// reprotectBelow binds again a pinned directory the host replaced and
// every read-only entry below it.
func (w *watcher) reprotectBelow(pin string) {
	if w.g.reprotect == nil {
		return
	}
	_ = w.g.reprotect(pin)
	for _, st := range w.g.states {
		if st.e.Guard == protect.ReadOnly && strings.HasPrefix(st.e.Path, pin+"/") {
			w.reprotect(st)
		}
	}
}

// all checks every entry: each read-only one whose mount may be gone is
// bound again, and every entry audited.
func (w *watcher) all() {
	for p := range w.pins {
		if w.g.reprotect != nil {
			_ = w.g.reprotect(p)
		}
	}
	for _, st := range w.g.states {
		if st.e.Guard == protect.ReadOnly && w.g.reprotect != nil {
			// Reprotect leaves a mount that is still there alone.
			if err := w.g.reprotect(st.e.Path); err != nil {
				w.g.note(st.e.Path, KindDanger, "DANGER: "+st.e.Path+" could not be made read-only again ("+err.Error()+"): inspect it ("+st.e.Why+")")
			}
		}
		w.act(st, 0)
	}
}
