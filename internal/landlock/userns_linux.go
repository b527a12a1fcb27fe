//go:build linux

package landlock

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// UserNamespacesAvailable reports whether this process can start a child
// in new user and network namespaces, which is how NetBlocked is
// enforced when possible. The answer is probed once (by really creating
// the namespaces for a child that is killed before it runs) and cached.
func UserNamespacesAvailable() bool {
	ok, _ := probeUserNamespaces()
	return ok
}

// probeUserNamespaces returns UserNamespacesAvailable's answer and, when
// it is false, why, phrased to follow "user namespaces are unavailable: ".
var probeUserNamespaces = sync.OnceValues(detectUserNamespaces)

func detectUserNamespaces() (bool, string) {
	err := tryUserNamespace()
	if err == nil {
		return true, ""
	}
	why := "creating one failed: " + err.Error()
	if readSysctl("user/max_user_namespaces") == "0" {
		why = "sysctl user.max_user_namespaces is 0"
	} else if os.Geteuid() != 0 {
		switch {
		case readSysctl("kernel/unprivileged_userns_clone") == "0":
			why = "sysctl kernel.unprivileged_userns_clone is 0"
		case readSysctl("kernel/apparmor_restrict_unprivileged_userns") == "1":
			why = "AppArmor restricts them (sysctl kernel.apparmor_restrict_unprivileged_userns is 1; an AppArmor profile granting agent-sandbox the userns permission lifts it)"
		}
	}
	return false, why
}

func readSysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// tryUserNamespace starts a child in new user and network namespaces
// exactly as Start does, minus Landlock, and kills it while it is stopped
// at its exec trap, before it runs any instruction of the program.
func tryUserNamespace() error {
	prog := "/bin/sh"
	if _, err := os.Stat(prog); err != nil {
		if prog, err = os.Executable(); err != nil {
			return fmt.Errorf("no program to probe with: %w", err)
		}
	}
	errc := make(chan error, 1)
	go func() {
		// Ptrace needs the goroutine locked to the thread that forks (the
		// tracer). The thread is discarded when the goroutine ends.
		runtime.LockOSThread()
		cmd := &exec.Cmd{Path: prog, Args: []string{prog, "-c", "exit 0"}, Env: []string{}}
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
			Ptrace:     true,
			Pdeathsig:  syscall.SIGKILL,
		}
		if err := cmd.Start(); err != nil {
			errc <- err
			return
		}
		err := setUpUserNamespace(cmd.Process.Pid)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		errc <- err
	}()
	return <-errc
}

// setUpUserNamespace finishes starting a child that was cloned with
// CLONE_NEWUSER and Ptrace: it waits until the child is stopped at its
// exec trap, before the program's first instruction, and then maps the
// caller's uid and gid into the child's user namespace. The caller then
// detaches (the child runs) or kills it.
//
// It must run on the thread that started the child (the tracer). The
// maps are written from another goroutine, hence another thread, because
// the starting thread may be confined by Landlock, which denies it
// /proc/PID/uid_map. Writing them only after execve has a second
// purpose: the kernel computes the program's capabilities at execve, and
// with the ids still unmapped the child gets none in its namespace, even
// when the caller is root (whose uid 0 is mapped to itself).
func setUpUserNamespace(pid int) error {
	if err := awaitExecTrap(pid); err != nil {
		return err
	}
	mapped := make(chan error, 1)
	go func() { mapped <- WriteIDMaps(pid) }()
	return <-mapped
}

// WriteIDMaps maps the caller's effective uid and gid to themselves in the
// user namespace of the process pid (which must have none yet), denying
// setgroups there first, as an unprivileged caller must before it maps its
// gid. It is how the engines give a child cloned with CLONE_NEWUSER its
// ids, after its exec (see setUpUserNamespace and view.Spawn).
func WriteIDMaps(pid int) error {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	uid, gid := os.Geteuid(), os.Getegid()
	if err := writeProcFile(dir+"uid_map", fmt.Sprintf("%d %d 1\n", uid, uid)); err != nil {
		return err
	}
	// An unprivileged caller may map its gid only after denying
	// setgroups in the namespace. The child has no use for setgroups, so
	// it is denied for root callers too.
	if err := writeProcFile(dir+"setgroups", "deny"); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return writeProcFile(dir+"gid_map", fmt.Sprintf("%d %d 1\n", gid, gid))
}

// writeProcFile writes s to a /proc file in a single write, as the id
// map files require.
func writeProcFile(path, s string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(s)); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// awaitExecTrap waits until the traced child stops with the SIGTRAP that
// follows a successful execve. Signals that arrive first are delivered
// to it. If the child ends instead, it has been reaped here.
func awaitExecTrap(pid int) error {
	for range 32 {
		var ws unix.WaitStatus
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("waiting for the child to reach its program: %w", err)
		}
		switch {
		case ws.Stopped() && ws.StopSignal() == unix.SIGTRAP:
			return nil
		case ws.Stopped():
			if err := unix.PtraceCont(pid, int(ws.StopSignal())); err != nil {
				return fmt.Errorf("resuming the child: %w", err)
			}
		case ws.Signaled():
			return fmt.Errorf("the child was killed by %v before its program started", ws.Signal())
		default:
			return fmt.Errorf("the child exited with status %d before its program started", ws.ExitStatus())
		}
	}
	return errors.New("the child kept stopping on signals before its program started")
}
