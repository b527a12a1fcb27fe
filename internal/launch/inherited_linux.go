package launch

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// CloseInherited marks every descriptor above stderr close-on-exec: what
// the caller left open for agent-sandbox (`agent-sandbox ... 7<secret`)
// then reaches no program agent-sandbox starts, while agent-sandbox's own
// (opened close-on-exec by Go) are unchanged. Without close_range (Linux
// before 5.11) it walks /proc/self/fd.
func CloseInherited() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	fds, err := openFds()
	if err != nil {
		return
	}
	for _, fd := range fds {
		if fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}

// openFds lists the process's descriptors from /proc/self/fd.
func openFds() ([]int, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd != int(d.Fd()) {
			fds = append(fds, fd)
		}
	}
	return fds, nil
}
