package session

import (
	"time"

	"golang.org/x/sys/unix"
)

// waitPidfd waits for pid's exit through a pidfd until deadline; false
// when it did not see the exit (or pidfds are not there: Linux < 5.3).
func waitPidfd(pid int, deadline time.Time) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		ms := int(min(left, time.Second) / time.Millisecond)
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, max(ms, 1))
		if err == nil && n > 0 {
			return true
		}
		if err != nil && err != unix.EINTR {
			return false
		}
	}
}
