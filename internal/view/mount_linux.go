//go:build linux

package view

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// openNoSymlinks opens path with O_PATH, refusing any symlink on the way:
// a canonical path that resolves through a symlink was changed after it
// was checked.
func openNoSymlinks(path string) (int, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ELOOP) {
		return -1, fmt.Errorf("%s: a symlink appeared on its path after it was checked (refusing to follow it)", path)
	}
	if err != nil {
		return -1, fmt.Errorf("%s: %w", path, err)
	}
	return fd, nil
}

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

func isDirFd(fd int) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, err
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR, nil
}

// stagedDirs caches O_PATH descriptors of the directories above the mount
// points in the staged root, for the mounts of one depth (ordered places
// parents first): while mounts of depth d are placed, no mount lands on a
// directory of depth below d any more, so a cached descriptor still names
// what its path shows. Siblings (a thousand grants in one directory) then
// share the walk to their parent. At each new depth the cache starts over.
type stagedDirs struct {
	depth int
	fds   map[string]int
}

// at readies the cache for placing a mount at path.
func (c *stagedDirs) at(path string) {
	if d := depth(path); d != c.depth || c.fds == nil {
		c.close()
		c.depth, c.fds = d, map[string]int{}
	}
}

func (c *stagedDirs) close() {
	for _, fd := range c.fds {
		unix.Close(fd)
	}
	c.fds = nil
}

// makeTarget creates path below root (a directory, or an empty file when
// dir is false) unless it exists, without following symlinks, and returns
// an O_PATH descriptor of it. Missing parents are created as directories.
// cache, when not nil, holds and supplies the descriptors of the parents
// (see stagedDirs; the caller has called cache.at(path)).
func makeTarget(cache *stagedDirs, root, path string, dir bool) (int, error) {
	if cache != nil && cache.fds == nil {
		cache = nil // not readied: no caching
	}
	rel := strings.TrimPrefix(path, "/")
	parts := strings.Split(rel, "/")
	start := 0
	cur := -1
	if cache != nil && rel != "" {
		for k := len(parts) - 1; k > 0; k-- {
			if fd, ok := cache.fds[strings.Join(parts[:k], "/")]; ok {
				cur, start = fd, k
				break
			}
		}
	}
	// release closes cur unless the cache holds it.
	release := func(fd int, i int) {
		if cache == nil || i < 0 || cache.fds[strings.Join(parts[:i+1], "/")] != fd {
			unix.Close(fd)
		}
	}
	held := start - 1 // the index of the component cur is, when cached
	if cur < 0 {
		var err error
		cur, err = unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		held = -1
	}
	if rel == "" {
		return cur, nil
	}
	for i := start; i < len(parts); i++ {
		name := parts[i]
		last := i == len(parts)-1
		var next int
		var err error = unix.ENOENT
		if !last {
			next, err = unix.Openat(cur, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		// The mount point itself is new far more often than not: it is
		// created first (what exists already, a symlink included, makes
		// that fail with EEXIST and is opened and checked below).
		if errors.Is(err, unix.ENOENT) {
			if !last || dir {
				err = unix.Mkdirat(cur, name, 0o755)
			} else {
				var f int
				f, err = unix.Openat(cur, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
				if err == nil {
					unix.Close(f)
				}
			}
			if err != nil && !errors.Is(err, unix.EEXIST) {
				release(cur, held)
				return -1, fmt.Errorf("creating the mount point %s: %w", filepath.Join("/", filepath.Join(parts[:i+1]...)), err)
			}
			next, err = unix.Openat(cur, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		release(cur, held)
		if err != nil {
			return -1, fmt.Errorf("mount point %s: %w", path, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			return -1, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(next)
			return -1, fmt.Errorf("mount point %s: %s is a symlink (refusing to follow it)", path, filepath.Join("/", filepath.Join(parts[:i+1]...)))
		}
		cur, held = next, -1
		if cache != nil && !last {
			cache.fds[strings.Join(parts[:i+1], "/")] = next
			held = i
		}
	}
	return cur, nil
}

// bindAt attaches a recursive clone of the tree at srcFd onto the target
// descriptor, read-only when ro. The read-only flag is set on the detached
// tree before it is attached, so it is never visible writable.
func bindAt(srcFd, targetFd int, ro bool) error {
	tree, err := unix.OpenTree(srcFd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID}
	if ro {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	if err := unix.MoveMount(tree, "", targetFd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// mountAt mounts a new filesystem of type fstype on the target descriptor.
func mountAt(fstype string, targetFd int, flags uintptr, data string) error {
	return unix.Mount(fstype, fdPath(targetFd), fstype, flags, data)
}

// remountReadOnly makes the (non-recursive) mount at targetFd read-only.
func remountReadOnly(targetFd int) error {
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	return unix.MountSetattr(targetFd, "", unix.AT_EMPTY_PATH, &attr)
}
