package workscan

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/atomicfile"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// Tree is what the end-of-run scan needs of the working directory: every
// directory's status change time (ctime) and inode, taken before its
// entries were read, and the entries the scan looks at (subdirectories to
// descend into, .git, the protected and reported names). An entry added,
// removed or renamed in a directory sets its ctime to the kernel's clock,
// which the agent cannot set back; so a directory whose inode and ctime
// are still the recorded ones has the recorded entries, and is not read
// again. Entries changed in place (a nested .git/config) are checked by
// their own ctime, as in a full walk.
//
// The tree is read while the agent runs (StartPrewalk), from the one the
// previous run in the same workdir left (TreeFile; only its directories
// whose ctime has not moved are taken as recorded), and the scan after
// the run reads again only the directories changed since: its cost grows
// with the directories and the changed ones, not with every file. The
// scan leaves the tree as it found it for the next run.
type Tree struct {
	// Dirs are the recorded directories, by absolute path.
	Dirs     map[string]treeDir
	complete bool
	// fresh counts the directories read rather than taken as recorded.
	fresh int
	// checked holds, for the scan after the run, what same would find
	// for each trusted directory, asked ahead in parallel (precheck).
	checked map[string]bool
	// watch is the run's watch of the directories (nil for none), whose
	// word the scan takes for those it vouches for (precheck); watched
	// says this tree is the one the watched walk read.
	watch   *Watch
	watched bool
}

// treeDir is one directory as recorded. Trusted says its ctime lay
// further back than any filesystem's timestamp granularity when it was
// read (racyMargin), so that a change in the same clock tick after the
// reading cannot hide behind an equal ctime.
type treeDir struct {
	Ctime   time.Time
	Ino     uint64
	Trusted bool
	Ents    []treeEnt
}

// racyMargin is how far back a directory's ctime must lie, when it is
// read, for its record to be trusted later (2 s: FAT's granularity; ext4
// and the others are finer). A variable for the tests.
var racyMargin = 2 * time.Second

// treeEnt is a directory entry as read (name and type bits), an
// fs.DirEntry.
type treeEnt struct {
	N string
	T fs.FileMode
}

func (e treeEnt) Name() string               { return e.N }
func (e treeEnt) IsDir() bool                { return e.T.IsDir() }
func (e treeEnt) Type() fs.FileMode          { return e.T }
func (e treeEnt) Info() (fs.FileInfo, error) { return nil, fs.ErrInvalid }

// dirReads counts the directories read (tests).
var dirReads atomic.Int64

// projectTops are protect.ProjectTops, made once.
var projectTops = protect.ProjectTops()

// scanned says whether the scan looks at an entry of this name (besides
// descending into directories).
func scanned(name string) bool {
	git, top, reported := nameKind(name)
	return git || top || reported
}

// record reads dir now into next (an lstat before its entries, the
// entries the scan looks at) and returns its entries, all of them. fi,
// when not nil, is dir's lstat the caller took just before (after placing
// a watch on dir: Watch.add).
func (next *Tree) record(dir string, fi fs.FileInfo) ([]treeEnt, error) {
	var lerr error
	if fi == nil {
		fi, lerr = os.Lstat(dir)
	}
	dirReads.Add(1)
	ents, err := os.ReadDir(dir)
	out := make([]treeEnt, 0, len(ents))
	for _, e := range ents {
		out = append(out, treeEnt{N: e.Name(), T: e.Type()})
	}
	if err == nil && lerr == nil && fi.IsDir() && next != nil {
		_, ino := DevIno(fi)
		c := Ctime(fi)
		td := treeDir{Ctime: c, Ino: ino, Trusted: c.Before(time.Now().Add(-racyMargin))}
		for _, e := range out {
			if e.IsDir() || scanned(e.N) {
				td.Ents = append(td.Ents, e)
			}
		}
		next.Dirs[dir] = td
		next.fresh++
	}
	return out, err
}

// size is the number of directories t records (0 for none): a new tree
// of the same workdir is made that big at once, not grown (and rehashed)
// one directory at a time, in a process whose every new heap page costs a
// page fault.
func (t *Tree) size() int {
	if t == nil {
		return 0
	}
	return len(t.Dirs)
}

// same returns dir's record in t when it holds dir's entries now: dir
// still has the recorded inode and ctime, and the record is trusted (a
// change after its reading would have moved the ctime). fi, when not nil,
// is dir's lstat taken just before by the caller.
func (t *Tree) same(dir string, fi fs.FileInfo) (treeDir, bool) {
	if t == nil {
		return treeDir{}, false
	}
	td, ok := t.Dirs[dir]
	if !ok {
		return td, false
	}
	if t.watch.vouches(dir, td, t) {
		return td, true
	}
	if p, ok := t.watch.patched(dir, td, t); ok {
		return p, true
	}
	if !td.Trusted {
		return td, false
	}
	if v, ok := t.checked[dir]; ok {
		return td, v
	}
	if fi != nil {
		return td, td.matches(fi)
	}
	return td, td.holds(dir)
}

// dirChecks counts the lstats holds asks (tests).
var dirChecks atomic.Int64

// holds reports whether dir has td's inode and ctime now.
func (td treeDir) holds(dir string) bool {
	dirChecks.Add(1)
	fi, err := os.Lstat(dir)
	return err == nil && td.matches(fi)
}

// matches reports whether fi is a directory with td's inode and ctime.
func (td treeDir) matches(fi fs.FileInfo) bool {
	if !fi.IsDir() {
		return false
	}
	_, ino := DevIno(fi)
	return ino == td.Ino && Ctime(fi).Equal(td.Ctime)
}

// precheckMin is the number of trusted directories from which the scan
// asks same's question of all of them ahead, in parallel: an lstat costs
// 2-3 µs here, and a workdir of 100,000 files in 1,000 directories spent
// most of its scan on them, on one CPU while the others waited. A
// variable for the tests.
var precheckMin = 256

// precheck returns t with same's answer for each of its trusted
// directories, asked now by up to four goroutines (one per CPU), for the
// scan that follows at once: it asks the same question of the same
// directories a moment earlier than the scan's walk would, after the
// agent has ended. A directory whose answer is missing (interrupted) is
// asked again by same. t itself is not changed. The directories the
// run's watch vouches for (Watch.vouches) are not asked at all.
func (t *Tree) precheck(interrupted <-chan struct{}) *Tree {
	if t == nil {
		return nil
	}
	var dirs []string
	for d, td := range t.Dirs {
		if td.Trusted && !t.watch.vouches(d, td, t) {
			dirs = append(dirs, d)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), 4)
	if len(dirs) < precheckMin || workers < 2 {
		return t
	}
	ok := make([]bool, len(dirs))
	asked := make([]bool, len(dirs))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(dirs); i += workers {
				if i%256 == w {
					select {
					case <-interrupted:
						return
					default:
					}
				}
				ok[i], asked[i] = t.Dirs[dirs[i]].holds(dirs[i]), true
			}
		}()
	}
	wg.Wait()
	c := *t
	c.checked = make(map[string]bool, len(dirs))
	for i, d := range dirs {
		if asked[i] {
			c.checked[d] = ok[i]
		}
	}
	return &c
}

// list gives dir's entries for the scan: its recorded ones when they are
// still dir's (same), else read now; either way next gets dir's record.
// fi, when not nil, is dir's lstat taken just before by the caller.
func (t *Tree) list(dir string, next *Tree, fi fs.FileInfo) ([]treeEnt, error) {
	if td, ok := t.same(dir, fi); ok {
		if next != nil {
			next.Dirs[dir] = td
		}
		return td.Ents, nil
	}
	return next.record(dir, fi)
}

// readTree records workdir's tree within the scan's bounds, taking
// prev's trusted records of the directories unchanged since; complete is
// false when a bound stopped it or it was cancelled. tw, when not nil,
// places a watch on each directory before its lstat (Watch).
func readTree(workdir string, cancel <-chan struct{}, prev *Tree, tw *Watch) *Tree {
	t := &Tree{Dirs: make(map[string]treeDir, prev.size()), watch: tw, watched: tw != nil}
	b := newBudget(cancel)
	var walk func(dir string) bool
	walk = func(dir string) bool {
		// Stopped at once when asked (Prewalk.Finish: the run is
		// over), not only every 1,024 entries: a tree taken as recorded
		// has few entries per directory.
		if b.cancelled() {
			return false
		}
		tok, fi := tw.add(dir)
		fresh := t.fresh
		ents, err := prev.list(dir, t, fi)
		if err != nil {
			return true // the scan reads it again and says why
		}
		td, ok := t.Dirs[dir]
		tw.keep(dir, tok, fi, td, ok, t.fresh > fresh)
		for _, e := range ents {
			if b.spend() != "" {
				return false
			}
			if e.IsDir() && e.N != ".git" && !walk(filepath.Join(dir, e.N)) {
				return false
			}
		}
		return true
	}
	t.complete = walk(workdir)
	return t
}

// budget bounds a walk of the workdir (scanMaxEntries, scanMaxTime) and
// stops it when stop is closed.
type budget struct {
	entries  int
	deadline time.Time
	stop     <-chan struct{}
}

func newBudget(stop <-chan struct{}) *budget {
	return &budget{deadline: time.Now().Add(scanMaxTime), stop: stop}
}

// cancelled reports whether the walk was told to stop.
func (b *budget) cancelled() bool {
	select {
	case <-b.stop:
		return true
	default:
		return false
	}
}

// spend counts one entry; it returns why the walk must stop, or "".
func (b *budget) spend() string {
	b.entries++
	if b.entries%1024 == 0 {
		select {
		case <-b.stop:
			return "it was interrupted"
		default:
		}
		if time.Now().After(b.deadline) {
			return fmt.Sprintf("it reached its time limit (%v)", scanMaxTime)
		}
	}
	if b.entries > scanMaxEntries {
		return fmt.Sprintf("it reached its limit of %d entries", scanMaxEntries)
	}
	return ""
}

// loadTree reads the tree a previous run left at path; nil when there is
// none or it cannot be read (the walk then reads every directory).
func loadTree(path string) *Tree {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	dirs, err := decodeTree(b)
	if err != nil {
		return nil
	}
	return &Tree{Dirs: dirs}
}

// SaveTree writes t for the next run (mode 0600, replaced atomically);
// failing is harmless (the next run reads every directory). When t
// teaches the next run nothing that saved (the tree on disk, nil for
// none) does not already say, the file is only marked used: see
// [tree.improves].
func SaveTree(path string, saved, t *Tree) {
	if path == "" || t == nil {
		return
	}
	if saved != nil && !t.improves(saved) {
		now := time.Now()
		if os.Chtimes(path, now, now) == nil {
			return
		}
	}
	dir := filepath.Dir(path)
	if os.MkdirAll(dir, 0o700) != nil || atomicfile.Write(path, encodeTree(t.Dirs), 0o600) != nil {
		return
	}
	// The trees of workdirs no run has used for treeMaxAge go.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && filepath.Ext(e.Name()) == ".tree" && time.Since(fi.ModTime()) > treeMaxAge {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// treeMaxAge is how long a workdir's tree is kept after its last run.
const treeMaxAge = 30 * 24 * time.Hour

// improves says whether saving t in place of saved spares the next run
// work: t records a directory saved does not, or no longer has one saved
// records, or records one with another inode or other entries, or trusts
// one saved does not, or more than maxStaleDirs directories changed only
// their ctime. A few of those do not make the save worth it (writing and
// syncing the file costs more than reading them again): an entry created
// and removed again leaves the same entries, as the placeholders of the
// protected names do in the workdir on every run, and the next run reads
// that directory again, its record holding the old ctime.
func (t *Tree) improves(saved *Tree) bool {
	if len(t.Dirs) != len(saved.Dirs) {
		return true
	}
	stale := 0
	for dir, td := range t.Dirs {
		sd, ok := saved.Dirs[dir]
		if !ok || sd.Ino != td.Ino || td.Trusted && !sd.Trusted || !slices.Equal(sd.Ents, td.Ents) {
			return true
		}
		if !sd.Ctime.Equal(td.Ctime) {
			if stale++; stale > maxStaleDirs {
				return true
			}
		}
	}
	return false
}

// maxStaleDirs is how many directories whose record has an old ctime a
// saved tree may hold before it is written again (see [tree.improves]).
// A variable for the tests.
var maxStaleDirs = 16

// Prewalk reads the tree in the background; Finish stops it and returns
// the tree the scan starts from. saved is the tree the previous run left,
// as read from its file.
type Prewalk struct {
	done   chan struct{}
	cancel chan struct{}
	once   sync.Once
	t      *Tree
	saved  *Tree
	watch  *Watch
}

// StartPrewalk starts reading workdir's tree, from the one a previous run
// left at treeFile ("" for none). An ordinary goroutine: not a thread of
// its own at a lower priority, because such a thread ends with its
// goroutine, and a child forked from it earlier (the view's init, whose
// parent-death signal is bound to the forking thread) would be killed
// with it; nor can an ordinary user raise a thread's priority back.
// tw (nil for none) watches the directories as the walk reaches them.
func StartPrewalk(workdir, treeFile string, tw *Watch) *Prewalk {
	p := &Prewalk{done: make(chan struct{}), cancel: make(chan struct{}), watch: tw}
	go func() {
		defer close(p.done)
		p.saved = loadTree(treeFile)
		p.t = readTree(workdir, p.cancel, p.saved, tw)
	}()
	return p
}

// Stop tells the walk to stop, if it is still going (the run is over:
// its reading would now compete with the audit and do the scan's work
// ahead of it).
func (p *Prewalk) Stop() {
	if p != nil {
		p.once.Do(func() { close(p.cancel) })
	}
}

// Finish stops the walk and returns the tree the scan after the run
// starts from: the one read during the run when that reading was
// complete; otherwise (a short run, or a bound reached) the one the
// previous run left, from which the scan does in one pass what the
// reading would have done ahead of it. Either only spares reading the
// directories whose inode and ctime are as recorded. nil when there is
// neither, or when interrupted is closed.
func (p *Prewalk) Finish(interrupted <-chan struct{}) *Tree {
	if p == nil {
		return nil
	}
	p.Stop()
	<-p.done
	select {
	case <-interrupted:
		return nil
	default:
	}
	if p.t != nil && p.t.complete {
		return p.t
	}
	if p.saved == nil || p.watch == nil {
		return p.saved
	}
	// The watch vouches for the saved records it verified too.
	s := *p.saved
	s.watch = p.watch
	return &s
}

// Previous is the tree the previous run left (nil for none, or without a
// prewalk), once the walk is over.
func (p *Prewalk) Previous() *Tree {
	if p == nil {
		return nil
	}
	<-p.done
	return p.saved
}
