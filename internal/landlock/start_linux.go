//go:build linux

package landlock

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Start confines cmd by p and starts it. It fails closed, starting
// nothing, when the kernel cannot enforce p (see [Plan]) or a policy path
// exists but cannot be opened; missing paths are skipped and listed in
// the returned Process's Enforcement.Skipped.
//
// cmd must not have been started. Start keeps cmd.SysProcAttr's settings
// (process group, session, controlling terminal are the caller's to
// choose) and adds to a copy of it: Pdeathsig SIGKILL unless one is set,
// and, with a network namespace, CLONE_NEWUSER|CLONE_NEWNET and Ptrace
// (so the caller must not set Ptrace, Credential, user namespace flags or
// id mappings then; AmbientCaps is always refused). Nil Stdin, Stdout or
// Stderr are connected to /dev/null here, as exec would, because the
// confined thread that starts the child may not be allowed to open it.
//
// The child runs with no_new_privs and without capabilities, even when
// the caller is root; its uid and gid stay the caller's.
//
// The standard streams that are files get a rule of their own with their
// descriptor's access (see [Ruleset.AddDescriptors]).
//
// Call the returned Process's Wait instead of cmd.Wait.
func Start(cmd *exec.Cmd, p Policy) (*Process, error) {
	return start(cmd, p, Seccomp{}, hostKernel(p))
}

// StartWith is [Start] with the optional parts of the seccomp filter that
// sc selects (the terminal-injection part is always there).
func StartWith(cmd *exec.Cmd, p Policy, sc Seccomp) (*Process, error) {
	return start(cmd, p, sc, hostKernel(p))
}

// StartProtected is [StartWith] for a child that no mount namespace
// confines (the weaker sandbox): since Landlock does not govern chmod,
// chown, utimes and extended attributes, the filter sends those system
// calls to a listener that this process serves until the child has
// ended, performing each one itself on the file the call names when that
// file lies inside p's ReadWrite or WriteOnly paths and outside
// protected (a directory: everything beneath it too), and refusing it
// with EPERM otherwise (see metadata_linux.go).
func StartProtected(cmd *exec.Cmd, p Policy, sc Seccomp, protected []string) (*Process, error) {
	sc.emulateMetadata = true
	return start(cmd, p, sc, hostKernel(p), protected...)
}

func start(cmd *exec.Cmd, p Policy, sc Seccomp, k kernel, protected ...string) (*Process, error) {
	if cmd.Process != nil {
		return nil, errors.New("landlock: command already started")
	}
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	e, err := plan(p, k)
	if err != nil {
		return nil, err
	}
	attr, err := childAttr(cmd.SysProcAttr, e)
	if err != nil {
		return nil, err
	}
	rulesetFd, skipped, err := buildRuleset(p, e)
	if err != nil {
		return nil, err
	}
	defer unix.Close(rulesetFd)
	e.Skipped = skipped

	if cmd.Stdin == nil || cmd.Stdout == nil || cmd.Stderr == nil {
		devNull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			return nil, err
		}
		defer devNull.Close()
		if cmd.Stdin == nil {
			cmd.Stdin = devNull
		}
		if cmd.Stdout == nil {
			cmd.Stdout = devNull
		}
		if cmd.Stderr == nil {
			cmd.Stderr = devNull
		}
	}
	cmd.SysProcAttr = attr
	if err := addDescriptorRules(rulesetFd, handledFS(e.ABI), streamFds(cmd)); err != nil {
		return nil, err
	}

	sc.denyPathTruncate = e.ABI < abiTruncate
	proc := &Process{Enforcement: e, done: make(chan struct{})}
	var guard metaGuard
	if sc.emulateMetadata {
		guard = newMetaGuard(p, protected)
	}
	started := make(chan error, 1)
	go proc.run(cmd, rulesetFd, sc, guard, e.NetNamespace, started)
	if err := <-started; err != nil {
		return nil, err
	}
	proc.Pid = cmd.Process.Pid
	return proc, nil
}

// streamFds are the descriptors of cmd's standard streams that are files
// (the others reach the child through a pipe exec makes), which get a rule
// of their own (see [Ruleset.AddDescriptors]).
func streamFds(cmd *exec.Cmd) []int {
	var fds []int
	for _, s := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		if f, ok := s.(*os.File); ok {
			fds = append(fds, int(f.Fd()))
		}
	}
	return fds
}

// childAttr returns the SysProcAttr the child is started with.
func childAttr(orig *syscall.SysProcAttr, e Enforcement) (*syscall.SysProcAttr, error) {
	a := new(syscall.SysProcAttr)
	if orig != nil {
		*a = *orig
	}
	if e.NetNamespace {
		if a.Cloneflags&syscall.CLONE_NEWUSER != 0 || a.Unshareflags&syscall.CLONE_NEWUSER != 0 ||
			a.UidMappings != nil || a.GidMappings != nil || a.Credential != nil || a.Ptrace {
			return nil, errors.New("landlock: with a private network namespace the sandbox creates the child's user namespace and traces its exec itself: leave SysProcAttr's Cloneflags/Unshareflags CLONE_NEWUSER, UidMappings, GidMappings, Credential and Ptrace unset")
		}
		a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
		a.Ptrace = true
	}
	if len(a.AmbientCaps) > 0 {
		return nil, errors.New("landlock: SysProcAttr.AmbientCaps is not supported: the sandboxed child gets no capabilities")
	}
	if a.Pdeathsig == 0 {
		a.Pdeathsig = syscall.SIGKILL
	}
	return a, nil
}

// run confines its thread, starts cmd from it, reports the outcome on
// started and then waits for the child, keeping the thread alive.
//
// With sc.emulateMetadata a goroutine of its own serves the filter's
// listener by guard until the child has ended.
func (proc *Process) run(cmd *exec.Cmd, rulesetFd int, sc Seccomp, guard metaGuard, userns bool, started chan<- error) {
	// The thread gets the Landlock domain, no_new_privs and reduced
	// capabilities (see dropCapabilities). It stays locked to this
	// goroutine for good, so it never runs other Go code, and the runtime
	// ends it when this goroutine returns. The runtime creates new
	// threads from its template thread, never from a locked one, so no
	// other thread inherits the domain. The thread is the child's parent
	// for Pdeathsig and its tracer during the namespace setup, which is
	// why this goroutine also waits for the child.
	runtime.LockOSThread()
	defer close(proc.done)

	if err := dropCapabilities(); err != nil {
		started <- err
		return
	}
	if err := restrictSelf(rulesetFd); err != nil {
		started <- err
		return
	}
	sc.NotifyConnect = false // no connect listener here: Start's caller waits only for the child
	listener, err := installSeccomp(sc)
	if err != nil {
		started <- err
		return
	}
	if listener >= 0 {
		// The pipe's write end closes when this goroutine returns (the
		// child has ended, or did not start): the server then stops.
		var stop [2]int
		if err := unix.Pipe2(stop[:], unix.O_CLOEXEC); err != nil {
			unix.Close(listener)
			started <- fmt.Errorf("the metadata listener's pipe: %w", err)
			return
		}
		defer unix.Close(stop[1])
		ready := make(chan error, 1)
		go serveMetadata(listener, stop[0], guard, ready)
		if err := <-ready; err != nil {
			started <- err
			return
		}
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, unix.EACCES) {
			err = fmt.Errorf("%w (the program, and its interpreter or loader, must be inside a ReadExec or ReadWrite path)", err)
		}
		started <- err
		return
	}
	if userns {
		pid := cmd.Process.Pid
		err := setUpUserNamespace(pid)
		if err == nil {
			if err = unix.PtraceDetach(pid); err != nil {
				err = fmt.Errorf("releasing the child: %w", err)
			}
		}
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			started <- fmt.Errorf("starting %s in a private network namespace: %w", cmd.Path, err)
			return
		}
	}
	started <- nil
	proc.err = cmd.Wait()
}
