//go:build !linux

package guard

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// writeBack puts content at path with the permission bits of mode: by
// rename with atomic, else in place. (The last component is never followed
// through a symlink.)
func writeBack(path string, content []byte, mode fs.FileMode, atomic bool) error {
	perm := mode.Perm()
	if perm == 0 {
		perm = 0o644
	}
	if !atomic {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.WriteAt(content, 0); err != nil {
			return err
		}
		return f.Truncate(int64(len(content)))
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".agent-sandbox-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(content)
	if werr == nil {
		werr = f.Chmod(perm)
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
	}
	return werr
}

func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func renameNoFollow(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return fs.ErrExist
	}
	return os.Rename(from, to)
}

// ownerAccess is Linux's (where Landlock lets the agent chmod).
func ownerAccess(workdir string, paths []string) {}

// ownerAccessDirs is Linux's.
func ownerAccessDirs(dirs ...string) {}
