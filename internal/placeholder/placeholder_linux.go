//go:build linux

// Package placeholder creates, for the namespace view, the read-only
// entries of a run's ledger (internal/protect) that are missing, so that
// the view has something to bind read-only at their names and the agent
// cannot create them either (Landlock only adds rights; a bind needs a
// mount point), and removes them after the run.
//
// Runs coordinate through lock files in agent-sandbox's state root
// (protect/), because removing a mount point in another run's namespace
// would detach that run's protection. Runs in one workdir share its lock
// for their whole run, and only a run that then gets it exclusively (no
// other run in that workdir is going) removes placeholders. Runs in
// different workdirs can protect the same path (a repository's git dir,
// for two workdirs in one repository): every run also holds shared, for
// its whole run, the lock of each directory that holds one of its
// protected paths' mount points (protect.Ledger.Dirs), and a placeholder
// is removed only under its directory's lock held exclusively; one another
// run still binds is left, and its record kept, for a later run.
// Placeholders left by a killed run are removed by the next run that ends
// alone. An empty placeholder is kept between runs in a stash (stash.go)
// rather than deleted and created again.
//
// Placeholder files created in the workdir are listed in its repository's
// info/exclude for the run (exclude.go), so that the agent's `git add -A`
// does not commit them.
package placeholder

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
	"github.com/agent-sandbox/agent-sandbox/internal/safefs"
)

// record is one placeholder a run created, one JSON line in the workdir's
// registry, so that the last run in that workdir removes it.
type record struct {
	Path string `json:"path"`
	Dir  bool   `json:"dir"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
	// Exclude, when set, makes this entry a line added to the git
	// exclude file Path (after excludeMarker), so that the agent's
	// `git add -A` does not commit a placeholder file.
	Exclude string `json:"exclude,omitempty"`
	// Content is what a placeholder file holds ("{}\n" for a JSON name,
	// so that the tool reading it inside the sandbox sees an empty
	// configuration, not a syntax error; else nothing).
	Content string `json:"content,omitempty"`
	// Pending is written just before the placeholder is made (its inode
	// is not known yet): a run of another engine in the workdir whose
	// watch sees the placeholder appear before its record does not take
	// it for a change (Registry).
	Pending bool `json:"pending,omitempty"`
}

// contentOf is what a missing protected file is created with: "{}" for a
// JSON name (the tool reading it inside reads an empty configuration, not
// a syntax error), "." for a git dir's commondir (the git dir itself, as
// without one: an empty commondir breaks the repository), else nothing.
func contentOf(path string) string {
	switch {
	case strings.HasSuffix(path, ".json"):
		return "{}\n"
	case filepath.Base(path) == "commondir":
		return ".\n"
	}
	return ""
}

// Set is the placeholders of one run, and the locks it holds for them.
type Set struct {
	ledger  protect.Ledger
	workdir string
	dir     string // the state root's protect/
	lock    *os.File
	held    []*os.File
	regPath string
	reg     *os.File // the registry, open for appending during the run
	st      *stash

	mu   sync.Mutex
	ours []record // made by this run
}

// Make creates the missing read-only entries of l (and missing
// directories on their way, never through a symlink), records them, lists
// the files made in the workdir in its git exclude file, and takes the
// locks. stateRoot is agent-sandbox's state directory. Release must be
// called once after the run; on an error nothing is left held.
func Make(l protect.Ledger, stateRoot, workdir string) (*Set, error) {
	s := &Set{ledger: l, workdir: workdir}
	if len(l.ReadOnly()) == 0 {
		return s, nil
	}
	s.dir = filepath.Join(stateRoot, "protect")
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %v", s.dir, err)
	}
	sum := sha256.Sum256([]byte(workdir))
	key := hex.EncodeToString(sum[:8])
	lock, err := openFile(filepath.Join(s.dir, key+".lock"), unix.O_RDWR|unix.O_CREAT)
	if err != nil {
		return nil, fmt.Errorf("opening the protection lock: %v", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_SH); err != nil {
		lock.Close()
		return nil, fmt.Errorf("locking %s: %v", lock.Name(), err)
	}
	s.lock = lock
	if err := os.Mkdir(filepath.Join(s.dir, "dirs"), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		s.Release(io.Discard)
		return nil, fmt.Errorf("creating %s: %v", filepath.Join(s.dir, "dirs"), err)
	}
	if s.held, err = lockDirs(s.dir, l.Dirs()); err != nil {
		s.Release(io.Discard)
		return nil, err
	}
	s.regPath = filepath.Join(s.dir, key+".placeholders")
	if s.reg, err = openFile(s.regPath, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT); err != nil {
		s.Release(io.Discard)
		return nil, fmt.Errorf("opening %s: %v", s.regPath, err)
	}
	s.st = openStash(s.dir)
	var files []string        // placeholder files created in the workdir
	roots := map[string]int{} // each entry's root, opened once
	defer func() {
		for _, fd := range roots {
			unix.Close(fd)
		}
	}()
	for _, e := range l.ReadOnly() {
		if e.Link != "" {
			continue // a link the user made: kept as it is, never created
		}
		root, ok := roots[e.Root]
		if !ok {
			if root, err = safefs.OpenFd(e.Root, unix.O_PATH|unix.O_DIRECTORY, 0); err != nil {
				s.Release(io.Discard)
				return nil, fmt.Errorf("protected path %s: opening %s: %w", e.Path, e.Root, err)
			}
			roots[e.Root] = root
		}
		made, err := s.make(e, root)
		if err != nil {
			s.Release(io.Discard)
			return nil, err
		}
		for _, m := range made {
			if !m.Dir && e.Root == workdir {
				files = append(files, m.Path)
			}
		}
	}
	if err := s.exclude(files); err != nil {
		s.Release(io.Discard)
		return nil, err
	}
	return s, nil
}

// Ensure creates the read-only entry at path again when it is missing
// (the host removed it during the run), recorded like the others; the
// view then binds it. A path that is no read-only entry of the ledger is
// refused.
func (s *Set) Ensure(path string) error {
	for _, e := range s.ledger.ReadOnly() {
		if e.Path == path && e.Link == "" {
			root, err := safefs.OpenFd(e.Root, unix.O_PATH|unix.O_DIRECTORY, 0)
			if err != nil {
				return fmt.Errorf("protected path %s: opening %s: %w", e.Path, e.Root, err)
			}
			defer unix.Close(root)
			_, err = s.make(e, root)
			return err
		}
	}
	return fmt.Errorf("%s is not a read-only entry of the run's ledger", path)
}

// make creates what is missing of entry e below its root (open at root)
// and records it.
func (s *Set) make(e protect.Entry, root int) ([]record, error) {
	var made []record
	w := safefs.Walker{
		Create: func(parent int, name, path string, dir bool) error {
			content := ""
			if !dir {
				content = contentOf(path)
			}
			b, _ := json.Marshal(record{Path: path, Dir: dir, Content: content, Pending: true})
			if _, err := s.reg.Write(append(b, '\n')); err != nil {
				return fmt.Errorf("recording %s: %w", path, err)
			}
			if s.st.take(path, dir, content, parent, name) {
				return nil
			}
			if dir {
				return unix.Mkdirat(parent, name, 0o755)
			}
			f, err := unix.Openat(parent, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
			if err != nil {
				return err
			}
			defer unix.Close(f)
			if content != "" {
				_, err = unix.Write(f, []byte(content))
			}
			return err
		},
		Made: func(fd int, path string, dir bool) error {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return err
			}
			r := record{Path: path, Dir: dir, Dev: st.Dev, Ino: st.Ino}
			if !dir {
				r.Content = contentOf(path)
			}
			b, _ := json.Marshal(r)
			if _, err := s.reg.Write(append(b, '\n')); err != nil {
				return fmt.Errorf("recording %s: %w", path, err)
			}
			made = append(made, r)
			return nil
		},
	}
	end := safefs.File
	if e.Dir {
		end = safefs.Dir
	}
	fd, err := w.Open(root, e.Root, strings.TrimPrefix(e.Path, e.Root+"/"), end)
	s.mu.Lock()
	s.ours = append(s.ours, made...)
	s.mu.Unlock()
	if err != nil {
		return made, fmt.Errorf("protected path %s: %v (%s, or fix it)", e.Path, err, lift(e))
	}
	unix.Close(fd)
	return made, nil
}

// lift says how the user lets the agent edit e.
func lift(e protect.Entry) string {
	if e.Name == "agent config" {
		return "remove it from the agent folder's code_paths"
	}
	return "allow the agent to edit it with --allow-edit " + e.Name
}

// Release removes the placeholders (when this run is the last in its
// workdir, and no other run binds them), drops the locks, and returns the
// placeholders this run made that are still there exactly as made (left
// for a run that still binds them), which the end-of-run scan must not
// mistake for something the agent planted. A nil *Set releases nothing.
func (s *Set) Release(stderr io.Writer) (intact []string) {
	if s == nil || s.lock == nil {
		return nil
	}
	for _, f := range s.held {
		f.Close() // this run's shared locks: its view is gone
	}
	s.held = nil
	if s.reg != nil {
		s.reg.Close()
		s.reg = nil
	}
	if s.regPath != "" {
		top := s.ledger.Top
		if top == "" {
			top = s.workdir
		}
		removeAll(s.lock, s.regPath, s.st, s.dir, top, stderr)
	}
	s.st.close()
	s.lock.Close()
	s.lock = nil
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.ours {
		if stillAsMade(p) {
			intact = append(intact, p.Path)
		}
	}
	return intact
}

// dirLock opens the lock file of directory d in the protection state dir
// stateDir (protect/dirs/<hash of d>.lock, created when missing).
func dirLock(stateDir, d string) (*os.File, error) {
	sum := sha256.Sum256([]byte(d))
	return openFile(filepath.Join(stateDir, "dirs", hex.EncodeToString(sum[:16])+".lock"), unix.O_RDWR|unix.O_CREAT)
}

// openFile opens one of the state root's own files (locks, the registry;
// created 0600 when missing) as a plain blocking file: os.OpenFile's way
// costs four more system calls (a non-blocking switch, a poller
// registration a regular file refuses, the switch back), and a run opens
// a dozen of these.
func openFile(path string, flags int) (*os.File, error) {
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// tryExclusive takes the lock of directory d exclusively without waiting,
// and returns it held, or nil when another run holds it (or it cannot be
// opened: then nothing is removed there either).
func tryExclusive(stateDir, d string) *os.File {
	l, err := dirLock(stateDir, d)
	if err != nil {
		return nil
	}
	if unix.Flock(int(l.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		l.Close()
		return nil
	}
	return l
}

// lockDirs takes the shared lock of each of dirs for the run, waiting
// while a run that ends removes placeholders there.
func lockDirs(stateDir string, dirs []string) ([]*os.File, error) {
	var held []*os.File
	for _, d := range dirs {
		f, err := dirLock(stateDir, d)
		if err == nil {
			if err = unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
				f.Close()
			}
		}
		if err != nil {
			for _, h := range held {
				h.Close()
			}
			return nil, fmt.Errorf("locking the protection of %s: %v", d, err)
		}
		held = append(held, f)
	}
	return held, nil
}

// removeAll removes the recorded placeholders that are still empty and
// still the inode that was created, when no other run in the workdir
// holds the lock; otherwise it leaves them to the last run. A placeholder
// whose directory's lock another run holds (it binds the placeholder, or
// something beside it) stays, and so does its record (and its line in the
// git exclude file): a later run in the workdir removes it.
func removeAll(lock *os.File, regPath string, st *stash, stateDir, top string, stderr io.Writer) {
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return // another run in this workdir is going: it cleans up
	}
	f, err := os.Open(regPath)
	if err != nil {
		return
	}
	var list []record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p record
		if json.Unmarshal(sc.Bytes(), &p) == nil && filepath.IsAbs(p.Path) && !p.Pending {
			list = append(list, p)
		}
	}
	f.Close()
	// Deepest first: a placeholder file before the placeholder directory
	// that holds it.
	sort.SliceStable(list, func(i, j int) bool {
		return strings.Count(list[i].Path, "/") > strings.Count(list[j].Path, "/")
	})
	// The directories' locks, held exclusively until the end (never
	// waited for: a run that starts meanwhile waits for them instead).
	dirLocks := map[string]*os.File{}
	defer func() {
		for _, l := range dirLocks {
			if l != nil {
				l.Close()
			}
		}
	}()
	exclusive := func(d string) bool {
		l, ok := dirLocks[d]
		if !ok {
			l = tryExclusive(stateDir, d)
			dirLocks[d] = l
		}
		return l != nil
	}
	var left []string
	var kept []record // still bound by another run
	keptPath := map[string]bool{}
	excluded := map[string]map[string]bool{}
	for _, p := range list {
		if p.Exclude != "" {
			if excluded[p.Path] == nil {
				excluded[p.Path] = map[string]bool{}
			}
			excluded[p.Path][p.Exclude] = true
			continue
		}
		if !exclusive(filepath.Dir(p.Path)) {
			kept = append(kept, p)
			keptPath[p.Path] = true
			continue
		}
		if err := removeIfPlaceholder(p, st); err != nil {
			left = append(left, p.Path)
		}
	}
	for ex, patterns := range excluded {
		for pattern := range patterns {
			if keptPath[top+pattern] {
				delete(patterns, pattern)
				kept = append(kept, record{Path: ex, Exclude: pattern})
			}
		}
		unexclude(ex, patterns)
	}
	if len(left) > 0 {
		diag.Warnf(stderr, "placeholders of protected paths could not be removed (no longer empty, or in use): %s", strings.Join(left, ", "))
	}
	var rest []byte
	for _, p := range kept {
		b, _ := json.Marshal(p)
		rest = append(append(rest, b...), '\n')
	}
	if len(rest) == 0 {
		_ = os.Truncate(regPath, 0)
	} else {
		_ = os.WriteFile(regPath, rest, 0o600)
	}
}

// removeIfPlaceholder removes p when the name still holds the very inode
// that was created and it is empty; a name that changed is left alone.
// The inode goes back to st (kept for the next run at the same path)
// when st can take it, else it is deleted.
func removeIfPlaceholder(p record, st *stash) error {
	parent, err := safefs.OpenFd(filepath.Dir(p.Path), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil // gone, or no longer reachable without a symlink
	}
	defer unix.Close(parent)
	name := filepath.Base(p.Path)
	var fst unix.Stat_t
	if err := unix.Fstatat(parent, name, &fst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil
	}
	if fst.Dev != p.Dev || fst.Ino != p.Ino {
		return nil
	}
	if p.Dir {
		if fst.Mode&unix.S_IFMT != unix.S_IFDIR {
			return nil
		}
		if st.keep(p, parent, name, -1) {
			return nil
		}
		if err := unix.Unlinkat(parent, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
		return nil
	}
	if fst.Mode&unix.S_IFMT != unix.S_IFREG || fst.Size != int64(len(p.Content)) {
		return errors.New("not empty")
	}
	// One descriptor for the content check and the stash's. An empty
	// placeholder that cannot be opened (the user made it mode 000) is
	// removed by name, unread, as before.
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == nil {
		defer unix.Close(fd)
	} else if p.Content != "" {
		return err
	}
	if p.Content != "" && !holds(fd, p.Content) {
		return errors.New("changed")
	}
	if err == nil && st.keep(p, parent, name, fd) {
		return nil
	}
	if err := unix.Unlinkat(parent, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return nil
}

// stillAsMade reports whether p's path still holds the very placeholder
// that was made, as it was made (asMade), reached without a symlink.
func stillAsMade(p record) bool {
	fd, err := safefs.OpenFd(p.Path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var fst unix.Stat_t
	return unix.Fstat(fd, &fst) == nil && fst.Dev == p.Dev && fst.Ino == p.Ino && asMade(fd, p.Dir, p.Content)
}

// holds reports whether the file open at fd holds exactly content.
func holds(fd int, content string) bool {
	buf := make([]byte, len(content)+1)
	n, _ := unix.Pread(fd, buf, 0)
	return string(buf[:n]) == content
}

// emptyDir reports whether the directory open at fd has no entries.
func emptyDir(fd int) bool {
	buf := make([]byte, 256)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return false
		}
		if n <= 0 {
			return true
		}
		var names []string
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
		if len(names) > 0 { // ParseDirent leaves out "." and ".."
			return false
		}
	}
}
