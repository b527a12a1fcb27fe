//go:build linux

package view

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/safefs"
)

// openNoSymlinks opens path with O_PATH, refusing any symlink on the way:
// a canonical path that resolves through a symlink was changed after it
// was checked.
func openNoSymlinks(path string) (int, error) {
	return swapped(path)(safefs.OpenFd(path, unix.O_PATH, 0))
}

// swapped says, of a symlink refused on path's way, that it appeared
// after path was checked.
func swapped(path string) func(int, error) (int, error) {
	return func(fd int, err error) (int, error) {
		if errors.Is(err, safefs.ErrSymlink) {
			return -1, fmt.Errorf("%s: a symlink appeared on its path after it was checked (refusing to follow it)", path)
		}
		return fd, err
	}
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
	// root is an O_PATH descriptor of the staged root, kept across
	// depths: no mount lands on the root itself.
	root int
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

// release closes the root's descriptor too, when the placing is done.
func (c *stagedDirs) release() {
	c.close()
	if c.root > 0 {
		unix.Close(c.root)
		c.root = 0
	}
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
	var rootFd int
	if cache != nil && cache.root > 0 {
		rootFd = cache.root
	} else {
		fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		if cache != nil {
			cache.root = fd
		} else {
			defer unix.Close(fd)
		}
		rootFd = fd
	}
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
// so it is never visible without them; on a kernel without mount_setattr
// (before Linux 5.12) they are set right after it is attached, mount by
// mount (remountTree), before the agent starts or, for a protected path
// put back during the run, within the window that re-protection has
// anyway.
func bindAt(srcFd, targetFd int, ro, nodev bool) error {
	tree, err := unix.OpenTree(srcFd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	if setattrMissing() {
		if err := unix.MoveMount(tree, "", targetFd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
			return fmt.Errorf("move_mount: %w", err)
		}
		flags := uintptr(unix.MS_NOSUID)
		if ro {
			flags |= unix.MS_RDONLY
		}
		if nodev {
			flags |= unix.MS_NODEV
		}
		return remountTree(tree, flags)
	}
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

// forceRemount makes setattrMissing true on a kernel that has
// mount_setattr: the package's tests set it (in the init they start, by
// TestMain) to run the remount path of Linux 5.10 on this kernel. Nothing
// else sets it: no variable, file or flag of a run reaches it.
var forceRemount bool

// testInitEnv is added to init's environment: the package's tests set
// it (with forceRemount's variable, which only their TestMain reads).
// Nothing else sets it.
var testInitEnv []string

// setattrMissing says whether the kernel lacks mount_setattr (Linux
// 5.12): then mount(2)'s MS_REMOUNT|MS_BIND sets the flags of each mount,
// as bubblewrap does. open_tree and move_mount (Linux 5.2) are there.
var setattrMissing = func() func() bool {
	var once sync.Once
	var missing bool
	return func() bool {
		once.Do(func() {
			// No descriptor -1: EBADF where the call exists.
			err := unix.MountSetattr(-1, "", unix.AT_EMPTY_PATH, &unix.MountAttr{})
			missing = forceRemount || errors.Is(err, unix.ENOSYS)
		})
		return missing
	}
}()

// remountFlags are the per-mount flags statfs reports (ST_*, the same
// bits as MS_*) that a bind remount must repeat: a flag a mount has, and
// the user namespace locked, cannot be cleared, and mount_setattr only
// ever adds flags. Access times are kept by a remount that names none.
const remountFlags = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC

// remountOne adds flags to the one mount at path (whose root it must
// be), keeping the flags it has.
func remountOne(path string, flags uintptr) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fmt.Errorf("statfs: %w", err)
	}
	flags |= uintptr(st.Flags) & remountFlags
	if err := unix.Mount("", path, "", unix.MS_REMOUNT|unix.MS_BIND|flags, ""); err != nil {
		return fmt.Errorf("remounting %s: %w", path, err)
	}
	return nil
}

// remountTree adds flags to the attached mount whose root tree is a
// descriptor of, and to every mount below it (/proc/self/mountinfo),
// each keeping the flags it has.
func remountTree(tree int, flags uintptr) error {
	top, err := os.Readlink(fdPath(tree))
	if err != nil {
		return err
	}
	if err := remountOne(fdPath(tree), flags); err != nil {
		return err
	}
	subs, err := mountsBelow(top)
	if err != nil {
		return err
	}
	for _, p := range subs {
		if err := remountOne(p, flags); err != nil {
			return err
		}
	}
	return nil
}

// mountsBelow lists the mount points strictly below dir, from
// /proc/self/mountinfo, parents first.
func mountsBelow(dir string) ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	prefix := strings.TrimSuffix(dir, "/") + "/"
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountinfo(f[4])
		if strings.HasPrefix(mp, prefix) && !seen[mp] {
			seen[mp] = true
			out = append(out, mp)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return depth(out[i]) < depth(out[j]) })
	return out, nil
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space,
// \011, \012, \134).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountAt mounts a new filesystem of type fstype on the target descriptor.
func mountAt(fstype string, targetFd int, flags uintptr, data string) error {
	return unix.Mount(fstype, fdPath(targetFd), fstype, flags, data)
}

// attachReadOnly attaches the detached tree onto the target descriptor
// with its top mount read-only (the mounts below it keep their flags):
// set before it is attached, or right after without mount_setattr.
func attachReadOnly(tree, targetFd int) error {
	if !setattrMissing() {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
			return fmt.Errorf("mount_setattr: %w", err)
		}
	}
	if err := unix.MoveMount(tree, "", targetFd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	if setattrMissing() {
		return remountOne(fdPath(tree), unix.MS_RDONLY)
	}
	return nil
}

// remountOneReadOnly makes the attached mount at path (its root)
// read-only, alone.
func remountOneReadOnly(path string) error {
	if setattrMissing() {
		return remountOne(path, unix.MS_RDONLY)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	return unix.MountSetattr(unix.AT_FDCWD, path, 0, &attr)
}

// joinSiblings replaces each group of sibling read-only binds that are
// the entries of their host directory (siblingGroups, sharedParent) by
// one read-only bind of that directory: a thousand granted directories
// in one parent cost one bind instead of a thousand. The view shows the
// same tree (the directory's entries are the granted ones, none a
// symlink), with one difference: an entry the host creates in the
// directory during the run appears there too, by name only, as the
// agent's Landlock rules stay those of the granted paths (memberRules).
// So a directory that a Landlock rule of rules reaches (one on it or
// above it) is never joined, and without Landlock (rules.None) none is.
//
// exists and overlays are aligned with ms (exists: the bind is to be
// placed); the returned slices are too, still parents first. joined maps
// each new bind's path to the members it shows.
func joinSiblings(ms []Mount, exists []bool, overlays []*overlayFds, host *hostPaths, rules *landlock.Ruleset) (
	[]Mount, []bool, []*overlayFds, map[string][]member) {
	if rules.None() {
		// No Landlock (an old kernel): nothing would keep what the host
		// adds to the directory during the run unreadable. Separate
		// binds.
		return ms, exists, overlays, nil
	}
	var joined map[string][]member
	for _, g := range siblingGroups(ms, exists) {
		if rules.Reaches(g.dir) {
			// A rule above the directory (the private /tmp, a home
			// made a scratch tmpfs) would reach what the host adds to
			// it during the run: only separate binds keep that out.
			continue
		}
		dirs, ok := sharedParent(g, ms, host)
		if !ok {
			continue
		}
		if joined == nil {
			joined = map[string][]member{}
		}
		for _, i := range g.members {
			exists[i] = false
			dir, there := dirs[baseOf(ms[i].Path)]
			joined[g.dir] = append(joined[g.dir], member{ms[i].Path, dir, !there})
		}
		ms = append(ms, Mount{Kind: ReadOnly, Path: g.dir})
		exists = append(exists, true)
		overlays = append(overlays, nil)
	}
	if joined == nil {
		return ms, exists, overlays, nil
	}
	// Parents first again (a stable order by depth, as ordered).
	idx := make([]int, len(ms))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return depth(ms[idx[a]].Path) < depth(ms[idx[b]].Path) })
	ms2 := make([]Mount, len(ms))
	exists2 := make([]bool, len(ms))
	ov2 := make([]*overlayFds, len(ms))
	for k, i := range idx {
		ms2[k], exists2[k], ov2[k] = ms[i], exists[i], overlays[i]
	}
	return ms2, exists2, ov2, joined
}

// sharedParent opens g's directory and reads its entries: it reports
// whether each is one of g's members and none a symlink (an optional
// member that is not there is not there either way), and which of them
// are directories. Anything else (an entry that is not a member, a
// directory that cannot be read) keeps the separate binds. A member
// that is a mount point needs no look: the directory's bind is
// recursive, as each member's would be.
func sharedParent(g siblingGroup, ms []Mount, host *hostPaths) (dirs map[string]bool, ok bool) {
	dfd, err := host.open(g.dir)
	if err != nil {
		return nil, false
	}
	defer unix.Close(dfd)
	rd, err := unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(rd)
	want := make(map[string]bool, len(g.members))
	for _, i := range g.members {
		want[baseOf(ms[i].Path)] = true
	}
	dirs = make(map[string]bool, len(g.members))
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(rd, buf)
		if err != nil {
			return nil, false
		}
		if n <= 0 {
			break
		}
		for off := 0; off < n; {
			ent, reclen, good := dirent(buf[off:n])
			if !good {
				return nil, false
			}
			off += reclen
			if ent.name == "." || ent.name == ".." {
				continue
			}
			if !want[ent.name] {
				return nil, false
			}
			typ := ent.typ
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if err := unix.Fstatat(dfd, ent.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					return nil, false
				}
				switch st.Mode & unix.S_IFMT {
				case unix.S_IFLNK:
					typ = unix.DT_LNK
				case unix.S_IFDIR:
					typ = unix.DT_DIR
				}
			}
			if typ == unix.DT_LNK {
				return nil, false
			}
			dirs[ent.name] = typ == unix.DT_DIR
		}
	}
	return dirs, true
}

// member is a path a joined bind stands for (joinSiblings), and whether
// it was a directory, or absent, when its parent was read.
type member struct {
	path   string
	dir    bool
	absent bool
}

// memberRules adds the Landlock rules of the paths a joined bind shows
// (joinSiblings), each on a descriptor of the entry in the bound
// directory (dirFd, the bind's source), opened without following a
// symlink: the inode the bind shows there. An entry that is not what
// its parent's reading found (absent then, a symlink or gone now) gets
// no rule: nothing is granted through what took its place. Paths with
// another mount of their own (a mask) are left to the lookup in the view
// (byInode).
func memberRules(rules *landlock.Ruleset, dirFd int, members []member, byInode map[string]bool) error {
	var open fdBatch
	defer open.flush()
	for _, m := range members {
		if !byInode[m.path] {
			continue
		}
		if m.absent {
			rules.Skip(m.path)
			continue
		}
		flags := unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if m.dir {
			flags |= unix.O_DIRECTORY
		}
		fd, err := unix.Openat(dirFd, baseOf(m.path), flags, 0)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			rules.Skip(m.path)
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", m.path, err)
		}
		if m.dir {
			// O_DIRECTORY|O_NOFOLLOW opened a directory, no link.
			err = rules.AddOpenedKnown(m.path, fd, true)
		} else {
			// O_PATH|O_NOFOLLOW opens a symlink itself: AddOpened
			// looks, and grants nothing on one.
			err = rules.AddOpened(m.path, fd)
		}
		open.add(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

// fdBatch closes the descriptors memberRules opened, a run of
// consecutive ones with one close_range: a thousand members cost a few
// dozen closes instead of a thousand. It holds at most fdBatchMax, all
// below fdBatchBelow, so that the process's descriptor table never grows
// for them (growing it in a process with threads waits for an RCU grace
// period).
type fdBatch struct {
	fds []int
}

const (
	fdBatchMax   = 32
	fdBatchBelow = 60 // the table starts with 64 entries
)

func (b *fdBatch) add(fd int) {
	b.fds = append(b.fds, fd)
	if len(b.fds) >= fdBatchMax || fd >= fdBatchBelow {
		b.flush()
	}
}

// flush closes the descriptors held: with close_range when they are
// exactly the range from the lowest to the highest (the kernel gives the
// lowest free descriptor, so a batch opened with none closed between is
// one), one by one otherwise, or where close_range is missing.
func (b *fdBatch) flush() {
	if len(b.fds) == 0 {
		return
	}
	lo, hi := b.fds[0], b.fds[0]
	for _, fd := range b.fds {
		lo, hi = min(lo, fd), max(hi, fd)
	}
	if hi-lo+1 == len(b.fds) && len(b.fds) > 1 && unix.CloseRange(uint(lo), uint(hi), 0) == nil {
		b.fds = b.fds[:0]
		return
	}
	for _, fd := range b.fds {
		unix.Close(fd)
	}
	b.fds = b.fds[:0]
}

// direntry is what sharedParent needs of a linux_dirent64.
type direntry struct {
	typ  uint8
	name string
}

// dirent decodes the linux_dirent64 at the start of b: inode (8 bytes),
// offset (8), record length (2), type (1), then the name, NUL-terminated.
func dirent(b []byte) (direntry, int, bool) {
	const head = 19
	if len(b) < head {
		return direntry{}, 0, false
	}
	reclen := int(binary.NativeEndian.Uint16(b[16:18]))
	if reclen < head || reclen > len(b) {
		return direntry{}, 0, false
	}
	name := b[head:reclen]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return direntry{typ: b[18], name: string(name)}, reclen, true
}

// placeLink binds the symlink a Link mount names (shown in the staged root
// by the bind that encloses it) onto itself, read-only, without following
// it: a mount point can be neither removed nor renamed over. A link that
// is gone or points elsewhere than m.Target stops the start: what it led
// to was what the run protects.
func placeLink(stage string, m Mount, dirs *stagedDirs) error {
	parent, err := makeTarget(dirs, stage, parentOf(m.Path), true)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	fd, err := unix.Openat(parent, baseOf(m.Path), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("the protected link is gone: %w", err)
	}
	defer unix.Close(fd)
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return fmt.Errorf("%s is no longer a symlink: %w", m.Path, err)
	}
	if string(buf[:n]) != m.Target {
		return fmt.Errorf("%s was repointed after it was checked (to %s, not %s)", m.Path, buf[:n], m.Target)
	}
	return bindAt(fd, fd, true, true)
}
