package worktree

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Env is the whole environment of every git agent-sandbox runs on a
// worktree store: no system or user configuration (so no alias, filter,
// hook path, fsmonitor or credential helper of anyone's), no system
// attributes, no prompt, no replace refs, C locale. Nothing of the
// caller's environment passes (GIT_DIR, GIT_CONFIG_PARAMETERS...).
func Env() []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=/nonexistent",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_OPTIONAL_LOCKS=0",
		"LC_ALL=C",
	}
}

// SafeArgs come first on every such git command line: no hook runs, no
// fsmonitor starts, whatever a repository's configuration says.
var SafeArgs = []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "protocol.allow=never"}

// Git runs the git at path with Env and SafeArgs and returns its standard
// output; the error carries its standard error.
func Git(path string, args ...string) (string, error) {
	cmd := exec.Command(path, append(append([]string{}, SafeArgs...), args...)...)
	cmd.Env = Env()
	cmd.Dir = "/"
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// Held is a worktree made or taken for one run: its lock is held until
// Release.
type Held struct {
	Layout Layout
	lock   *os.File
}

// Release lets another run take the tree.
func (h *Held) Release() {
	if h != nil && h.lock != nil {
		_ = h.lock.Close()
		h.lock = nil
	}
}

// Create makes (or, for a NAME used before, takes) the run's tree as l
// says, with the git at git, and holds its lock. A tree another run holds
// is refused. A new tree is removed again when a step fails.
func Create(l Layout, git, agent string) (*Held, error) {
	if filepath.IsAbs(git) && within(git, l.Project) {
		return nil, fmt.Errorf("--worktree: git is %s, inside the project (which agents write); put a system git first on PATH", git)
	}
	root := filepath.Dir(filepath.Dir(l.Dir))
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("--worktree: the store: %v", err)
	}
	repairModes(root, filepath.Base(filepath.Dir(l.Dir)), filepath.Base(l.Dir))
	rootFd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("--worktree: the store %s: %v (a symlink is never followed)", root, err)
	}
	keyFd, err := openDirAt(rootFd, root, filepath.Base(filepath.Dir(l.Dir)), true)
	unix.Close(rootFd)
	if err != nil {
		return nil, fmt.Errorf("--worktree: the store: %v", err)
	}
	defer unix.Close(keyFd)
	dirFd, err := openDirAt(keyFd, filepath.Dir(l.Dir), filepath.Base(l.Dir), true)
	if err != nil {
		return nil, fmt.Errorf("--worktree: %s: %v", l.Dir, err)
	}
	defer unix.Close(dirFd)
	lockFd, err := unix.Openat(dirFd, "lock", unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--worktree: %s/lock: %v", l.Dir, err)
	}
	lock := os.NewFile(uintptr(lockFd), filepath.Join(l.Dir, "lock"))
	if err := unix.Flock(lockFd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("--worktree=%s: another run is using the tree %s; wait for it to end, or choose another NAME", l.Branch, l.Tree)
	}
	h := &Held{Layout: l, lock: lock}
	var st unix.Stat_t
	if unix.Fstatat(dirFd, "tree", &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		err = reuse(dirFd, l)
	} else {
		err = fresh(dirFd, l, git)
	}
	if err == nil {
		err = writeMeta(dirFd, l, agent)
	}
	if err != nil {
		h.Release()
		return nil, err
	}
	return h, nil
}

// fresh makes a new tree: git init (no template), the alternates, the
// branch at the project's HEAD, and its checkout.
func fresh(dirFd int, l Layout, git string) error {
	commit, err := Git(git, "--git-dir="+filepath.Join(l.Project, ".git"), "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil || commit == "" {
		return fmt.Errorf("--worktree: the project %s has no commit at HEAD to branch from; commit first (%v)", l.Project, err)
	}
	format, _ := Git(git, "--git-dir="+filepath.Join(l.Project, ".git"), "rev-parse", "--show-object-format")
	fail := func(err error) error {
		_ = os.RemoveAll(l.Tree)
		_ = unix.Unlinkat(dirFd, "project-objects", 0)
		return fmt.Errorf("--worktree: making %s: %v", l.Tree, err)
	}
	if err := unix.Mkdirat(dirFd, "tree", 0o755); err != nil {
		return fmt.Errorf("--worktree: %s: %v", l.Tree, err)
	}
	if err := linkObjects(dirFd, l); err != nil {
		return fail(err)
	}
	initArgs := []string{"init", "-q", "--template="}
	if format != "" && format != "sha1" {
		initArgs = append(initArgs, "--object-format="+format)
	}
	if _, err := Git(git, append(initArgs, l.Tree)...); err != nil {
		return fail(err)
	}
	if err := writeAlternates(dirFd, l); err != nil {
		return fail(err)
	}
	if err := writeInTree(dirFd, l, []string{".git", "info"}, "exclude", []byte(excludeFile)); err != nil {
		return fail(err)
	}
	in := "--git-dir=" + filepath.Join(l.Tree, ".git")
	for _, args := range [][]string{
		{in, "update-ref", "refs/heads/" + l.Branch, commit},
		{in, "symbolic-ref", "HEAD", "refs/heads/" + l.Branch},
		{in, "--work-tree=" + l.Tree, "read-tree", "--reset", "-u", "HEAD"},
	} {
		if _, err := Git(git, args...); err != nil {
			return fail(err)
		}
	}
	return nil
}

// reuse takes the tree of a NAME used before: its .git must be a
// directory (an agent may have left a symlink there), and its alternates
// and link are written again. No git runs in it.
func reuse(dirFd int, l Layout) error {
	treeFd, err := openDirAt(dirFd, l.Dir, "tree", false)
	if err != nil {
		return fmt.Errorf("--worktree: %s: %v", l.Tree, err)
	}
	defer unix.Close(treeFd)
	var st unix.Stat_t
	if err := unix.Fstatat(treeFd, ".git", &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("--worktree=%s: %s/.git is not a directory any more; remove %s (after saving what you need) or choose another NAME", l.Branch, l.Tree, l.Dir)
	}
	_ = unix.Unlinkat(dirFd, "project-objects", 0)
	if err := linkObjects(dirFd, l); err != nil {
		return fmt.Errorf("--worktree: %s: %v", l.ObjectsLink, err)
	}
	return writeAlternates(dirFd, l)
}

// linkObjects makes Dir/project-objects, the symlink to the project's
// objects that the tree's alternates name.
func linkObjects(dirFd int, l Layout) error {
	return unix.Symlinkat(l.Objects, dirFd, "project-objects")
}

// writeAlternates writes tree/.git/objects/info/alternates below the
// run's directory dirFd (a new file renamed into place: never through a
// link the agent left there).
func writeAlternates(dirFd int, l Layout) error {
	return writeInTree(dirFd, l, []string{".git", "objects", "info"}, "alternates", []byte(l.ObjectsLink+"\n"))
}

// writeInTree writes tree/<dirs...>/name below the run's directory dirFd,
// making the last of dirs when missing, following no symlink.
func writeInTree(dirFd int, l Layout, dirs []string, name string, data []byte) error {
	fd, path := dirFd, l.Dir
	for i, d := range append([]string{"tree"}, dirs...) {
		next, err := openDirAt(fd, path, d, i == len(dirs))
		if fd != dirFd {
			unix.Close(fd)
		}
		if err != nil {
			return err
		}
		fd, path = next, filepath.Join(path, d)
	}
	defer unix.Close(fd)
	return writeAt(fd, path, name, data)
}

// excludeFile is a new tree's .git/info/exclude (git init's template has
// one; --template= makes none).
const excludeFile = "# git ls-files --others --exclude-from=.git/info/exclude\n"

// writeMeta writes Dir/meta.json.
func writeMeta(dirFd int, l Layout, agent string) error {
	m := Meta{Branch: l.Branch, Project: l.Project, Tree: l.Tree, Agent: agent, Created: time.Now().UTC()}
	var old Meta
	if b, err := readAt(dirFd, "meta.json"); err == nil && json.Unmarshal(b, &old) == nil && !old.Created.IsZero() {
		m.Created = old.Created
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	return writeAt(dirFd, l.Dir, "meta.json", append(b, '\n'))
}

// repairModes gives the store's directories on the way to a run's
// directory (root, root/key, root/key/dir) their mode 0700 again, and
// the run's tree its owner's rwx: Landlock does not govern chmod, so under
// the weaker sandbox and nono alone an agent can `chmod 000` its tree's
// parents (their paths are its workdir's), and `runs` lost the run and
// its next run could not open it. What is found is checked to be a
// directory first; the agent cannot write in these directories, so it
// cannot put a link in their place between the check and the chmod.
func repairModes(root string, names ...string) {
	fix := func(p string, want func(uint32) uint32) {
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			return
		}
		mode := uint32(st.Mode)
		if mode&unix.S_IFMT == unix.S_IFDIR && want(mode&0o7777) != mode&0o7777 {
			_ = unix.Chmod(p, want(mode&0o7777))
		}
	}
	private := func(uint32) uint32 { return 0o700 }
	fix(root, private)
	p := root
	for _, n := range names {
		p = filepath.Join(p, n)
		fix(p, private)
	}
	if len(names) == 2 {
		fix(filepath.Join(p, "tree"), func(m uint32) uint32 { return m | 0o700 })
	}
}

// openDirAt opens the directory name below dirFd (path names it in
// errors), never following a symlink; with create it is made first when
// missing.
func openDirAt(dirFd int, path, name string, create bool) (int, error) {
	if create {
		if err := unix.Mkdirat(dirFd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, fmt.Errorf("%s: %v", filepath.Join(path, name), err)
		}
	}
	fd, err := unix.Openat(dirFd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("%s: %v (a symlink is never followed)", filepath.Join(path, name), err)
	}
	return fd, nil
}

// writeAt writes name below dirFd as a new file renamed into place.
func writeAt(dirFd int, path, name string, data []byte) error {
	tmp := "." + name + ".tmp"
	_ = unix.Unlinkat(dirFd, tmp, 0)
	fd, err := unix.Openat(dirFd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %v", filepath.Join(path, name), err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(path, tmp))
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dirFd, tmp, dirFd, name)
	}
	if werr != nil {
		_ = unix.Unlinkat(dirFd, tmp, 0)
		return fmt.Errorf("%s: %v", filepath.Join(path, name), werr)
	}
	return nil
}

// readAt reads the regular file name below dirFd without following a
// symlink.
func readAt(dirFd int, name string) ([]byte, error) {
	fd, err := unix.Openat(dirFd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return readLimited(f)
}

func readLimited(f *os.File) ([]byte, error) {
	return io.ReadAll(io.LimitReader(f, 1<<20))
}
