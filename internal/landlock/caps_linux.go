//go:build linux

package landlock

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// dropCapabilities makes sure that what the calling thread starts holds
// no capabilities after its execve, even when the caller runs as root:
// Landlock does not remove capabilities, and a root child that kept them
// could leave the sandbox by other means (loading a kernel module, raw
// devices). It clears the thread's ambient and inheritable sets and, when
// the thread may (CAP_SETPCAP, normally only root), empties its bounding
// set. The thread keeps its own effective capabilities. Like Landlock,
// this only affects the calling thread, which must be locked and
// discarded.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	for c := 0; c <= 63; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the kernel's last capability
		}
		if errors.Is(err, unix.EPERM) {
			// No CAP_SETPCAP: then the caller is not root (or a root
			// without most capabilities), and the cleared inheritable
			// and ambient sets are what matters.
			break
		}
		if err != nil {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clearing inheritable capabilities: %w", err)
	}
	return nil
}
