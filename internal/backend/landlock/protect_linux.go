//go:build linux

package landlock

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
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/gitdir"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// placeholder is one protected path a run created because it was missing:
// the view needs something to bind read-only at its name, or the agent
// could create it. Recorded (one JSON line each) in the workdir's registry
// so that the last run in that workdir removes it.
type placeholder struct {
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
}

// placeholderContent is what a missing protected file is created with.
func placeholderContent(path string) string {
	if strings.HasSuffix(path, ".json") {
		return "{}\n"
	}
	return ""
}

// ensureProtected makes every protected path of s exist before the view is
// built: a missing one (and missing directories on its way) is created
// empty, so that the view binds it read-only and the agent cannot create
// it (Landlock only adds rights; a bind needs a mount point). No symlink
// is followed; one on the way refuses the run.
//
// Placeholders are removed after the run when still empty. Runs coordinate
// through lock files in agent-sandbox's state root, because removing a
// mount point in another run's namespace would detach that run's
// protection. Runs in one workdir share its lock for their whole run, and
// only a run that then gets it exclusively (no other run in that workdir
// is going) removes placeholders. Runs in different workdirs can protect
// the same path (a repository's git dir, for two workdirs in one
// repository): every run also holds shared, for its whole run, the lock of
// each directory that holds one of its protected paths' mount points
// (protectedDirs), and a placeholder is removed only under its directory's
// lock held exclusively; one another run still binds is left, and its
// record kept, for a later run. Placeholders left by a killed run are
// removed by the next run that ends alone. release must be called once;
// it returns the placeholders this run made that are still there, exactly
// as made (left for a run that still binds them), which the end-of-run
// scan must not mistake for something the agent planted.
func ensureProtected(s spec.Spec, stderr io.Writer) (release func() (intact []string), err error) {
	noop := func() []string { return nil }
	if len(s.Protected) == 0 {
		return noop, nil
	}
	dir := filepath.Join(s.StateRoot(), "protect")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return noop, fmt.Errorf("creating %s: %v", dir, err)
	}
	sum := sha256.Sum256([]byte(s.Workdir))
	key := hex.EncodeToString(sum[:8])
	lock, err := os.OpenFile(filepath.Join(dir, key+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return noop, fmt.Errorf("opening the protection lock: %v", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_SH); err != nil {
		lock.Close()
		return noop, fmt.Errorf("locking %s: %v", lock.Name(), err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dirs"), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		lock.Close()
		return noop, fmt.Errorf("creating %s: %v", filepath.Join(dir, "dirs"), err)
	}
	held, err := lockDirs(dir, protectedDirs(s))
	if err != nil {
		lock.Close()
		return noop, err
	}
	regPath := filepath.Join(dir, key+".placeholders")
	st := openStash(dir)
	var ours []placeholder // made by this run
	release = func() []string {
		for _, f := range held {
			f.Close() // this run's shared locks: its view is gone
		}
		removePlaceholders(lock, regPath, st, dir, s.Workdir, stderr)
		st.close()
		lock.Close()
		var intact []string
		for _, p := range ours {
			if stillAsMade(p) {
				intact = append(intact, p.Path)
			}
		}
		return intact
	}
	reg, err := os.OpenFile(regPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		release()
		return noop, fmt.Errorf("opening %s: %v", regPath, err)
	}
	defer reg.Close()
	roots := s.Writable()
	var files []string // placeholder files created in the workdir
	for _, pp := range s.Protected {
		if pp.Optional {
			continue // protected only as it exists; never created
		}
		root := grantRoot(pp.Path, roots)
		if root == "" {
			continue
		}
		made, err := makeProtected(root, pp.Path, pp.Dir, reg, st)
		if err != nil {
			release()
			return noop, fmt.Errorf("protected path %s: %v (allow the agent to edit it with --allow-edit %s, or fix it)", pp.Path, err, pp.Name)
		}
		ours = append(ours, made...)
		for _, m := range made {
			if !m.Dir && root == s.Workdir {
				files = append(files, m.Path)
			}
		}
	}
	if err := excludePlaceholders(s, files, reg); err != nil {
		release()
		return noop, err
	}
	return release, nil
}

// protectedDirs are the directories that hold a mount point of the view's
// protection of s (protectedMounts): for each protected path inside a
// writable grant, its directory and every directory up to the grant (each
// holds a pinned directory's mount point).
func protectedDirs(s spec.Spec) []string {
	roots := s.Writable()
	seen := map[string]bool{}
	var out []string
	for _, pp := range s.Protected {
		root := grantRoot(pp.Path, roots)
		if root == "" {
			continue
		}
		for d := filepath.Dir(pp.Path); ; d = filepath.Dir(d) {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
			if d == root || len(d) <= len(root) {
				break
			}
		}
	}
	return out
}

// grantRoot is the longest of roots that path lies below, or "".
func grantRoot(path string, roots []string) string {
	root := ""
	for _, r := range roots {
		if strings.HasPrefix(path, r+"/") && len(r) > len(root) {
			root = r
		}
	}
	return root
}

// dirLock opens the lock file of directory d in the protection state dir
// stateDir (protect/dirs/<hash of d>.lock, created when missing;
// ensureProtected creates protect/dirs/).
func dirLock(stateDir, d string) (*os.File, error) {
	sum := sha256.Sum256([]byte(d))
	return os.OpenFile(filepath.Join(stateDir, "dirs", hex.EncodeToString(sum[:16])+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
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

// lockDirs takes the shared lock of each of dirs for the run (see
// ensureProtected), waiting while a run that ends removes placeholders
// there.
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

// excludeMarker precedes each line agent-sandbox adds to a repository's
// info/exclude.
const excludeMarker = "# agent-sandbox: a placeholder of a protected file, for this run only (remove the next line if agent-sandbox was killed)"

// excludePlaceholders adds the placeholder files created in the workdir
// to its repository's info/exclude (when that lies in a writable grant),
// so that git inside does not list them and an agent's `git add -A` does
// not commit them; removePlaceholders takes the lines out again.
func excludePlaceholders(s spec.Spec, files []string, reg *os.File) error {
	if len(files) == 0 {
		return nil
	}
	ex := excludeFile(s.Workdir)
	inside := false
	for _, w := range s.Writable() {
		if strings.HasPrefix(ex, w+"/") {
			inside = true
		}
	}
	if ex == "" || !inside {
		return nil
	}
	if st, err := os.Lstat(ex); err == nil && !st.Mode().IsRegular() {
		return nil // not a plain file: leave it alone
	}
	// The git dir is the agent's to write (between runs too): no
	// component of the way to info/exclude may be a symlink, or the
	// lines would land wherever it points.
	if err := mkdirNoSymlinks(filepath.Dir(ex)); err != nil {
		return fmt.Errorf("creating %s: %v", filepath.Dir(ex), err)
	}
	f, err := openNoSymlinks(ex, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("opening %s: %v", ex, err)
	}
	defer f.Close()
	for _, p := range files {
		pattern := "/" + strings.TrimPrefix(p, s.Workdir+"/")
		if _, err := fmt.Fprintf(f, "%s\n%s\n", excludeMarker, pattern); err != nil {
			return fmt.Errorf("writing %s: %v", ex, err)
		}
		b, _ := json.Marshal(placeholder{Path: ex, Exclude: pattern})
		if _, err := reg.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("recording %s: %v", ex, err)
		}
	}
	return nil
}

// excludeFile is the info/exclude git reads for the working tree workdir
// (in the common dir of a linked worktree), or "".
func excludeFile(workdir string) string {
	dg := filepath.Join(workdir, ".git")
	if st, err := os.Lstat(dg); err == nil && st.IsDir() {
		return filepath.Join(dg, "info", "exclude")
	}
	l, err := gitdir.Find(workdir)
	if err != nil || l == nil {
		return ""
	}
	if l.CommonDir != "" {
		return filepath.Join(l.CommonDir, "info", "exclude")
	}
	return filepath.Join(l.GitDir, "info", "exclude")
}

// unexclude removes the marker and pattern pairs recorded for the exclude
// file ex.
func unexclude(ex string, patterns map[string]bool) {
	f, err := openNoSymlinks(ex, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return
	}
	lines := strings.SplitAfter(string(b), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); i++ {
		if strings.TrimSuffix(lines[i], "\n") == excludeMarker && i+1 < len(lines) && patterns[strings.TrimSuffix(lines[i+1], "\n")] {
			i++
			continue
		}
		out.WriteString(lines[i])
	}
	if out.String() != string(b) {
		if f.Truncate(0) == nil {
			_, _ = f.WriteAt([]byte(out.String()), 0)
		}
	}
}

// openNoSymlinks opens path (absolute) refusing a symlink in any of its
// components.
func openNoSymlinks(path string, flags int, mode uint32) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// mkdirNoSymlinks creates dir (absolute) when it is missing, its parent
// opened refusing symlinks; an existing dir must not be reached through
// one either.
func mkdirNoSymlinks(dir string) error {
	if f, err := openNoSymlinks(dir, unix.O_PATH|unix.O_DIRECTORY, 0); err == nil {
		return f.Close()
	} else if !errors.Is(err, unix.ENOENT) {
		return err
	}
	parent, err := openNoSymlinks(filepath.Dir(dir), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer parent.Close()
	if err := unix.Mkdirat(int(parent.Fd()), filepath.Base(dir), 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	return nil
}

// runGitDirs are the git directories of a run whose commondir git would
// follow: the workdir's .git (when a directory), the run's linked git dirs
// and their submodules' git dirs (protect.SubmoduleGitDirs).
func runGitDirs(s spec.Spec) []string {
	var dirs []string
	if st, err := os.Lstat(filepath.Join(s.Workdir, ".git")); err == nil && st.IsDir() {
		dirs = append(dirs, filepath.Join(s.Workdir, ".git"))
	}
	dirs = append(dirs, s.GitDirs...)
	var out []string
	for _, d := range dirs {
		out = append(append(out, d), protect.SubmoduleGitDirs(d)...)
	}
	return out
}

// missingCommondirs lists the commondir files absent from the run's git
// dirs before it starts. A commondir that exists is bound read-only in
// the view; one that is missing cannot be (no mount point), so the agent
// could create it and point the host's git at a repository it built, with
// its own config (core.fsmonitor) and hooks.
func missingCommondirs(s spec.Spec) []string {
	var out []string
	for _, g := range runGitDirs(s) {
		p := filepath.Join(g, "commondir")
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			out = append(out, p)
		}
	}
	return out
}

// disarmCommondirs moves aside each of paths (commondir files missing
// before the run) that exists after it, so that the host's next git
// command does not follow it, and says so. It runs before the bounded
// scan of the workdir, which cannot be made to skip it.
func disarmCommondirs(stderr io.Writer, paths []string) {
	for _, p := range paths {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		aside := fmt.Sprintf("%s.planted-%d", p, time.Now().Unix())
		if err := os.Rename(p, aside); err != nil {
			diag.Warnf(stderr, "DANGER: the agent created %s, which points your next git command in that repository at a repository of its own making (its config and hooks run on the host); moving it aside failed (%v): remove it before running git there", p, err)
			continue
		}
		diag.Warnf(stderr, "the agent created %s, which would point your next git command at a repository of its own making (its config and hooks run on the host): it was moved aside to %s; inspect it, then delete it", p, aside)
	}
}

// makeProtected creates what is missing of path below root (directories on
// the way, then path itself as a directory or an empty file), refusing
// symlinks, records what it created in reg and returns it. A placeholder
// kept in st from an earlier run at the same path is moved back rather
// than a new one created.
func makeProtected(root, path string, dir bool, reg *os.File, st *stash) (made []placeholder, err error) {
	cur, err := unix.Openat2(unix.AT_FDCWD, root, &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", root, err)
	}
	parts := strings.Split(strings.TrimPrefix(path, root+"/"), "/")
	at := root
	for i, name := range parts {
		last := i == len(parts)-1
		at = filepath.Join(at, name)
		next, err := unix.Openat(cur, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			asDir := !last || dir
			content := ""
			if !asDir {
				content = placeholderContent(at)
			}
			if st.take(at, asDir, content, cur, name) {
				err = nil
			} else if asDir {
				err = unix.Mkdirat(cur, name, 0o755)
			} else {
				var f int
				f, err = unix.Openat(cur, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
				if err == nil {
					if c := placeholderContent(at); c != "" {
						_, err = unix.Write(f, []byte(c))
					}
					unix.Close(f)
				}
			}
			if err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(cur)
				return made, fmt.Errorf("creating %s: %w", at, err)
			}
			next, err = unix.Openat(cur, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == nil {
				var st unix.Stat_t
				if unix.Fstat(next, &st) == nil {
					ph := placeholder{Path: at, Dir: asDir, Dev: st.Dev, Ino: st.Ino}
					if !asDir {
						ph.Content = placeholderContent(at)
					}
					b, _ := json.Marshal(ph)
					made = append(made, ph)
					if _, werr := reg.Write(append(b, '\n')); werr != nil {
						unix.Close(next)
						unix.Close(cur)
						return made, fmt.Errorf("recording %s: %w", at, werr)
					}
				}
			}
		}
		unix.Close(cur)
		if err != nil {
			return made, fmt.Errorf("%s: %w", at, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			return made, err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			unix.Close(next)
			return made, fmt.Errorf("%s is a symlink (refusing to follow it)", at)
		case unix.S_IFDIR:
		case unix.S_IFREG:
			if !last {
				unix.Close(next)
				return made, fmt.Errorf("%s is not a directory", at)
			}
		default:
			unix.Close(next)
			return made, fmt.Errorf("%s is neither a file nor a directory", at)
		}
		cur = next
	}
	unix.Close(cur)
	return made, nil
}

// removePlaceholders removes the recorded placeholders that are still
// empty and still the inode that was created, when no other run in the
// workdir holds the lock; otherwise it leaves them to the last run. A
// placeholder whose directory's lock another run holds (it binds the
// placeholder, or something beside it) stays, and so does its record (and
// its line in the git exclude file): a later run in the workdir removes it.
func removePlaceholders(lock *os.File, regPath string, st *stash, stateDir, workdir string, stderr io.Writer) {
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return // another run in this workdir is going: it cleans up
	}
	f, err := os.Open(regPath)
	if err != nil {
		return
	}
	var list []placeholder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p placeholder
		if json.Unmarshal(sc.Bytes(), &p) == nil && filepath.IsAbs(p.Path) {
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
	var kept []placeholder // still bound by another run
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
			if keptPath[workdir+pattern] {
				delete(patterns, pattern)
				kept = append(kept, placeholder{Path: ex, Exclude: pattern})
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
func removeIfPlaceholder(p placeholder, st *stash) error {
	parent, err := unix.Openat2(unix.AT_FDCWD, filepath.Dir(p.Path), &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
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
		if st.keep(p, parent, name) {
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
	if p.Content != "" {
		fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		ok := holds(fd, p.Content)
		unix.Close(fd)
		if !ok {
			return errors.New("changed")
		}
	}
	if st.keep(p, parent, name) {
		return nil
	}
	if err := unix.Unlinkat(parent, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return nil
}

// stillAsMade reports whether p's path still holds the very placeholder
// that was made, as it was made (asMade), reached without a symlink.
func stillAsMade(p placeholder) bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, p.Path, &unix.OpenHow{
		Flags: unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
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

// stash keeps placeholders between runs, one slot per placeholder path, in
// agent-sandbox's state root (protect/stash/, which no agent is granted):
// after a run an empty placeholder is renamed into its slot instead of
// deleted, and the next run that needs it renames it back instead of
// creating an inode. A rename costs a tenth of a create and a delete on
// ext4 without a journal, which skips recently deleted inodes when it
// allocates one; with a journal it is about even. An inode only ever
// returns to the path it was made for, so a placeholder someone kept a
// descriptor to cannot carry what they write through it to another
// project. Each slot is checked (asMade: ours, the right kind, empty or
// holding exactly the placeholder's content, no attribute a writer could
// set) before it is used, and after a placeholder is put back (a write
// that raced the check sends it back to its path, where the end-of-run
// check finds it). A nil *stash (the state root unusable) keeps nothing:
// placeholders are created and deleted.
type stash struct {
	fd  int
	dev uint64
}

// openStash opens (creating it) protect/stash/ below dir; nil when that
// fails.
func openStash(dir string) *stash {
	path := filepath.Join(dir, "stash")
	if err := unix.Mkdir(path, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return nil
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Uid != uint32(os.Geteuid()) || st.Mode&0o077 != 0 {
		unix.Close(fd)
		return nil
	}
	return &stash{fd: fd, dev: st.Dev}
}

func (st *stash) close() {
	if st != nil {
		unix.Close(st.fd)
	}
}

// slot is the stash entry of the placeholder at path.
func slot(path string, dir bool, content string) string {
	sum := sha256.Sum256([]byte(path))
	kind := "f"
	switch {
	case dir:
		kind = "d"
	case content != "":
		kind = "c"
	}
	return hex.EncodeToString(sum[:16]) + "." + kind
}

// take moves the stashed placeholder of path, when there is a valid one,
// to name in the directory at, and reports whether it did.
func (st *stash) take(path string, dir bool, content string, at int, name string) bool {
	if st == nil {
		return false
	}
	s := slot(path, dir, content)
	fd, err := unix.Openat(st.fd, s, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if !asMade(fd, dir, content) {
		// Not what it should be: it stays out of use.
		_ = unix.Renameat(st.fd, s, st.fd, s+".bad")
		return false
	}
	var pst unix.Stat_t
	if unix.Fstat(at, &pst) != nil || pst.Dev != st.dev {
		return false // another filesystem: no rename there
	}
	// A write through a descriptor kept from an earlier run at this path
	// can still come after the check, as it can into a placeholder made
	// new: the end-of-run check finds it, and the placeholder is left
	// where it is, with a warning.
	return unix.Renameat2(st.fd, s, at, name, unix.RENAME_NOREPLACE) == nil
}

// keep moves the placeholder p, found as name in parent and checked by
// the caller, into its slot, and reports whether it did. A placeholder
// found changed once it is in the slot goes back to its name.
func (st *stash) keep(p placeholder, parent int, name string) bool {
	if st == nil || p.Dev != st.dev {
		return false
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var fst unix.Stat_t
	if unix.Fstat(fd, &fst) != nil || fst.Ino != p.Ino || fst.Dev != p.Dev || !asMade(fd, p.Dir, p.Content) {
		return false
	}
	s := slot(p.Path, p.Dir, p.Content)
	if err := unix.Renameat2(parent, name, st.fd, s, unix.RENAME_NOREPLACE); err != nil {
		return false
	}
	if !asMade(fd, p.Dir, p.Content) {
		// Written between the check and the rename: back to its name
		// (or, should that be taken meanwhile, out of use).
		if unix.Renameat2(st.fd, s, parent, name, unix.RENAME_NOREPLACE) != nil {
			_ = unix.Renameat(st.fd, s, st.fd, s+".bad")
		}
		return false
	}
	return true
}

// asMade reports whether fd is a placeholder as made: owned by this user,
// a directory with no entries, or a file with one link holding exactly
// content, and with no extended attribute anyone could have set on it (a
// user.* attribute, or an ACL, which would also change the rights of what
// the user creates in it later).
func asMade(fd int, dir bool, content string) bool {
	var fst unix.Stat_t
	if unix.Fstat(fd, &fst) != nil || fst.Uid != uint32(os.Geteuid()) || settableXattrs(fd) {
		return false
	}
	if dir {
		return fst.Mode&unix.S_IFMT == unix.S_IFDIR && emptyDir(fd)
	}
	return fst.Mode&unix.S_IFMT == unix.S_IFREG && fst.Nlink == 1 &&
		fst.Size == int64(len(content)) && (content == "" || holds(fd, content))
}

// settableXattrs reports whether fd has a user.* or ACL attribute (or its
// attributes cannot be listed). Attributes an LSM sets on every file
// (security.*) do not count.
func settableXattrs(fd int) bool {
	buf := make([]byte, 1024)
	n, err := unix.Flistxattr(fd, buf)
	if errors.Is(err, unix.ENOTSUP) {
		return false // the filesystem has none
	}
	if err != nil {
		return true
	}
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if strings.HasPrefix(name, "user.") || strings.HasPrefix(name, "system.posix_acl") {
			return true
		}
	}
	return false
}

// Bounds of the scan for git metadata planted during a run.
const (
	scanMaxEntries = 500000
	scanMaxTime    = 5 * time.Second
)

// warnPlantedGit scans the working directory after a run for what the
// view cannot predict: git directories (a .git directory or file anywhere
// below it, the workdir's own included, with their submodules and
// worktrees) whose config, commondir, hooks or .git file were created or
// changed since started, and the protected names (.vscode, .envrc,
// .claude, ...) in subdirectories, where only the top of the workdir is
// protected, and the names other tools run code from that no run keeps
// read-only (protect.Reported: .pi, opencode.json, .husky, ...) at any
// depth. It warns, naming each: the user's next git command there, or
// opening that folder, runs what the agent planted. node_modules trees are
// skipped; the scan is bounded (scanMaxEntries, scanMaxTime) and says so
// when it stops early. placeholders are the run's own placeholders still
// as made (ensureProtected's release): never reported.
// before is what recentBefore found at the top of the workdir as the run
// started: the scan then does not report those paths while they are
// still exactly as they were.
func warnPlantedGit(stderr io.Writer, workdir string, started time.Time, placeholders []string, before map[string]fingerprint) {
	since := scanSince(started)
	made := map[string]bool{}
	for _, p := range placeholders {
		made[p] = true
	}
	// What the run made itself, still untouched, was not planted (made
	// just before the run started, it can look changed since); nor was
	// what the user changed just before the run, still as it was then.
	planted := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			if made[p] {
				continue
			}
			if was, ok := before[p]; ok {
				if now, ok := fingerprintOf(p); ok && now == was {
					continue
				}
			}
			out = append(out, p)
		}
		return out
	}
	deadline := time.Now().Add(scanMaxTime)
	entries, stopped := 0, false
	var tools, others []string
	_ = filepath.WalkDir(workdir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		entries++
		if entries > scanMaxEntries || (entries%1024 == 0 && time.Now().After(deadline)) {
			stopped = true
			return filepath.SkipAll
		}
		name := d.Name()
		if name == "node_modules" && d.IsDir() {
			return filepath.SkipDir
		}
		if name != ".git" {
			if path == workdir {
				return nil
			}
			if toolFiles[name] && filepath.Dir(path) != workdir {
				tools = append(tools, planted(changedTree(path, d.IsDir(), since))...)
			} else if protect.Reported(name) {
				others = append(others, planted(changedTree(path, d.IsDir(), since))...)
			}
			return nil
		}
		changed := planted(gitChanged(path, d, since))
		if len(changed) > 0 {
			diag.Warnf(stderr, "the agent created or changed git metadata that git runs on the host: %s; your next git command in %s runs what it planted: inspect it (or remove that .git) before running git there", strings.Join(changed, ", "), filepath.Dir(path))
		}
		if d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
	if len(tools) > 0 {
		diag.Warnf(stderr, "the agent created or changed files your tools run code from, in subdirectories of the project (only its top is kept read-only): %s; inspect them before opening those folders or entering them with direnv", strings.Join(tools, ", "))
	}
	if len(others) > 0 {
		diag.Warnf(stderr, "the agent created or changed files other tools run code from, which the sandbox does not keep read-only: %s; inspect them before you run the tool they belong to (another agent, your editor, a git hook manager, mise, a dev container) in this project outside the sandbox", strings.Join(others, ", "))
	}
	if stopped {
		diag.Warnf(stderr, "the scan of %s for git metadata and tool files planted during the run stopped after %d entries: what lies beyond was not checked", workdir, entries)
	}
}

// scanSince is the time from which the scan after a run counts a status
// change as the agent's. It lies before started by more than the coarse
// clock the kernel stamps ctimes with lags behind (a tick: 1 to 10 ms), so
// that nothing the agent changes is missed; what changed in that margin
// before the run is told apart by recentBefore.
func scanSince(started time.Time) time.Time {
	return started.Add(-10 * time.Millisecond)
}

// recentBefore fingerprints, as a run starts, what the scan after it would
// report at the top of the workdir already (a git command or an editor
// that wrote .git/config or .husky/ in the moment before the run): the
// workdir's own .git and the protect.Reported names at its top. Usually
// nothing there changed that recently, and it costs one directory read
// and a few stats. Deeper paths changed in that moment are still reported.
func recentBefore(workdir string, started time.Time) map[string]fingerprint {
	since := scanSince(started)
	ents, err := os.ReadDir(workdir)
	if err != nil {
		return nil
	}
	var paths []string
	for _, e := range ents {
		path := filepath.Join(workdir, e.Name())
		if e.Name() == ".git" {
			paths = append(paths, gitChanged(path, e, since)...)
		} else if protect.Reported(e.Name()) {
			paths = append(paths, changedTree(path, e.IsDir(), since)...)
		}
	}
	var out map[string]fingerprint
	for _, p := range paths {
		if f, ok := fingerprintOf(p); ok {
			if out == nil {
				out = map[string]fingerprint{}
			}
			out[p] = f
		}
	}
	return out
}

// fingerprint is what a path is, for git or a tool that runs it: its
// identity, type and permission bits, size, and a hash of its content (a
// file's bytes, a directory's sorted names, a symlink's target). Its ctime
// is left out: that is what made the path look changed.
type fingerprint struct {
	dev, ino uint64
	mode     uint32
	size     int64
	sum      [sha256.Size]byte
}

// maxFingerprint bounds the file content fingerprintOf reads; a larger
// file is not fingerprinted (and stays reported).
const maxFingerprint = 1 << 20

// fingerprintOf returns p's fingerprint, without following a symlink at
// p; ok is false when p cannot be read whole.
func fingerprintOf(p string) (f fingerprint, ok bool) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return f, false
	}
	f = fingerprint{dev: uint64(st.Dev), ino: st.Ino, mode: st.Mode, size: st.Size}
	h := sha256.New()
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if st.Size > maxFingerprint {
			return f, false
		}
		file, err := openNoSymlinks(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err != nil {
			return f, false
		}
		defer file.Close()
		// The content read must be the file statted.
		var fst unix.Stat_t
		if unix.Fstat(int(file.Fd()), &fst) != nil || fst.Dev != st.Dev || fst.Ino != st.Ino {
			return f, false
		}
		n, err := io.Copy(h, io.LimitReader(file, maxFingerprint+1))
		if err != nil || n != st.Size {
			return f, false
		}
	case unix.S_IFDIR:
		ents, err := os.ReadDir(p)
		if err != nil {
			return f, false
		}
		for _, e := range ents { // sorted by name
			h.Write([]byte(e.Name()))
			h.Write([]byte{0})
		}
	case unix.S_IFLNK:
		target, err := os.Readlink(p)
		if err != nil {
			return f, false
		}
		h.Write([]byte(target))
	default:
		return f, false
	}
	h.Sum(f.sum[:0])
	return f, true
}

// toolFiles are the base names of the protected project names, looked
// for in subdirectories after a run (protect.Reported names are looked for
// everywhere).
var toolFiles = protect.ProjectTops()

// changedTree lists path, when changed since, and for a directory the
// entries below it (two levels) changed since.
func changedTree(path string, dir bool, since time.Time) []string {
	if !dir {
		if changedSince(path, since) {
			return []string{path}
		}
		return nil
	}
	var out []string
	var walk func(p string, depth int)
	walk = func(p string, depth int) {
		ents, err := os.ReadDir(p)
		if err != nil {
			return
		}
		for i, e := range ents {
			if i >= maxScanNested {
				break
			}
			q := filepath.Join(p, e.Name())
			if changedSince(q, since) {
				out = append(out, q)
			}
			if e.IsDir() && depth < 2 {
				walk(q, depth+1)
			}
		}
	}
	if changedSince(path, since) {
		out = append(out, path)
	}
	walk(path, 1)
	return out
}

// gitChanged lists what of the .git at path changed since: a gitfile
// itself, or what gitDirChanged lists of a git dir.
func gitChanged(path string, d fs.DirEntry, since time.Time) []string {
	if d.Type().IsRegular() {
		if changedSince(path, since) {
			return []string{path}
		}
	} else if d.IsDir() {
		return gitDirChanged(path, since, 0)
	}
	return nil
}

// gitDirChanged lists config, config.worktree, hooks/ and each hook of the
// git dir g (and of its submodules and worktrees) changed since.
func gitDirChanged(g string, since time.Time, depth int) []string {
	var out []string
	for _, name := range []string{"config", "config.worktree", "commondir", "hooks"} {
		if p := filepath.Join(g, name); changedSince(p, since) {
			out = append(out, p)
		}
	}
	if ents, err := os.ReadDir(filepath.Join(g, "hooks")); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".sample") {
				continue // git never runs these
			}
			if p := filepath.Join(g, "hooks", e.Name()); changedSince(p, since) {
				out = append(out, p)
			}
		}
	}
	if depth >= 4 {
		return out
	}
	for _, kind := range []string{"modules", "worktrees"} {
		ents, err := os.ReadDir(filepath.Join(g, kind))
		if err != nil {
			continue
		}
		for i, e := range ents {
			if i >= maxScanNested {
				break
			}
			if e.IsDir() {
				out = append(out, gitDirChanged(filepath.Join(g, kind, e.Name()), since, depth+1)...)
			}
		}
	}
	return out
}

// maxScanNested bounds the submodule and worktree entries scanned per
// git dir.
const maxScanNested = 256

// changedSince reports whether p exists with a status change (ctime, which
// the agent cannot set back) at or after since.
func changedSince(p string, since time.Time) bool {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return false
	}
	return !time.Unix(st.Ctim.Unix()).Before(since)
}
