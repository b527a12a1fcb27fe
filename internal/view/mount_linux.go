//go:build linux

package view

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/safefs"
)

// openNoSymlinks opens path with O_PATH, refusing any symlink on the way:
// a canonical path that resolves through a symlink was changed after it
// was checked.
func openNoSymlinks(path string) (int, error) {
	fd, err := safefs.OpenFd(path, unix.O_PATH, 0)
	if errors.Is(err, safefs.ErrSymlink) {
		return -1, fmt.Errorf("%s: a symlink appeared on its path after it was checked (refusing to follow it)", path)
	}
	return fd, err
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
	ready bool
	cache safefs.DirCache
}

// at readies the cache for placing a mount at path.
func (c *stagedDirs) at(path string) {
	if d := depth(path); d != c.depth || !c.ready {
		c.close()
		c.depth, c.ready = d, true
	}
}

func (c *stagedDirs) close() {
	c.cache.Reset()
	c.ready = false
}

// makeTarget creates path below root (a directory, or an empty file when
// dir is false) unless it exists, without following symlinks, and returns
// an O_PATH descriptor of it. Missing parents are created as directories.
// cache, when not nil and readied (cache.at(path)), holds and supplies the
// descriptors of the parents (see stagedDirs).
func makeTarget(cache *stagedDirs, root, path string, dir bool) (int, error) {
	w := safefs.Walker{CreateFirst: true}
	if cache != nil && cache.ready {
		w.Cache = &cache.cache
	}
	rootFd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(rootFd)
	kind := safefs.File
	if dir {
		kind = safefs.Dir
	}
	fd, err := w.Open(rootFd, "", strings.TrimPrefix(path, "/"), kind)
	if err != nil {
		return -1, fmt.Errorf("mount point %s: %w", path, err)
	}
	return fd, nil
}

// bindAt attaches a recursive clone of the tree at srcFd onto the target
// descriptor, read-only when ro, and with device files refused (nodev)
// when nodev (every bind but the device nodes of /dev and /dev/null's
// masks). The flags are set on the detached tree before it is attached,
// so it is never visible without them.
func bindAt(srcFd, targetFd int, ro, nodev bool) error {
	tree, err := unix.OpenTree(srcFd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID}
	if ro {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if nodev {
		attr.Attr_set |= unix.MOUNT_ATTR_NODEV
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	if err := unix.MoveMount(tree, "", targetFd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// isDevPath says whether a view path lies in /dev, where binds are device
// nodes (/dev/null, /dev/tty...) that must stay usable.
func isDevPath(p string) bool { return p == "/dev" || strings.HasPrefix(p, "/dev/") }

// mountAt mounts a new filesystem of type fstype on the target descriptor.
func mountAt(fstype string, targetFd int, flags uintptr, data string) error {
	return unix.Mount(fstype, fdPath(targetFd), fstype, flags, data)
}

// remountReadOnly makes the (non-recursive) mount at targetFd read-only.
func remountReadOnly(targetFd int) error {
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	return unix.MountSetattr(targetFd, "", unix.AT_EMPTY_PATH, &attr)
}
