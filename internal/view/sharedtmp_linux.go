//go:build linux

package view

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// sharedTmpfs holds the tmpfs instances that several Tmpfs mounts share
// (Mount.Source names the instance: the private /tmp, /var/tmp and
// /dev/shm are one tmpfs, so that its size bounds what they hold
// together). While the view is built each instance is mounted at a
// directory of the staged root's top, each member a directory of it bound
// at the member's path; release detaches the instances from the staged
// root (the members' binds keep them) and removes those directories.
type sharedTmpfs struct {
	stage string
	at    map[string]string // instance name → where it is mounted while the view is built
}

// sharedTmpfsDir is where instance name is mounted while the view is built.
func sharedTmpfsDir(stage, name string) string { return stage + "/.agent-sandbox-tmpfs-" + name }

// place binds the member m's directory of its instance at m.Path in the
// staged root, mounting the instance (size m.Size) first if it is not yet.
func (s *sharedTmpfs) place(m Mount, dirs *stagedDirs) error {
	if s.at == nil {
		s.at = map[string]string{}
	}
	top, ok := s.at[m.Source]
	if !ok {
		top = sharedTmpfsDir(s.stage, m.Source)
		if err := unix.Mkdir(top, 0o700); err != nil {
			return fmt.Errorf("the shared tmpfs %s: %w", m.Source, err)
		}
		s.at[m.Source] = top
		opts := "mode=0700"
		if m.Size > 0 {
			opts += fmt.Sprintf(",size=%d", m.Size)
		}
		if err := unix.Mount("tmpfs", top, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("the shared tmpfs %s: %w", m.Source, err)
		}
	}
	name := strings.ReplaceAll(strings.Trim(m.Path, "/"), "/", "-")
	if err := unix.Mkdir(top+"/"+name, 0o1777); err != nil {
		return fmt.Errorf("the shared tmpfs %s: %w", m.Source, err)
	}
	if err := unix.Chmod(top+"/"+name, 0o1777); err != nil {
		return err
	}
	src, err := unix.Openat2(unix.AT_FDCWD, top+"/"+name, &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return err
	}
	defer unix.Close(src)
	t, err := makeTarget(dirs, s.stage, m.Path, true)
	if err != nil {
		return err
	}
	defer unix.Close(t)
	return bindAt(src, t, false, true)
}

// release detaches every instance from the staged root and removes the
// directories they were mounted at.
func (s *sharedTmpfs) release() error {
	for name, top := range s.at {
		if err := unix.Unmount(top, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("the shared tmpfs %s: %w", name, err)
		}
		if err := unix.Rmdir(top); err != nil {
			return fmt.Errorf("the shared tmpfs %s: %w", name, err)
		}
		delete(s.at, name)
	}
	return nil
}
