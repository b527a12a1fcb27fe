//go:build linux

package quiesce

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// subreaper says Begin made this process the subreaper of its
// descendants.
var subreaper atomic.Bool

// Begin makes this process the reaper of every orphan below it (a daemon
// the agent starts with setsid or a double fork is re-parented here
// instead of to the system's init), so that End finds it. Called before
// the run's first process starts.
func Begin() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("cannot become the reaper of the agent's orphans (prctl PR_SET_CHILD_SUBREAPER: %v): processes the agent leaves behind may outlive the run, and the audit after it cannot be final", err)
	}
	subreaper.Store(true)
	return nil
}

func (r *Run) end(deadline time.Time) (int, error) {
	if r.cgroup != "" {
		killCgroup(r.cgroup, deadline)
	}
	self := os.Getpid()
	for {
		kids, err := children(self)
		if err != nil {
			return 0, err
		}
		kids = without(kids, r.done)
		all, err := below(kids)
		if err != nil {
			return 0, err
		}
		if len(all) == 0 {
			if !subreaper.Load() && r.done == 0 {
				return 0, errors.New("agent-sandbox is not the reaper of the run's orphans (prctl PR_SET_CHILD_SUBREAPER failed): a process the agent detached is not below it, and may still run")
			}
			return 0, nil
		}
		if time.Now().After(deadline) {
			return len(all), nil
		}
		for _, pid := range all {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		reap(kids, deadline)
	}
}

// without is pids without p (0: none).
func without(pids []int, p int) []int {
	if p == 0 {
		return pids
	}
	out := pids[:0]
	for _, q := range pids {
		if q != p {
			out = append(out, q)
		}
	}
	return out
}

// below is kids and every process below them.
func below(kids []int) ([]int, error) {
	all := append([]int(nil), kids...)
	for i := 0; i < len(all); i++ {
		more, err := children(all[i])
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
				continue // gone (reaped) since it was listed
			}
			return nil, err
		}
		all = append(all, more...)
	}
	return all, nil
}

// reap waits for each of kids (killed) to end, until deadline.
func reap(kids []int, deadline time.Time) {
	if len(kids) == 0 {
		return
	}
	done := make(chan struct{}, len(kids))
	for _, pid := range kids {
		go func(pid int) {
			var ws unix.WaitStatus
			for {
				_, err := unix.Wait4(pid, &ws, 0, nil)
				if err != unix.EINTR {
					break
				}
			}
			done <- struct{}{}
		}(pid)
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for range kids {
		select {
		case <-done:
		case <-t.C:
			return
		}
	}
}

// children lists the children of pid (all its threads'), zombies
// included. An error means they cannot be known (no /proc, or a kernel
// without the children files): End then proves nothing.
func children(pid int) ([]int, error) {
	base := "/proc/" + strconv.Itoa(pid) + "/task"
	d, err := os.Open(base)
	if err != nil {
		return nil, err
	}
	tids, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	var out []int
	read := 0
	for _, t := range tids {
		b, err := os.ReadFile(base + "/" + t + "/children")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
				continue // the thread ended
			}
			return nil, fmt.Errorf("cannot list the run's processes (%s/%s/children: %v)", base, t, err)
		}
		read++
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	if read == 0 && pid == os.Getpid() {
		return nil, fmt.Errorf("cannot list the run's processes (no %s/*/children: a kernel without CONFIG_PROC_CHILDREN)", base)
	}
	return out, nil
}

// ownCgroup is the cgroup v2 directory pid runs in when that is a scope
// of its own, apart from this process's ("" otherwise).
func ownCgroup(pid int) string {
	theirs, mine := cgroupOf(strconv.Itoa(pid)), cgroupOf("self")
	if theirs == "" || mine == "" || theirs == mine || !strings.HasSuffix(theirs, ".scope") ||
		strings.HasPrefix(mine+"/", theirs+"/") {
		return ""
	}
	dir := filepath.Join("/sys/fs/cgroup", theirs)
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		return ""
	}
	return dir
}

// cgroupOf is the cgroup v2 path of /proc/<pid>/cgroup ("" when none).
func cgroupOf(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return filepath.Clean(p)
		}
	}
	return ""
}

// killCgroup kills every process of the scope at dir at once
// (cgroup.kill, Linux 5.14) and waits, until deadline, for it to be
// empty (cgroup.events "populated 0", announced by a modify event).
func killCgroup(dir string, deadline time.Time) {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		return // the sweep below still ends them
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	events := filepath.Join(dir, "cgroup.events")
	if _, err := unix.InotifyAddWatch(fd, events, unix.IN_MODIFY); err != nil {
		return
	}
	buf := make([]byte, 4096)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(events)
		if err != nil || strings.Contains(string(b), "populated 0") {
			return
		}
		ms := int(time.Until(deadline) / time.Millisecond)
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(pfd, ms); err != nil && err != unix.EINTR || n == 0 {
			return
		}
		_, _ = unix.Read(fd, buf)
	}
}
