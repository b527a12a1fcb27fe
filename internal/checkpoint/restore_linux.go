//go:build linux

package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/safefs"
)

// CheckBlobs reports the first file of m whose blob is missing or of
// another size: a store that cannot restore m.
func (s *Store) CheckBlobs(m *Manifest) error {
	for _, e := range m.Entries {
		if e.Type != TypeFile {
			continue
		}
		st, err := os.Lstat(s.objectPath(e.Hash))
		if err != nil || !st.Mode().IsRegular() || st.Size() != e.Size {
			return fmt.Errorf("checkpoint store is corrupt: the content of %s (blob %s) is missing or damaged; nothing was changed", Quote(e.Path), e.Hash)
		}
	}
	return nil
}

// Restore puts the workdir back as target records it, from cur (a
// checkpoint of the current state, taken with target's rules). What cur
// left out (cur.Skipped) and what target left out stays as it is. Every
// write goes through descriptors anchored at the workdir that never
// follow a symlink: a symlink the agent put where target has a directory
// is removed, never written through.
func (s *Store) Restore(target, cur *Manifest) error {
	if err := s.CheckBlobs(target); err != nil {
		return err
	}
	root, err := safefs.OpenFd(s.Workdir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return fmt.Errorf("undo: opening %s: %v", s.Workdir, err)
	}
	defer unix.Close(root)
	r := &restorer{s: s, root: root}
	ti, ci := index(target), index(cur)
	// Remove what target does not have, deepest first.
	var extra []string
	for _, e := range cur.Entries {
		if ti[e.Path] == nil && !under(e.Path, target.Skipped) {
			extra = append(extra, e.Path)
		}
	}
	// One by one (cur lists everything it kept, deepest first): a
	// directory that still holds what cur did not keep stays.
	for i := len(extra) - 1; i >= 0; i-- {
		if err := r.removeOne(extra[i]); err != nil {
			return err
		}
	}
	// Create and rewrite, parents first.
	for i := range target.Entries {
		e := &target.Entries[i]
		if under(e.Path, cur.Skipped) && ci[e.Path] == nil {
			// Something cur did not keep is in the way: replaced.
			if err := r.remove(e.Path); err != nil {
				return err
			}
		}
		if err := r.put(e, ci[e.Path]); err != nil {
			return err
		}
	}
	// Directories' modes, owners and times, deepest first.
	for i := len(target.Entries) - 1; i >= 0; i-- {
		e := &target.Entries[i]
		if e.Type != TypeDir {
			continue
		}
		if err := r.attrs(e); err != nil {
			return err
		}
	}
	return nil
}

type restorer struct {
	s    *Store
	root int
}

func (r *restorer) where(rel string) string { return Quote(r.s.Workdir + "/" + rel) }

// parent opens rel's parent directory below the workdir, refusing a
// symlink on the way.
func (r *restorer) parent(rel string) (int, string, error) {
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	fd, err := openDirBeneath(r.root, dir, r.s.Workdir)
	if err != nil {
		return -1, "", fmt.Errorf("undo: %v", err)
	}
	return fd, name, nil
}

// pathChunk bounds the part of a path one openat2 resolves: a directory
// nested so deep that its path is longer than PATH_MAX (an agent can
// make one with relative mkdir and chdir) is opened a part at a time.
const pathChunk = 2048

// openDirBeneath opens the directory rel below root (the workdir,
// named in errors) like safefs.OpenBeneathFd, whatever rel's length:
// each part of at most pathChunk bytes is resolved beneath the directory
// the part before it opened, never through a symlink. A manifest's paths
// hold no "." or ".." (they are names a walk read).
func openDirBeneath(root int, rel, workdir string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY
	if len(rel) <= pathChunk {
		return safefs.OpenBeneathFd(root, rel, workdir+"/"+rel, flags, 0)
	}
	fd, done := root, ""
	for rest := rel; rest != ""; {
		part := rest
		if len(part) > pathChunk {
			cut := strings.LastIndexByte(part[:pathChunk], '/')
			if cut <= 0 {
				cut = strings.IndexByte(part, '/')
			}
			if cut > 0 {
				part = part[:cut]
			}
		}
		rest = strings.TrimPrefix(rest[len(part):], "/")
		done = path.Join(done, part)
		next, err := safefs.OpenBeneathFd(fd, part, workdir+"/"+done, flags, 0)
		if fd != root {
			unix.Close(fd)
		}
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// remove deletes rel (a directory with all it holds), never following a
// symlink; a missing rel is no error.
func (r *restorer) remove(rel string) error {
	pfd, name, err := r.parent(rel)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	defer unix.Close(pfd)
	if err := removeAt(pfd, name); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("undo: removing %s: %v", r.where(rel), err)
	}
	return nil
}

// removeOne deletes rel, an empty directory or anything else, never
// following a symlink; a missing rel, or a directory that is not empty
// (it holds what the current checkpoint did not keep), is no error.
func (r *restorer) removeOne(rel string) error {
	pfd, name, err := r.parent(rel)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil
	}
	flags := 0
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		flags = unix.AT_REMOVEDIR
	}
	err = unix.Unlinkat(pfd, name, flags)
	if err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("undo: removing %s: %v", r.where(rel), err)
	}
	return nil
}

func removeAt(dirfd int, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(dirfd, name, 0)
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) {
		// A directory the agent made unreadable (chmod 000): its mode
		// is set through an O_PATH descriptor (never through a link),
		// then it is opened again.
		if pfd, perr := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); perr == nil {
			_ = unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", pfd), 0o700, 0)
			unix.Close(pfd)
			fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
	}
	if err != nil {
		return err
	}
	_ = unix.Fchmod(fd, 0o700)
	dup, err := unix.Dup(fd)
	if err != nil {
		unix.Close(fd)
		return err
	}
	df := os.NewFile(uintptr(dup), name)
	names, err := df.Readdirnames(-1)
	df.Close()
	if err == nil {
		for _, n := range names {
			if err = removeAt(fd, n); err != nil && !errors.Is(err, unix.ENOENT) {
				break
			}
			err = nil
		}
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// put makes rel be what e records; cur is what the current checkpoint
// has there (nil: nothing, or something it did not keep).
func (r *restorer) put(e, cur *Entry) error {
	pfd, name, err := r.parent(e.Path)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	exists := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
	if exists && typeOf(st.Mode) != e.Type {
		if err := removeAt(pfd, name); err != nil {
			return fmt.Errorf("undo: removing %s: %v", r.where(e.Path), err)
		}
		exists = false
	}
	switch e.Type {
	case TypeDir:
		if !exists {
			if err := unix.Mkdirat(pfd, name, 0o700); err != nil {
				return fmt.Errorf("undo: creating %s: %v", r.where(e.Path), err)
			}
		}
		return nil
	case TypeSymlink:
		if !exists || cur == nil || cur.Target != e.Target {
			if err := r.replace(pfd, name, e, func(tmp string) error { return unix.Symlinkat(e.Target, pfd, tmp) }); err != nil {
				return err
			}
		}
	default:
		if !exists || cur == nil || cur.Hash != e.Hash || cur.Size != e.Size {
			if err := r.replace(pfd, name, e, func(tmp string) error { return r.writeFile(pfd, tmp, e) }); err != nil {
				return err
			}
		}
	}
	return r.attrsAt(pfd, name, e)
}

// replace makes a new entry under a temporary name in the directory pfd
// (make) and renames it over name.
func (r *restorer) replace(pfd int, name string, e *Entry, make func(tmp string) error) error {
	tmp := fmt.Sprintf(".agent-sandbox-undo-%d-%s", os.Getpid(), name)
	if len(tmp) > 250 {
		tmp = tmp[:250]
	}
	_ = unix.Unlinkat(pfd, tmp, 0)
	if err := make(tmp); err != nil {
		_ = unix.Unlinkat(pfd, tmp, 0)
		return fmt.Errorf("undo: writing %s: %v", r.where(e.Path), err)
	}
	if err := unix.Renameat(pfd, tmp, pfd, name); err != nil {
		_ = unix.Unlinkat(pfd, tmp, 0)
		return fmt.Errorf("undo: writing %s: %v", r.where(e.Path), err)
	}
	return nil
}

func (r *restorer) writeFile(pfd int, tmp string, e *Entry) error {
	src, err := openBlob(r.s.objectPath(e.Hash))
	if err != nil {
		return err
	}
	defer src.Close()
	fd, err := unix.Openat(pfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	dst := os.NewFile(uintptr(fd), tmp)
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(dst, h), src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil && (n != e.Size || hex.EncodeToString(h.Sum(nil)) != e.Hash) {
		err = fmt.Errorf("the checkpoint store's copy (blob %s) is damaged", e.Hash)
	}
	return err
}

func (r *restorer) attrs(e *Entry) error {
	pfd, name, err := r.parent(e.Path)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	return r.attrsAt(pfd, name, e)
}

// attrsAt sets name's owner (when agent-sandbox may), mode and
// modification time as e records them, never through a symlink.
func (r *restorer) attrsAt(pfd int, name string, e *Entry) error {
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("undo: %s: %v", r.where(e.Path), err)
	}
	if st.Uid != e.UID || st.Gid != e.GID {
		if err := unix.Fchownat(pfd, name, int(e.UID), int(e.GID), unix.AT_SYMLINK_NOFOLLOW); err != nil && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("undo: owner of %s: %v", r.where(e.Path), err)
		}
	}
	if e.Type != TypeSymlink {
		// fchmodat follows a symlink: the mode is set through an
		// O_PATH descriptor of what was just checked not to be one.
		fd, err := unix.Openat(pfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("undo: %s: %v", r.where(e.Path), err)
		}
		err = unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), e.Mode, 0)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("undo: mode of %s: %v", r.where(e.Path), err)
		}
	}
	ts := []unix.Timespec{unix.NsecToTimespec(e.MTime), unix.NsecToTimespec(e.MTime)}
	if err := unix.UtimesNanoAt(pfd, name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("undo: time of %s: %v", r.where(e.Path), err)
	}
	return nil
}

func typeOf(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return TypeDir
	case unix.S_IFLNK:
		return TypeSymlink
	case unix.S_IFREG:
		return TypeFile
	}
	return "special"
}

// sortedSkips is for messages.
func sortedSkips(sk []Skip) []Skip {
	out := append([]Skip(nil), sk...)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
