//go:build linux

package workscan

import (
	"io"
	"io/fs"

	"golang.org/x/sys/unix"
)

// OpenRead opens path for reading, never through a symlink at its end;
// O_NONBLOCK makes a FIFO put in a file's place answer EAGAIN instead of
// blocking the reader. (The guard reads its ledger's files the same way.)
func OpenRead(path string) (ReadFile, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return rawFile(fd), nil
}

// rawFile is a file read through its bare descriptor.
type rawFile int

func (f rawFile) Read(b []byte) (int, error) {
	for {
		n, err := unix.Read(int(f), b)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f rawFile) Close() error { return unix.Close(int(f)) }

// Is reports whether the open file is the one fi describes.
func (f rawFile) Is(fi fs.FileInfo) bool {
	var st unix.Stat_t
	if unix.Fstat(int(f), &st) != nil {
		return false
	}
	dev, ino := DevIno(fi)
	return st.Dev == dev && st.Ino == ino
}
