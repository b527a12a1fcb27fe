//go:build linux

package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/safefs"
)

// repairModes puts back the modes of the store of one workdir: 0700 on
// its directories (the state root, its checkpoints directory, the store,
// objects/ and its fan-out directories, manifests/, runs/), 0600 on its
// files of fixed names and on the workdir's live-run lock beside it.
// Landlock does not govern chmod: under the weaker sandbox and nono alone
// an agent can `chmod 000` the store, whose path is a hash of the
// workdir's, so that the run's checkpoint after it, `runs`, `diff` and
// `undo` fail (or `chmod 777` it for other users to write). The agent
// cannot write in the store, so what is found there is the store's own:
// a symlink is left as it is.
//
// The 256 fan-out directories of objects/ are looked at only with fanout
// (after an agent ran, and by undo): a millisecond a store.
func repairModes(stateRoot, dir string, fanout bool) {
	fix := func(p string, want uint32, typ uint32) {
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil && st.Mode&unix.S_IFMT == typ && st.Mode&0o7777 != want {
			_ = unix.Chmod(p, want)
		}
	}
	fix(stateRoot, 0o700, unix.S_IFDIR)
	fix(filepath.Join(stateRoot, "checkpoints"), 0o700, unix.S_IFDIR)
	fix(dir, 0o700, unix.S_IFDIR)
	fix(dir+".lock", 0o600, unix.S_IFREG)
	for _, d := range []string{"objects", "manifests", "runs"} {
		fix(filepath.Join(dir, d), 0o700, unix.S_IFDIR)
	}
	for _, f := range []string{"format", "head", "statcache", "rules"} {
		fix(filepath.Join(dir, f), 0o600, unix.S_IFREG)
	}
	if !fanout {
		return
	}
	objects := filepath.Join(dir, "objects")
	f, err := os.Open(objects)
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, n := range names {
		if len(n) == 2 {
			fix(filepath.Join(objects, n), 0o700, unix.S_IFDIR)
		}
	}
}

// openBlob opens the blob at p for reading; one an agent made unreadable
// with chmod (its name is the hash of a file it could read) is made
// readable by its owner again first.
func openBlob(p string) (*os.File, error) {
	f, err := os.Open(p)
	if err != nil && os.IsPermission(err) {
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			_ = unix.Chmod(p, 0o600)
			f, err = os.Open(p)
		}
	}
	return f, err
}

// ownerAccess gives the workdir its owner's rwx again when an agent took
// them away (`chmod 000 .` in its workdir: every engine lets it): the
// checkpoint after the run, diff and undo open it, and failed with
// "permission denied", undo changing nothing. Only the owner's bits are
// added, on the workdir itself (not a path below it), through an O_PATH
// descriptor that was not reached through a symlink.
func ownerAccess(workdir string) {
	fd, err := safefs.OpenFd(workdir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || int(st.Uid) != os.Geteuid() || st.Mode&0o700 == 0o700 {
		return
	}
	_ = unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), st.Mode&0o7777|0o700, 0)
}
