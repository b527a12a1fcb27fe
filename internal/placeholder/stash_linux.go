//go:build linux

package placeholder

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/safefs"
)

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
	fd, err := safefs.OpenFd(path, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Uid != uint32(euid()) || st.Mode&0o077 != 0 {
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
// the caller, into its slot, and reports whether it did. fd is name
// opened for reading by the caller, or -1: keep opens it. A placeholder
// found changed once it is in the slot goes back to its name.
func (st *stash) keep(p record, parent int, name string, fd int) bool {
	if st == nil || p.Dev != st.dev {
		return false
	}
	if fd < 0 {
		var err error
		fd, err = unix.Openat(parent, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return false
		}
		defer unix.Close(fd)
	}
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

// euid is this process's effective uid, asked once.
var euid = sync.OnceValue(os.Geteuid)

// asMade reports whether fd is a placeholder as made: owned by this user,
// a directory with no entries, or a file with one link holding exactly
// content, and with no extended attribute anyone could have set on it (a
// user.* attribute, or an ACL, which would also change the rights of what
// the user creates in it later).
func asMade(fd int, dir bool, content string) bool {
	var fst unix.Stat_t
	if unix.Fstat(fd, &fst) != nil || fst.Uid != uint32(euid()) || settableXattrs(fd) {
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
