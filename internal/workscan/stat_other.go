//go:build !linux

package workscan

import (
	"io/fs"
	"syscall"
	"time"
)

// Ctime is fi's status change time.
func Ctime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctimespec.Unix())
	}
	return fi.ModTime()
}

// DevIno is fi's device and inode number.
func DevIno(fi fs.FileInfo) (uint64, uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), st.Ino
	}
	return 0, 0
}
