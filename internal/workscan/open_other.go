//go:build !linux

package workscan

import (
	"io/fs"
	"os"
	"syscall"
)

// OpenRead opens path for reading, never through a symlink at its end.
func OpenRead(path string) (ReadFile, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

type osFile struct{ *os.File }

// Is reports whether the open file is the one fi describes.
func (f osFile) Is(fi fs.FileInfo) bool {
	st, err := f.Stat()
	return err == nil && os.SameFile(st, fi)
}
