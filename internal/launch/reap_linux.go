//go:build linux

package launch

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// becomeSubreaper makes agent-sandbox the reaper of every orphan the agent
// leaves (a daemon started with setsid or a double fork is re-parented to
// agent-sandbox instead of init), so that sweep can end them.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("cannot become the reaper of the agent's orphans (prctl PR_SET_CHILD_SUBREAPER: %v): processes the agent leaves behind may outlive the run", err)
	}
	return nil
}

// sweep kills and reaps every remaining child of this process: what the
// agent left behind. No process outlives a run. done, when not 0, is a
// child that has already ended all it ran and is on its way out (the
// namespace view's init, which reported the agent's status only once
// nothing else of the sandbox ran): it is not waited for, so that the
// teardown of its namespaces does not hold up this process's exit (the
// kernel ends it with this process in any case: parent-death signal).
func sweep(done int) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		// ECHILD: no child is left, running or dead, so there is nothing
		// to look up in /proc (the common case, and the cheap one).
		if _, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil); err == syscall.ECHILD {
			return
		}
		var kids []int
		for _, pid := range children() {
			if pid != done {
				kids = append(kids, pid)
			}
		}
		for _, pid := range kids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		if len(kids) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// children lists the live children of this process (all its threads). It
// reads the task list and each task's children file directly: a glob would
// stat every per-thread directory on the way.
func children() []int {
	d, err := os.Open("/proc/self/task")
	if err != nil {
		return nil
	}
	tids, _ := d.Readdirnames(-1)
	d.Close()
	var out []int
	for _, t := range tids {
		b, err := os.ReadFile("/proc/self/task/" + t + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}
