//go:build linux

package landlock

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The standard streams the caller hands the agent may be files that no
// grant reaches (`2>~/build.log`). The agent writes to them through its
// descriptors, which Landlock does not check again; but a program that
// opens /dev/stderr, /dev/stdout or /dev/fd/N opens the file anew (through
// the /proc/self/fd magic link), and Landlock checks that open like any
// other: it was refused. Each such stream gets a rule of its own, added on
// the descriptor itself (a Landlock rule holds the inode, not a name: the
// file's path is not granted and need not exist in the view), with the
// rights of the descriptor's own access mode and nothing more: a
// write-only descriptor gives the right to write and truncate the file
// (which the descriptor itself has), never to read it; a read-only one the
// right to read it. Directories (a rule would reach everything beneath),
// sockets and pipes (no path: Landlock never checks them) and O_PATH
// descriptors get no rule.

// descriptorRights returns the Landlock rights a rule on the file fd is
// open on gets, within handled: those of the descriptor's access mode,
// for a regular file, a FIFO or a character device; 0 for anything else.
func descriptorRights(fd int, handled uint64) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		if errors.Is(err, unix.EBADF) {
			return 0, nil // not open: nothing to grant
		}
		return 0, err
	}
	kind := st.Mode & unix.S_IFMT
	if kind != unix.S_IFREG && kind != unix.S_IFIFO && kind != unix.S_IFCHR {
		return 0, nil
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return 0, err
	}
	if flags&unix.O_PATH != 0 {
		return 0, nil
	}
	var rights uint64
	switch flags & unix.O_ACCMODE {
	case unix.O_RDONLY:
		rights = fsReadFile
	case unix.O_WRONLY:
		rights = fsWriteFile | fsTruncate
	case unix.O_RDWR:
		rights = fsReadFile | fsWriteFile | fsTruncate
	}
	if kind == unix.S_IFCHR {
		// The descriptor of a device may issue its ioctls; so may the
		// one opened again.
		rights |= fsIoctlDev
	}
	return rights & handled & fsFileRights, nil
}

// addDescriptorRules adds to the ruleset rulesetFd, which handles the
// filesystem rights handled, the rule of each of fds (see
// descriptorRights).
func addDescriptorRules(rulesetFd int, handled uint64, fds []int) error {
	for _, fd := range fds {
		rights, err := descriptorRights(fd, handled)
		if err != nil {
			return fmt.Errorf("landlock policy: standard stream %d: %w", fd, err)
		}
		if rights == 0 {
			continue
		}
		rule := pathBeneathAttr{allowedAccess: rights, parentFd: int32(fd)}
		err = addRule(rulesetFd, unix.LANDLOCK_RULE_PATH_BENEATH, unsafe.Pointer(&rule))
		if errors.Is(err, unix.EBADFD) {
			// A file of a filesystem that has no path (an anonymous
			// inode): Landlock never checks its opens.
			continue
		}
		if err != nil {
			return fmt.Errorf("landlock policy: standard stream %d: adding the rule of its file: %w", fd, err)
		}
	}
	return nil
}

// AddDescriptors adds a rule for the file each of fds (the standard
// streams the agent will have) is open on, with the rights of the
// descriptor's access mode only, so that the agent can open it again by
// /dev/stdin, /dev/stdout, /dev/stderr or /dev/fd/N wherever the file
// lives, and do no more through that open than through the descriptor it
// already holds. See the comment above for which descriptors get none.
func (r *Ruleset) AddDescriptors(fds ...int) error {
	if r.none {
		return nil
	}
	return addDescriptorRules(r.fd, handledFS(r.e.ABI), fds)
}
