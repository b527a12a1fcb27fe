//go:build linux

package landlock

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// runTmp is a run's TMPDIR (see claimRunTmp).
type runTmp struct{ path string }

// freePrefix names an emptied TMPDIR that a later run may claim.
const freePrefix = ".free-"

// claimRunTmp returns a TMPDIR for one run under dir: an emptied one an
// earlier run left (renamed to a name of this run's, so no two runs claim
// the same one, and checked: a directory of this user's, mode 0700,
// empty), else a new one. Reusing spares the filesystem an inode's
// creation and deletion per run (on ext4 without a journal each costs a
// few tenths of a millisecond while many inodes were deleted recently).
func claimRunTmp(dir string) (*runTmp, error) {
	if f, err := os.Open(dir); err == nil {
		names, _ := f.Readdirnames(64)
		f.Close()
		for _, n := range names {
			if !strings.HasPrefix(n, freePrefix) {
				continue
			}
			claimed := filepath.Join(dir, "run-"+strings.TrimPrefix(n, freePrefix))
			if unix.Renameat2(unix.AT_FDCWD, filepath.Join(dir, n), unix.AT_FDCWD, claimed, unix.RENAME_NOREPLACE) != nil {
				continue // another run claimed it first
			}
			if emptyPrivateDir(claimed) {
				return &runTmp{claimed}, nil
			}
			os.RemoveAll(claimed)
		}
	}
	p, err := os.MkdirTemp(dir, "run-")
	if err != nil {
		return nil, err
	}
	return &runTmp{p}, nil
}

// release empties the TMPDIR and keeps it for a later run (keep), or
// removes it.
func (t *runTmp) release(keep bool) {
	if keep {
		if ents, err := os.ReadDir(t.path); err == nil {
			for _, e := range ents {
				os.RemoveAll(filepath.Join(t.path, e.Name()))
			}
			if emptyPrivateDir(t.path) {
				free := filepath.Join(filepath.Dir(t.path), freePrefix+strings.TrimPrefix(filepath.Base(t.path), "run-"))
				if unix.Renameat2(unix.AT_FDCWD, t.path, unix.AT_FDCWD, free, unix.RENAME_NOREPLACE) == nil {
					return
				}
			}
		}
	}
	os.RemoveAll(t.path)
}

// emptyPrivateDir reports whether p is an empty directory (not a symlink)
// of this user's with mode 0700.
func emptyPrivateDir(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		return false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
		return false
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	return len(names) == 0 && err == io.EOF
}
