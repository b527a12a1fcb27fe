// Package optfile reads the files whose absence means something: an agent
// folder's agent.toml, sandbox/nono.json and sandbox/sbx.json, the sbx
// records in the state dir. For these, "absent" and "present but
// unreadable" must never be confused: a sandbox/nono.json that is a
// dangling symlink, a directory or a file the user cannot read is not "no
// policy" (which would run the agent unsandboxed or under the open default),
// it is an error that names the file and why.
//
// A name is absent only when it does not exist as a directory entry at all
// (os.Lstat says so), checked component by component below the root the
// caller trusts, so a dangling symlink standing for sandbox/ is caught
// too. Anything else that exists must be a regular file (after following
// symlinks) that can be read.
package optfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Error is a name that exists but cannot be read as a regular file (or, for
// a directory on the way to it, cannot be entered as a directory).
type Error struct {
	// Path is the name at fault (the file, or a directory component on the
	// way to it).
	Path string
	// Why says what is wrong: "is a dangling symlink to missing.json",
	// "cannot be read: permission denied", "is a directory, not a file".
	Why string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s exists but %s; a name that exists is never treated as absent: fix it or remove it", e.Path, e.Why)
}

// ReadIn reads the file rel (slash-separated, relative) below the directory
// root. ok is false, with a nil error, when rel or one of its parent
// directories below root does not exist. Every other failure is an *Error:
// a component that is a dangling symlink, a symlink loop, not a directory
// (for a parent) or not a regular file (for rel itself: a directory, a
// named pipe, a device, a socket), or one that cannot be read. root itself
// is not checked: the caller has found it.
func ReadIn(root, rel string) (data []byte, ok bool, err error) {
	parts := strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/")
	cur := root
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		last := i == len(parts)-1
		lst, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, &Error{Path: cur, Why: "cannot be examined: " + reason(err)}
		}
		st := lst
		if lst.Mode()&fs.ModeSymlink != 0 {
			if st, err = os.Stat(cur); err != nil {
				return nil, false, &Error{Path: cur, Why: symlinkWhy(cur, err)}
			}
		}
		if !last {
			if !st.IsDir() {
				return nil, false, &Error{Path: cur, Why: "is " + kind(st.Mode()) + ", not a directory"}
			}
			continue
		}
		if !st.Mode().IsRegular() {
			return nil, false, &Error{Path: cur, Why: "is " + kind(st.Mode()) + ", not a regular file"}
		}
		b, err := os.ReadFile(cur)
		if err != nil {
			return nil, false, &Error{Path: cur, Why: "cannot be read: " + reason(err)}
		}
		return b, true, nil
	}
	return nil, false, &Error{Path: root, Why: "has no file name to read (internal error)"}
}

// Dir reports whether the directory path exists. ok is false, with a nil
// error, when path does not exist as a name (os.Lstat); a name that exists
// but is not a directory after following symlinks (a dangling symlink, a
// file), or cannot be examined, is an *Error.
func Dir(path string) (ok bool, err error) {
	lst, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, &Error{Path: path, Why: "cannot be examined: " + reason(err)}
	}
	st := lst
	if lst.Mode()&fs.ModeSymlink != 0 {
		if st, err = os.Stat(path); err != nil {
			return false, &Error{Path: path, Why: symlinkWhy(path, err)}
		}
	}
	if !st.IsDir() {
		return false, &Error{Path: path, Why: "is " + kind(st.Mode()) + ", not a directory"}
	}
	return true, nil
}

// symlinkWhy describes a symlink that os.Stat cannot follow.
func symlinkWhy(p string, err error) string {
	target, lerr := os.Readlink(p)
	if lerr != nil {
		return "is a symlink that cannot be read: " + reason(lerr)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("is a dangling symlink to %s (which does not exist)", target)
	case errors.Is(err, syscall.ELOOP):
		return fmt.Sprintf("is a symlink loop (to %s)", target)
	}
	return fmt.Sprintf("is a symlink to %s that cannot be followed: %s", target, reason(err))
}

// reason is the system's description of err without the path (which the
// Error already names).
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if errors.Is(err, fs.ErrPermission) {
		return "permission denied"
	}
	return err.Error()
}

// kind names a file type for a message.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	case m.IsRegular():
		return "a regular file"
	}
	return "a file of type " + m.Type().String()
}
