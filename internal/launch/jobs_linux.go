//go:build linux

package launch

import (
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// jobControl keeps agent-sandbox's state, as the user's shell sees it (its
// job), the agent's, for a run whose agent is child (or, with stopped set,
// whose agent stopped reports): whenever the agent is stopped, agent-sandbox
// stops too, and once continued it sends SIGCONT on to the agent (resume).
// An agent's TUI stops itself on Ctrl-Z (vim reads the key in raw mode and
// sends SIGTSTP to its process group), and its Landlock domain keeps that
// signal from agent-sandbox: without this the shell would wait.
//
// Each event, the child's stop (waitid) or the terminal's SIGTSTP (caught
// when tty), only makes it look whether the agent is stopped now: an event
// read after the shell's fg has continued the job is stale, and acting on
// it would stop the job again with nobody to continue it. Nothing but
// this goroutine stops agent-sandbox, with SIGSTOP to its own thread,
// which takes effect before tgkill returns: no stop can come between the
// look and the stop. It returns when done is closed.
func jobControl(child int, tty bool, stopped func() bool, resume func(), done <-chan struct{}) {
	if stopped == nil {
		stopped = func() bool { return processStopped(child) }
	}
	events := make(chan struct{}, 1)
	kick := func() {
		select {
		case events <- struct{}{}:
		default:
		}
	}
	var tstp chan os.Signal
	if tty {
		tstp = make(chan os.Signal, 1)
		signal.Notify(tstp, syscall.SIGTSTP)
		defer signal.Stop(tstp)
	}
	go func() {
		// Ends with ECHILD once the child is reaped.
		for {
			var info unix.Siginfo
			err := unix.Waitid(unix.P_PID, child, &info, unix.WSTOPPED, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return
			}
			kick()
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for {
		select {
		case <-tstp:
		case <-events:
		case <-done:
			return
		}
		if !stopped() {
			continue
		}
		_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGSTOP)
		if resume != nil {
			resume()
		}
	}
}

// processStopped reports whether process pid is stopped now (its state in
// /proc is T).
func processStopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'T'
}
