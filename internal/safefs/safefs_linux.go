//go:build linux

// Package safefs opens and creates paths without ever following a symlink:
// the one walk-and-create helper that both the view's init (mount points in
// its staged root) and the host side of protection (placeholders of
// protected paths inside the agent's writable grants) use. A path the agent
// can write may have had a component swapped for a symlink since it was
// checked; every function here refuses one (openat2 RESOLVE_NO_SYMLINKS, or
// openat O_NOFOLLOW component by component) rather than follow it.
package safefs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrSymlink is matched (errors.Is) by the errors of a path that has a
// symlink where a file or directory was expected.
var ErrSymlink = errors.New("is a symlink (refusing to follow it)")

// Open opens the absolute path with flags (O_CLOEXEC is added), refusing a
// symlink (and a magic link) in any of its components, the last included.
func Open(path string, flags int, mode uint32) (*os.File, error) {
	fd, err := OpenFd(path, flags, mode)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// OpenFd is Open returning the raw descriptor.
func OpenFd(path string, flags int, mode uint32) (int, error) {
	return openat2(unix.AT_FDCWD, path, path, flags, mode, 0)
}

// OpenBeneathFd is OpenFd of rel (a relative path; "." for dir itself)
// below the directory open at dir, never leaving it (RESOLVE_BENEATH);
// path names it in errors.
func OpenBeneathFd(dir int, rel, path string, flags int, mode uint32) (int, error) {
	return openat2(dir, rel, path, flags, mode, unix.RESOLVE_BENEATH)
}

func openat2(dir int, name, path string, flags int, mode uint32, resolve uint64) (int, error) {
	fd, err := unix.Openat2(dir, name, &unix.OpenHow{
		Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode),
		Resolve: resolve | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ELOOP) {
		return -1, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("a component %w", ErrSymlink)}
	}
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

// Mkdir creates the directory dir (absolute, mode 0755) when it is
// missing; neither it nor any component on its way may be a symlink.
func Mkdir(dir string) error {
	if fd, err := OpenFd(dir, unix.O_PATH|unix.O_DIRECTORY, 0); err == nil {
		return unix.Close(fd)
	} else if !errors.Is(err, unix.ENOENT) {
		return err
	}
	parent, err := OpenFd(filepath.Dir(dir), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	if err := unix.Mkdirat(parent, filepath.Base(dir), 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	return nil
}

// Kind is what a walk expects, or creates, at the end of its path.
type Kind int

// The kinds.
const (
	// File is a regular file (created empty).
	File Kind = iota
	// Dir is a directory.
	Dir
	// Any is a file or a directory, whichever exists; missing, a file.
	Any
)

// Walker opens a path below a directory component by component with
// O_PATH|O_NOFOLLOW, creating what is missing: the directories on the way
// and, at the end, a file or directory. It refuses a symlink anywhere and
// anything at the end that is neither a file nor a directory. The zero
// Walker creates directories with mode 0755 and empty files with 0644.
type Walker struct {
	// Create, when not nil, makes the missing name in the directory
	// parent (path is its full path, for messages and records): a
	// directory when dir, else a file. It returns EEXIST (or nil) when the
	// name appeared meanwhile; what exists is then opened and checked.
	Create func(parent int, name, path string, dir bool) error
	// Made, when not nil, is told of each name the walk created, with an
	// O_PATH descriptor of it (valid only during the call).
	Made func(fd int, path string, dir bool) error
	// CreateFirst makes the last component be created before it is
	// looked up: for mount points, which are new far more often than not.
	CreateFirst bool
	// Cache, when not nil, supplies and keeps the descriptors of the
	// directories on the way (see DirCache).
	Cache *DirCache
}

// Open walks rel (a relative, clean path; "" is root itself) below the
// directory open at root (named rootPath in messages), creating what is
// missing, and returns an O_PATH descriptor of what is at its end, which
// the caller closes. A ".." component is refused (ErrEscape): the walk
// never leaves root.
func (w Walker) Open(root int, rootPath, rel string, end Kind) (int, error) {
	if rel == "" {
		return unix.Dup(root)
	}
	parts := strings.Split(rel, "/")
	for _, name := range parts {
		if name == ".." {
			return -1, &os.PathError{Op: "open", Path: rootPath + "/" + rel, Err: ErrEscape}
		}
	}
	cur, start := root, 0
	if w.Cache != nil {
		if fd, k := w.Cache.deepest(parts); fd >= 0 {
			cur, start = fd, k
		}
	}
	owned := false // whether cur is ours to close
	for i := start; i < len(parts); i++ {
		last := i == len(parts)-1
		path := rootPath + "/" + strings.Join(parts[:i+1], "/")
		next, created, err := w.openOrCreate(cur, parts[i], path, !last || end == Dir, !last || !w.CreateFirst)
		if owned {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		isDir, err := checkKind(next, path, last, end)
		if err != nil {
			unix.Close(next)
			return -1, err
		}
		if created && w.Made != nil {
			if err := w.Made(next, path, isDir); err != nil {
				unix.Close(next)
				return -1, err
			}
		}
		cur, owned = next, true
		if w.Cache != nil && !last {
			w.Cache.keep(parts[:i+1], next)
			owned = false
		}
	}
	return cur, nil
}

// The errors of a walk that found the wrong kind of file (errors.Is).
var (
	// ErrNotDir: a file on the way, or where a directory is expected.
	ErrNotDir = errors.New("is not a directory")
	// ErrIsDir: a directory where a file is expected.
	ErrIsDir = errors.New("is a directory, not a file")
	// ErrNotFileOrDir: a FIFO, socket or device.
	ErrNotFileOrDir = errors.New("is neither a file nor a directory")
)

// ErrEscape is matched (errors.Is) by the error of a walk whose path has
// a ".." component, which would leave the directory walked below.
var ErrEscape = errors.New("has a \"..\" component (refusing to leave the directory walked below)")

// openOrCreate opens name in the directory cur with O_PATH|O_NOFOLLOW,
// first creating it (a directory when dir) when it is missing or, without
// lookFirst, before looking; created says the walk made it.
func (w Walker) openOrCreate(cur int, name, path string, dir, lookFirst bool) (next int, created bool, err error) {
	err = unix.ENOENT
	if lookFirst {
		next, err = unix.Openat(cur, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if errors.Is(err, unix.ENOENT) {
		err = w.create(cur, name, path, dir)
		created = err == nil
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, false, fmt.Errorf("creating %s: %w", path, err)
		}
		next, err = unix.Openat(cur, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return -1, false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return next, created, nil
}

// checkKind refuses what the walk found at path (open at fd) unless it is
// what the walk expects there: a directory on the way, end at the end
// (never a symlink, nor anything but a file or directory). isDir says it
// is a directory.
func checkKind(fd int, path string, last bool, end Kind) (isDir bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return false, fmt.Errorf("%s %w", path, ErrSymlink)
	case unix.S_IFDIR:
		if last && end == File {
			return false, fmt.Errorf("%s %w", path, ErrIsDir)
		}
		return true, nil
	case unix.S_IFREG:
		if !last || end == Dir {
			return false, fmt.Errorf("%s %w", path, ErrNotDir)
		}
		return false, nil
	}
	return false, fmt.Errorf("%s %w", path, ErrNotFileOrDir)
}

func (w Walker) create(parent int, name, path string, dir bool) error {
	if w.Create != nil {
		return w.Create(parent, name, path, dir)
	}
	if dir {
		return unix.Mkdirat(parent, name, 0o755)
	}
	f, err := unix.Openat(parent, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err == nil {
		unix.Close(f)
	}
	return err
}

// DirCache keeps O_PATH descriptors of directories a Walker passed through,
// keyed by their path relative to the walk's root, so that walks to
// siblings share the way to their parent. The caller must know that what
// a cached descriptor names is still what its path shows (the view's init
// places mounts parents first, and resets the cache at each new depth).
type DirCache struct {
	fds map[string]int
}

// deepest returns the cached descriptor of the deepest proper prefix of
// parts, and how many components it covers; -1 when none is cached.
func (c *DirCache) deepest(parts []string) (int, int) {
	for k := len(parts) - 1; k > 0; k-- {
		if fd, ok := c.fds[strings.Join(parts[:k], "/")]; ok {
			return fd, k
		}
	}
	return -1, 0
}

func (c *DirCache) keep(parts []string, fd int) {
	if c.fds == nil {
		c.fds = map[string]int{}
	}
	key := strings.Join(parts, "/")
	if old, ok := c.fds[key]; ok {
		unix.Close(old)
	}
	c.fds[key] = fd
}

// Reset closes every cached descriptor.
func (c *DirCache) Reset() {
	for _, fd := range c.fds {
		unix.Close(fd)
	}
	c.fds = nil
}
