//go:build unix

package doctor

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownProcessGroup starts cmd in a process group of its own and makes the
// context's cancellation kill the whole group, so that a probe's children
// cannot keep it alive.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// kernelRelease is `uname -r`.
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "(unknown release)"
	}
	return unix.ByteSliceToString(u.Release[:])
}
