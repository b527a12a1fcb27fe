//go:build linux

package workscan

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Watch follows the workdir's recorded directories while the agent
// runs, with the guard's inotify instance (whose destruction is left to
// the sandbox's init: Guard.Share), so that the scan after the run need
// not ask each directory again whether it changed (issue 27, item 4). The
// prewalk places a watch on each directory it reaches, then takes the
// lstat that decides whether the directory's record holds (add, then
// tree.list): a change after the watch is an event, a change before it
// moved the ctime the lstat compares, or is in the entries read after it.
//
// It vouches for a directory's record (vouches) only when:
//   - the watch was placed before the lstat that verified the record (or
//     before the entries were read, for a record read during this walk),
//     on the same inode: the workdir's own through a descriptor
//     (/proc/self/fd), every other by its path below a directory already
//     watched whose entry of that name has not changed since, so that the
//     path led to one inode all along;
//   - the directory had no entry created, removed or renamed, and its own
//     attributes did not change (a chmod that makes it unsearchable must
//     be seen by the scan);
//   - its path still leads to it: neither it nor any directory above it up
//     to the workdir was moved or removed or lost its watch, and no
//     directory above it had the entry on the way created, removed or
//     renamed (an unchanged directory whose parent was moved away and
//     made again lies at another path);
//   - the workdir is still at its path, on a local filesystem whose every
//     change the kernel makes itself (ext4, xfs, btrfs, f2fs, bcachefs,
//     tmpfs: not a network or FUSE filesystem, whose server may change it
//     unseen), and the directory is on the workdir's filesystem;
//   - the queue never overflowed, and the events were all read once the
//     run was over (finish).
//
// A directory whose entries changed by a few names, and that the watch
// vouches for otherwise, is not read either: its entries are its
// record's and those names, each asked by lstat (patched). Anything else
// is asked as before (tree.holds). The watches are bounded
// (treeWatchLimit; a directory with many events loses its watch), since
// the user's editor and IDE share fs.inotify.max_user_watches with them.
type Watch struct {
	fd    int // the guard's inotify instance; not closed here
	root  string
	limit int // watches it may place; -1 until the first add reads it

	mu          sync.Mutex
	placed      int
	rootDev     uint64
	rootIno     uint64
	byWd        map[int32][]string
	removed     map[int32]bool // watches event removed
	dirs        map[string]*watchedDir
	overflow    bool
	finished    bool
	rootInPlace bool
}

// watchedDir is one directory under Watch.
type watchedDir struct {
	wd int32
	// gone: it was moved or removed, or its watch was lost, since its
	// watch was placed: its path may lead elsewhere now.
	gone bool
	// names are its entries created, removed or renamed since: the paths
	// below them may lead elsewhere now, not those below its other
	// entries. many: it had more than treeEventsMax events (of any kind:
	// its entries' attributes too), every name counts.
	names  map[string]bool
	many   bool
	events int
	// attr: its own attributes changed (a mode without the search bit
	// hides what lies below from the scan's lstats): nothing below it
	// is vouched for.
	attr bool
	// verified: its record was verified after the watch was placed
	// (ino, ctime); own: and none of its entries and none of its own
	// attributes changed since.
	verified bool
	own      bool
	ino      uint64
	ctime    time.Time
	// leads caches leads' answer once the watch is finished (1 yes,
	// -1 no, 0 not asked).
	leads int8
}

// treeEventsMax is how many events a directory's watch takes before it
// counts every name as changed and is removed (a build's output, a
// checkout: the queue, shared with the guard's own watch, is not filled
// by one busy directory).
const treeEventsMax = 256

// treeMask is what a directory's watch reports to the tree: entries
// created, removed or renamed in or out, the directory's attributes (and
// its entries', which are ignored), the directory moved or removed.
// IN_MASK_ADD keeps the bits of a watch the guard placed on the same
// directory for its ledger.
const treeMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK | unix.IN_MASK_ADD

// treeEntryEvents change a directory's entries; treeSelfGone end what
// its watch can say.
const (
	treeEntryEvents = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO
	treeSelfGone    = unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_IGNORED | unix.IN_UNMOUNT
)

// treeWatchMax bounds the tree's watches whatever the system allows;
// treeWatchShare is the part of fs.inotify.max_user_watches it takes at
// most (1/16: the user's editor and IDE, and other runs, share it; the
// watches go when the run ends). Variables for the tests.
var (
	treeWatchMax   = 8192
	treeWatchShare = 16
)

// treeWatchLimit is how many watches a run's tree may place.
func treeWatchLimit() int {
	max := 8192 // the kernel's default before 5.11
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			max = n
		}
	}
	return min(treeWatchMax, max/treeWatchShare)
}

// localFS are the filesystems whose every change the kernel makes itself,
// and so reports to inotify.
var localFS = map[int64]bool{
	unix.EXT4_SUPER_MAGIC:     true, // ext2, ext3 and ext4 share it
	unix.XFS_SUPER_MAGIC:      true,
	unix.BTRFS_SUPER_MAGIC:    true,
	unix.F2FS_SUPER_MAGIC:     true,
	unix.BCACHEFS_SUPER_MAGIC: true,
	unix.TMPFS_MAGIC:          true,
}

// NewWatch returns the tree's watch of root through the inotify
// instance fd, or nil when there is none to be had (no instance). Its
// bound is read by the first add, in the walk's goroutine rather than on
// the run's path.
func NewWatch(fd int, root string) *Watch {
	if fd < 0 || root == "" {
		return nil
	}
	return &Watch{fd: fd, root: root, limit: -1, byWd: map[int32][]string{}, removed: map[int32]bool{}, dirs: map[string]*watchedDir{}}
}

// watchToken is a watch add placed, for keep; wd < 0 for none.
type watchToken struct{ wd int32 }

// add places a watch on dir, when there is room and dir qualifies, and
// returns it with dir's lstat taken after it (nil when add took none:
// the caller takes its own).
func (w *Watch) add(dir string) (watchToken, fs.FileInfo) {
	none := watchToken{wd: -1}
	if w == nil {
		return none, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.limit < 0 {
		w.limit = treeWatchLimit()
	}
	if w.finished || w.placed >= w.limit || w.overflow {
		return none, nil
	}
	if dir == w.root {
		return w.addRoot()
	}
	parent := parentDir(dir)
	if p := w.dirs[parent]; p == nil || p.many || p.attr || p.names[dir[strings.LastIndexByte(dir, '/')+1:]] || !w.leads(parent) {
		return none, nil // the path may not lead where it did
	}
	wd, err := unix.InotifyAddWatch(w.fd, dir, treeMask|unix.IN_DONT_FOLLOW)
	if err != nil {
		if err == unix.ENOSPC {
			w.limit = w.placed // no room left: the user's other watchers need it
		}
		return none, nil
	}
	w.placed++
	fi, err := os.Lstat(dir)
	if err != nil {
		return none, nil
	}
	if dev, _ := DevIno(fi); dev != w.rootDev {
		return none, fi // another filesystem: not trusted to report
	}
	w.register(dir, int32(wd))
	return watchToken{wd: int32(wd)}, fi
}

// register makes dir's watch wd count from the moment add placed it: an
// event the guard's loop reads before the walk has read dir (keep) must
// not be lost. Called with w.mu held.
func (w *Watch) register(dir string, wd int32) {
	w.dirs[dir] = &watchedDir{wd: wd, own: true}
	w.byWd[wd] = append(w.byWd[wd], dir)
}

// addRoot places the workdir's watch through a descriptor of it, on a
// local filesystem only.
func (w *Watch) addRoot() (watchToken, fs.FileInfo) {
	none := watchToken{wd: -1}
	fd, err := unix.Open(w.root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return none, nil
	}
	defer unix.Close(fd)
	var sfs unix.Statfs_t
	if unix.Fstatfs(fd, &sfs) != nil || !localFS[int64(sfs.Type)] {
		return none, nil
	}
	wd, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(fd), treeMask)
	if err != nil {
		return none, nil
	}
	w.placed++
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return none, nil
	}
	w.rootDev, w.rootIno = uint64(st.Dev), st.Ino
	// The lstat of the path, after the watch, is of the watched inode
	// when it names the descriptor's.
	fi, err := os.Lstat(w.root)
	if err != nil {
		return none, nil
	}
	if dev, ino := DevIno(fi); dev != w.rootDev || ino != w.rootIno {
		return none, nil
	}
	w.register(w.root, int32(wd))
	return watchToken{wd: int32(wd)}, fi
}

// keep completes the registration of the watch tok that add placed on
// dir, given the record the walk then took of dir (ok false for none;
// fresh: read now, after the watch, rather than taken from the previous
// run's tree): the directory's record counts as watched only when the
// lstat after the watch (fi, from add) verified it, it is trusted or was
// read after the watch (a change after the watch is an event, whatever
// the ctime), and no event came since add.
func (w *Watch) keep(dir string, tok watchToken, fi fs.FileInfo, td treeDir, ok, fresh bool) {
	if w == nil || tok.wd < 0 || fi == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	wdir := w.dirs[dir]
	if wdir == nil || wdir.wd != tok.wd || w.finished || w.removed[tok.wd] {
		return
	}
	_, ino := DevIno(fi)
	wdir.ino, wdir.ctime = ino, Ctime(fi)
	wdir.verified = ok && (td.Trusted || fresh) && td.matches(fi)
	wdir.own = wdir.own && wdir.verified
}

// Event records one inotify event of the guard's instance (name is the
// entry it is about, "" for the watched directory itself). A watch that
// is of no more use to the tree (its directory gone, or too many of its
// entries changed) is removed, so that the directory's later changes (a
// build's output) do not fill the queue; not when shared says the guard
// watches the directory too.
func (w *Watch) Event(wd int32, mask uint32, name string, shared bool) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.overflow = true
		return
	}
	done := false
	for _, d := range w.byWd[wd] {
		wdir := w.dirs[d]
		if wdir == nil || wdir.wd != wd {
			continue
		}
		if wdir.events++; wdir.events > treeEventsMax {
			wdir.many, wdir.names, wdir.own = true, nil, false
		}
		switch {
		case mask&treeSelfGone != 0:
			wdir.gone, wdir.own = true, false
		case mask&treeEntryEvents != 0:
			wdir.own = false
			if !wdir.many {
				if wdir.names == nil {
					wdir.names = map[string]bool{}
				}
				wdir.names[name] = true
			}
		case mask&unix.IN_ATTRIB != 0 && name == "":
			wdir.own, wdir.attr = false, true
		}
		done = done || wdir.gone || wdir.many
	}
	if done && !shared && mask&unix.IN_IGNORED == 0 && !w.removed[wd] {
		// Under w.mu, as add is: a watch add returns from now on is a
		// new one, and keep refuses one add returned before.
		_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
		w.removed[wd] = true
	}
}

// patched returns dir's entries as they are now, made from its record td
// and the names of the entries the watch saw created, removed or renamed
// (each asked by lstat), when the watch vouches for everything else of
// it: its record verified, its path leading to it, its own attributes
// unchanged, every event read, not too many. A few files made and
// removed in a large directory then cost a few lstats, not a reading of
// the directory. The record returned has dir's ctime now and is not
// trusted: the next run reads dir again.
func (w *Watch) patched(dir string, td treeDir, t *Tree) (treeDir, bool) {
	if w == nil || t == nil {
		return td, false
	}
	changed, ok := w.changedNames(dir, td, t)
	if !ok || !entryNames(changed) {
		return td, false
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return td, false
	}
	if _, ino := DevIno(fi); ino != td.Ino {
		return td, false
	}
	ents, ok := patchEntries(dir, td.Ents, changed)
	if !ok {
		return td, false
	}
	// Never trusted: the ctime is this moment's, and a change after the
	// events were read (another run's agent in the same workdir, the
	// user) is in no event: the next run reads dir again.
	return treeDir{Ctime: Ctime(fi), Ino: td.Ino, Ents: ents}, true
}

// changedNames returns the names of dir's entries the watch saw created,
// removed or renamed, when it vouches for everything else of dir (see
// patched); false when it does not.
func (w *Watch) changedNames(dir string, td treeDir, t *Tree) (map[string]bool, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wdir := w.dirs[dir]
	ok := w.complete() && wdir.heldSince(td) && (td.Trusted || t.watched) && w.leads(dir)
	if !ok {
		return nil, false
	}
	return maps.Clone(wdir.names), true
}

// complete reports whether the watch is over, saw every event and the
// workdir is still at its path. Called with w.mu held.
func (w *Watch) complete() bool {
	return w.finished && !w.overflow && w.rootInPlace
}

// heldSince reports whether the directory's record td was verified after
// its watch was placed, on the same inode and ctime, and the directory
// was neither moved nor removed, nor had too many events, nor its own
// attributes changed since. Called with the watch's mu held.
func (wdir *watchedDir) heldSince(td treeDir) bool {
	return wdir != nil && wdir.verified && !wdir.gone && !wdir.many && !wdir.attr &&
		td.Ino == wdir.ino && td.Ctime.Equal(wdir.ctime)
}

// entryNames reports whether every name in changed is an entry's name:
// the kernel gives no other.
func entryNames(changed map[string]bool) bool {
	for n := range changed {
		if n == "" || n == "." || n == ".." || strings.Contains(n, "/") {
			return false
		}
	}
	return true
}

// patchEntries returns dir's entries made from its recorded ones and the
// changed names, each asked by lstat (gone: dropped; a directory or a
// scanned file: kept), sorted by name; false when an lstat fails
// otherwise.
func patchEntries(dir string, recorded []treeEnt, changed map[string]bool) ([]treeEnt, bool) {
	ents := make([]treeEnt, 0, len(recorded)+len(changed))
	for _, e := range recorded {
		if !changed[e.N] {
			ents = append(ents, e)
		}
	}
	for n := range changed {
		nfi, err := os.Lstat(dir + "/" + n)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, false
		}
		if nfi.IsDir() || scanned(n) {
			ents = append(ents, treeEnt{N: n, T: nfi.Mode().Type()})
		}
	}
	slices.SortFunc(ents, func(a, b treeEnt) int { return strings.Compare(a.N, b.N) })
	return ents, true
}

// leads reports whether dir's path still leads to the directory its
// watch was placed on, and can be followed: neither it nor any directory
// above it up to the workdir is gone, and no directory above it had the
// entry on the way created, removed or renamed, or its own attributes
// changed. Once the watch is finished the answer is kept on the
// directory. Called with w.mu held.
func (w *Watch) leads(dir string) bool {
	wdir := w.dirs[dir]
	if wdir == nil || wdir.gone {
		return false
	}
	if wdir.leads != 0 {
		return wdir.leads > 0
	}
	v := true
	if dir != w.root {
		parent := parentDir(dir)
		p := w.dirs[parent]
		v = parent != dir && p != nil && !p.many && !p.attr && !p.names[dir[strings.LastIndexByte(dir, '/')+1:]] && w.leads(parent)
	}
	if w.finished {
		wdir.leads = 1
		if !v {
			wdir.leads = -1
		}
	}
	return v
}

// parentDir is the directory that holds the clean absolute path p (a
// string of p, not a new one: filepath.Dir allocates).
func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// Finish ends the watch: read (the caller's) has given it every event
// queued until now, once the agent's sandbox is over. No watch placed
// after counts.
func (w *Watch) Finish() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.finished = true
	if fi, err := os.Lstat(w.root); err == nil {
		dev, ino := DevIno(fi)
		w.rootInPlace = w.rootIno != 0 && dev == w.rootDev && ino == w.rootIno
	}
}

// vouches reports whether the watch vouches for td, dir's record in t
// (see Watch): the scan does not ask dir again. A record not trusted
// counts only from the tree the watched walk read (tree.watched), where
// it was read after its watch. Once the watch is finished, nothing
// changes it.
func (w *Watch) vouches(dir string, td treeDir, t *Tree) bool {
	if w == nil || t == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.finished || w.overflow || !w.rootInPlace {
		return false
	}
	wdir := w.dirs[dir]
	if wdir == nil || !wdir.own || td.Ino != wdir.ino || !td.Ctime.Equal(wdir.ctime) || !td.Trusted && !t.watched {
		return false
	}
	return w.leads(dir)
}
