//go:build !linux

package landlock

import (
	"errors"
	"os/exec"
)

var errNeedsLinux = errors.New("the landlock backend needs Linux (Landlock is a Linux kernel feature); use the nono or sbx backend on this system")

// ABI returns 0 and an error: Landlock exists only on Linux.
func ABI() (int, error) { return 0, errNeedsLinux }

// UserNamespacesAvailable returns false: user namespaces exist only on
// Linux.
func UserNamespacesAvailable() bool { return false }

// Plan returns an error: the landlock backend needs Linux.
func Plan(p Policy) (Enforcement, error) { return Enforcement{}, errNeedsLinux }

// Start returns an error and starts nothing: the landlock backend needs
// Linux.
func Start(cmd *exec.Cmd, p Policy) (*Process, error) { return nil, errNeedsLinux }

// StartWith returns an error and starts nothing: the landlock backend needs
// Linux.
func StartWith(cmd *exec.Cmd, p Policy, sc Seccomp) (*Process, error) { return nil, errNeedsLinux }

// StartProtected returns an error and starts nothing: the landlock
// backend needs Linux.
func StartProtected(cmd *exec.Cmd, p Policy, sc Seccomp, protected []string) (*Process, error) {
	return nil, errNeedsLinux
}

// ProcFiles are the host-wide /proc entries kept readable (Linux only).
var ProcFiles []string

// RootEntries is Linux-only.
func RootEntries() ([]string, error) { return nil, errNeedsLinux }

// ExecNarrowed is Linux-only.
func ExecNarrowed(roots, argv, env []string) error { return errNeedsLinux }

// StartFiltered returns an error and starts nothing: seccomp is Linux-only.
func StartFiltered(cmd *exec.Cmd, sc Seccomp) (wait func() error, err error) {
	return nil, errNeedsLinux
}
