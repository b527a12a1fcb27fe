//go:build linux

package landlock

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/safefs"
)

// SeedStats counts what one seeding did.
type SeedStats struct {
	// Files is how many files were copied (or reflinked); Bytes their
	// size; Reflinked how many of them shared their blocks with the
	// host's (FICLONE) instead of being copied.
	Files, Bytes, Reflinked int64
	// Same is how many files were up to date already (same size and
	// modification time as the host's).
	Same int64
	// Skipped is how many entries could not be seeded (a name the agent
	// made a directory of, or a directory it made unreadable): the
	// agent's own copy is the poorer for it, nothing else.
	Skipped int64
}

// seedCache brings the run's own copy dst of the host's cache src up to
// date before the agent starts: every regular file of src that dst lacks
// or holds with another size or modification time is copied (reflinked
// where the filesystem can) and renamed into place, symlinks are copied
// as symlinks, and what the agent wrote that src does not have is kept.
// Never a hard link: the agent could make a linked file writable (Landlock
// does not govern chmod) and write the host's cache through it.
//
// dst is inside a writable grant of the agent's (an earlier run of it may
// have put a symlink anywhere in it), so dst is walked with descriptors
// and O_NOFOLLOW, never by path: nothing is written outside it. src is
// the host's cache, which the agent cannot write; it is read without
// following symlinks too. A missing src leaves dst empty.
func seedCache(src, dst string) (SeedStats, error) {
	var st SeedStats
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return st, err
	}
	if err := unix.Mkdir(dst, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return st, &os.PathError{Op: "mkdir", Path: dst, Err: err}
	}
	dfd, err := safefs.OpenFd(dst, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return st, err
	}
	defer unix.Close(dfd)
	sfd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return st, nil
	}
	if err != nil {
		return st, &os.PathError{Op: "open", Path: src, Err: err}
	}
	defer unix.Close(sfd)
	return st, seedDir(sfd, dfd, src, &st)
}

// seedCacheLocked is seedCache holding an exclusive lock on the file
// lock (outside every grant) meanwhile, so that two runs starting in one
// project do not copy into the same copy at once (a file one of them is
// still writing would be skipped, half written, by the other).
func seedCacheLocked(lock, src, dst string) (SeedStats, error) {
	if err := os.MkdirAll(filepath.Dir(lock), 0o700); err != nil {
		return SeedStats{}, err
	}
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return SeedStats{}, err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return SeedStats{}, err
	}
	return seedCache(src, dst)
}

// seedDir seeds the directory open at dfd from the one open at sfd (path
// src, for errors).
func seedDir(sfd, dfd int, src string, st *SeedStats) error {
	// The agent (or Go, which makes its module cache read-only) may have
	// taken the write permission away: the directory is the run's own.
	_ = unix.Fchmod(dfd, 0o700)
	names, err := readNames(sfd)
	if err != nil {
		return &os.PathError{Op: "readdir", Path: src, Err: err}
	}
	for _, name := range names {
		var s unix.Stat_t
		if err := unix.Fstatat(sfd, name, &s, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			st.Skipped++
			continue
		}
		switch s.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if err := seedSubdir(sfd, dfd, name, filepath.Join(src, name), st); err != nil {
				return err
			}
		case unix.S_IFREG:
			seedFile(sfd, dfd, name, &s, st)
		case unix.S_IFLNK:
			seedLink(sfd, dfd, name, st)
		}
	}
	return nil
}

// seedSubdir seeds the subdirectory name.
func seedSubdir(sfd, dfd int, name, src string, st *SeedStats) error {
	if err := unix.Mkdirat(dfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		st.Skipped++
		return nil
	}
	cd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		st.Skipped++ // a symlink or file the agent put there, or unreadable
		return nil
	}
	defer unix.Close(cd)
	cs, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		st.Skipped++
		return nil
	}
	defer unix.Close(cs)
	return seedDir(cs, cd, src, st)
}

// seedFile copies the regular file name (s: its stat) unless dst has it
// with the same size and modification time.
func seedFile(sfd, dfd int, name string, s *unix.Stat_t, st *SeedStats) {
	var d unix.Stat_t
	err := unix.Fstatat(dfd, name, &d, unix.AT_SYMLINK_NOFOLLOW)
	if err == nil && d.Mode&unix.S_IFMT == unix.S_IFREG && d.Size == s.Size && d.Mtim == s.Mtim {
		st.Same++
		return
	}
	// A name the copy lacks is created in place (O_EXCL: whatever
	// appears there meanwhile is left alone); one it holds otherwise is
	// replaced by a rename, never written through.
	fresh := errors.Is(err, unix.ENOENT)
	in, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		st.Skipped++
		return
	}
	defer unix.Close(in)
	tmp := name
	if !fresh {
		tmp = fmt.Sprintf(".agent-sandbox-seed-%d", os.Getpid())
		_ = unix.Unlinkat(dfd, tmp, 0)
	}
	out, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		st.Skipped++
		return
	}
	reflinked, err := copyContents(out, in)
	if err == nil {
		err = unix.Fchmod(out, s.Mode&0o777|0o200) // the run's own: writable by its owner
	}
	unix.Close(out)
	if err == nil {
		// To the nanosecond, as the next seeding compares it; never
		// through a symlink swapped in for tmp.
		err = unix.UtimesNanoAt(dfd, tmp, []unix.Timespec{s.Atim, s.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err == nil && !fresh {
		err = unix.Renameat(dfd, tmp, dfd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		st.Skipped++
		return
	}
	st.Files++
	st.Bytes += s.Size
	if reflinked {
		st.Reflinked++
	}
}

// copyContents makes out's contents in's: a reflink (FICLONE) where the
// filesystem can share the blocks, else a copy (copy_file_range, which
// the kernel may also do without moving the bytes).
func copyContents(out, in int) (bool, error) {
	if unix.IoctlFileClone(out, in) == nil {
		return true, nil
	}
	od, err := unix.Dup(out)
	if err != nil {
		return false, err
	}
	o := os.NewFile(uintptr(od), "copy")
	defer o.Close()
	id, err := unix.Dup(in)
	if err != nil {
		return false, err
	}
	i := os.NewFile(uintptr(id), "source")
	defer i.Close()
	_, err = io.Copy(o, i) // *os.File.ReadFrom: copy_file_range
	return false, err
}

// seedLink copies the symlink name as a symlink (what it points to is
// the agent's to resolve, under Landlock), unless dst has the same.
func seedLink(sfd, dfd int, name string, st *SeedStats) {
	target, err := readlinkat(sfd, name)
	if err != nil {
		st.Skipped++
		return
	}
	if have, err := readlinkat(dfd, name); err == nil && have == target {
		st.Same++
		return
	}
	tmp := fmt.Sprintf(".agent-sandbox-seed-%d", os.Getpid())
	_ = unix.Unlinkat(dfd, tmp, 0)
	if err := unix.Symlinkat(target, dfd, tmp); err != nil {
		st.Skipped++
		return
	}
	if err := unix.Renameat(dfd, tmp, dfd, name); err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		st.Skipped++
		return
	}
	st.Files++
}

func readlinkat(dfd int, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// readNames lists the directory open at fd.
func readNames(fd int) ([]string, error) {
	d, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(d), "dir")
	defer f.Close()
	return f.Readdirnames(-1)
}
