package guard

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// tree is what the end-of-run scan needs of the working directory, read
// while the agent runs (prewalk): every directory's status change time and
// inode, taken before its entries were read, and the entries the scan
// looks at (subdirectories to descend into, .git, the protected and
// reported names). After the run, a directory whose ctime is still the
// one recorded and lies before the run started has had no entry added,
// removed or renamed during the run (any of those sets its ctime to the
// kernel's clock, which the agent cannot set back), so the scan takes its
// recorded entries instead of reading it again: its cost then grows with
// the directories and the changed ones, not with every file. Entries that
// were changed in place (a nested .git/config) are checked by their own
// ctime, as in a full walk.
type tree struct {
	dirs     map[string]treeDir
	complete bool
}

type treeDir struct {
	ctime time.Time
	ino   uint64
	ents  []treeEnt
}

// treeEnt is a directory entry as read (name and type bits), an
// fs.DirEntry.
type treeEnt struct {
	name string
	typ  fs.FileMode
}

func (e treeEnt) Name() string               { return e.name }
func (e treeEnt) IsDir() bool                { return e.typ.IsDir() }
func (e treeEnt) Type() fs.FileMode          { return e.typ }
func (e treeEnt) Info() (fs.FileInfo, error) { return nil, fs.ErrInvalid }

// prewalk reads the tree in the background; wait returns it (nil when the
// walk stopped at a bound or was cancelled: the scan then walks in full).
type prewalk struct {
	done   chan struct{}
	cancel chan struct{}
	once   sync.Once
	t      *tree
}

// startPrewalk starts reading workdir's tree.
func startPrewalk(workdir string) *prewalk {
	p := &prewalk{done: make(chan struct{}), cancel: make(chan struct{})}
	// An ordinary goroutine: not a thread of its own at a lower
	// priority, because such a thread ends with its goroutine, and a
	// child forked from it earlier (the view's init, whose parent-death
	// signal is bound to the forking thread) would be killed with it;
	// nor can an ordinary user raise a thread's priority back.
	go func() {
		defer close(p.done)
		p.t = readTree(workdir, p.cancel)
	}()
	return p
}

// wait waits for the walk, or cancels it when interrupted is closed first.
func (p *prewalk) wait(interrupted <-chan struct{}) *tree {
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
	case <-interrupted:
		p.once.Do(func() { close(p.cancel) })
		<-p.done
		return nil
	}
	if p.t == nil || !p.t.complete {
		return nil
	}
	return p.t
}

// readTree records workdir's tree within the scan's bounds; complete is
// false when a bound stopped it or it was cancelled.
func readTree(workdir string, cancel <-chan struct{}) *tree {
	t := &tree{dirs: map[string]treeDir{}}
	deadline := time.Now().Add(scanMaxTime)
	entries := 0
	var walk func(dir string) bool
	walk = func(dir string) bool {
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() {
			return true // the scan reads it again and says why
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return true
		}
		_, ino := devIno(fi)
		td := treeDir{ctime: ctime(fi), ino: ino}
		for _, e := range ents {
			entries++
			if entries%1024 == 0 {
				select {
				case <-cancel:
					return false
				default:
				}
				if time.Now().After(deadline) {
					return false
				}
			}
			if entries > scanMaxEntries {
				return false
			}
			if e.IsDir() || scanned(e.Name()) {
				td.ents = append(td.ents, treeEnt{name: e.Name(), typ: e.Type()})
			}
		}
		t.dirs[dir] = td
		for _, e := range td.ents {
			if e.IsDir() && e.name != ".git" && !walk(filepath.Join(dir, e.name)) {
				return false
			}
		}
		return true
	}
	t.complete = walk(workdir)
	return t
}

// dirReads counts the directories the scan read (tests).
var dirReads atomic.Int64

// projectTops are protect.ProjectTops, made once.
var projectTops = protect.ProjectTops()

// scanned says whether the scan looks at an entry of this name (besides
// descending into directories).
func scanned(name string) bool {
	return name == ".git" || projectTops[name] || protect.Reported(name)
}

// list gives dir's entries for the scan: its recorded ones when dir is
// unchanged since before since (same inode, same ctime), else read now.
func (t *tree) list(dir string, since time.Time) ([]treeEnt, error) {
	if t != nil {
		if td, ok := t.dirs[dir]; ok {
			if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
				_, ino := devIno(fi)
				if c := ctime(fi); ino == td.ino && c.Equal(td.ctime) && c.Before(since) {
					return td.ents, nil
				}
			}
		}
	}
	dirReads.Add(1)
	ents, err := os.ReadDir(dir)
	out := make([]treeEnt, 0, len(ents))
	for _, e := range ents {
		out = append(out, treeEnt{name: e.Name(), typ: e.Type()})
	}
	return out, err
}
