//go:build linux

package guard

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/safefs"
)

// parentOf opens the directory holding path without following a symlink
// on the way (the agent may have swapped one in).
func parentOf(path string) (int, error) {
	return safefs.OpenFd(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY, 0)
}

// writeBack puts content at path with the permission bits of mode. With
// atomic (the agent has ended) it replaces the file by rename; otherwise
// it rewrites the file in place (creating it when missing), so that no
// new directory entry appears for a bind to miss.
func writeBack(path string, content []byte, mode fs.FileMode, atomic bool) error {
	perm := uint32(mode.Perm())
	if perm == 0 {
		perm = 0o644
	}
	dir, err := parentOf(path)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	name := filepath.Base(path)
	if !atomic {
		fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, perm)
		if err != nil {
			return &fs.PathError{Op: "open", Path: path, Err: err}
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return fmt.Errorf("%s is not a regular file", path)
		}
		if _, err := unix.Pwrite(fd, content, 0); err != nil {
			return &fs.PathError{Op: "write", Path: path, Err: err}
		}
		return unix.Ftruncate(fd, int64(len(content)))
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + name + ".agent-sandbox-" + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return &fs.PathError{Op: "create", Path: filepath.Join(filepath.Dir(path), tmp), Err: err}
	}
	_, werr := unix.Write(fd, content)
	if werr == nil {
		werr = unix.Fchmod(fd, perm)
	}
	unix.Close(fd)
	if werr == nil {
		werr = unix.Renameat(dir, tmp, dir, name)
	}
	if werr != nil {
		_ = unix.Unlinkat(dir, tmp, 0)
		return &fs.PathError{Op: "write", Path: path, Err: werr}
	}
	return nil
}

// removeFile unlinks the file at path (not a directory; a symlink itself,
// never what it points to).
func removeFile(path string) error {
	dir, err := parentOf(path)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if err := unix.Unlinkat(dir, filepath.Base(path), 0); err != nil && err != unix.ENOENT {
		return &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	return nil
}

// renameNoFollow renames from to to, neither directory reached through a
// symlink; to must not exist.
func renameNoFollow(from, to string) error {
	fd, err := parentOf(from)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	td, err := parentOf(to)
	if err != nil {
		return err
	}
	defer unix.Close(td)
	if err := unix.Renameat2(fd, filepath.Base(from), td, filepath.Base(to), unix.RENAME_NOREPLACE); err != nil {
		return &fs.PathError{Op: "rename", Path: from, Err: err}
	}
	return nil
}

// ownerAccess gives the workdir, and every directory between it and a
// protected path, its owner's rwx again where an agent took them away:
// Landlock does not govern chmod, so under the weaker sandbox and nono
// alone the agent could `chmod 000 .` (or `.git`) after writing a
// protected file through a descriptor it kept, and the audit could then
// neither read nor restore it ("could not be restored"). Only directories
// the caller owns, reached from the workdir without a symlink, top first.
func ownerAccess(workdir string, paths []string) {
	dirs := map[string]bool{workdir: true}
	for _, p := range paths {
		for d := filepath.Dir(p); d != workdir && strings.HasPrefix(d, workdir+"/"); d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	order := make([]string, 0, len(dirs))
	for d := range dirs {
		order = append(order, d)
	}
	ownerAccessDirs(order...)
}

// ownerAccessDirs gives each of dirs (shortest first) its owner's rwx
// again where it lacks them: agent-sandbox's own directories of the state
// root too (the quarantine, the run markers, the placeholder registry),
// which an agent could `chmod 000` as well (their paths are known).
func ownerAccessDirs(dirs ...string) {
	order := append([]string(nil), dirs...)
	sort.Slice(order, func(i, j int) bool { return len(order[i]) < len(order[j]) })
	for _, d := range order {
		if d == "" || d == "." || d == "/" {
			continue
		}
		fd, err := safefs.OpenFd(d, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && int(st.Uid) == os.Geteuid() && st.Mode&0o700 != 0o700 {
			_ = unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), st.Mode&0o7777|0o700, 0)
		}
		unix.Close(fd)
	}
}
