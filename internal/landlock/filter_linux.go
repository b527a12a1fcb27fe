//go:build linux

package landlock

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// StartFiltered starts cmd from a thread that has no_new_privs and the
// seccomp filter sc selects (the parts every filter has included:
// terminal injection, foreign ABIs, socket families outside the allow
// list (AF_INET, AF_INET6, AF_UNIX, netlink with NETLINK_ROUTE only),
// io_uring, fscrypt's keys), and no Landlock ruleset of its own: the
// child inherits the filter, which no process can remove, and everything
// it starts inherits it too. It is the layer agent-sandbox puts under
// another sandbox that confines by Landlock alone (nono on Linux): the
// kernel surface Landlock does not mediate.
//
// The filter also applies to the sandbox's own supervisor (cmd itself),
// so sc must leave it what it needs. sc.NotifyConnect is refused (nobody
// would serve the listener), and so are ambient capabilities in cmd's
// SysProcAttr. cmd gets Pdeathsig SIGKILL unless its SysProcAttr sets
// one: a SIGKILLed agent-sandbox takes cmd with it.
//
// The returned wait waits for cmd (use it instead of cmd.Wait).
func StartFiltered(cmd *exec.Cmd, sc Seccomp) (wait func() error, err error) {
	if sc.NotifyConnect {
		return nil, errors.New("landlock: StartFiltered cannot serve a connect listener")
	}
	if cmd.Process != nil {
		return nil, errors.New("landlock: command already started")
	}
	// The same SysProcAttr as Start's without a network namespace: the
	// caller's settings, no ambient capabilities, Pdeathsig SIGKILL.
	attr, err := childAttr(cmd.SysProcAttr, Enforcement{})
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr = attr

	started := make(chan error, 1)
	done := make(chan struct{})
	var waitErr error
	go func() {
		// As in Process.run: the thread stays locked to this goroutine
		// for good (no_new_privs and the filter cannot be undone) and is
		// cmd's parent for Pdeathsig. When the goroutine returns, after
		// cmd has ended, the runtime ends the thread, or, when it is the
		// process's main thread (often so), parks it for good: it never
		// runs Go code again, but /proc/PID/status, which shows the main
		// thread, then reports its no_new_privs and filter.
		runtime.LockOSThread()
		defer close(done)
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			started <- fmt.Errorf("setting no_new_privs: %w", err)
			return
		}
		if _, err := installSeccomp(sc); err != nil {
			started <- err
			return
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waitErr = cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return func() error { <-done; return waitErr }, nil
}
