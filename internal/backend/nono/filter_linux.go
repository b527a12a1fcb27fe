//go:build linux

package nono

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// Filter is the seccomp layer agent-sandbox puts under nono on Linux
// (landlock.StartFiltered): nono confines by Landlock and, only when the
// network is blocked or allow-listed, its own seccomp filter; what
// Landlock does not mediate stays open to the agent otherwise. nono and
// everything it starts inherit this filter:
//
//   - socket(AF_UNIX): Landlock below ABI 9 does not stop a connect() to a
//     host socket by path (the Docker daemon's, the session bus,
//     ssh-agent, X11), and nono leaves pathname mediation off. Kept only
//     when the folder names unix_socket_dir_bind, whose sockets the agent
//     must create; nono's pathname mediation then guards them (Profile).
//   - the kernel keyring calls (the launcher's session keyring and the
//     user's keyring hold Kerberos tickets and other secrets);
//   - new user namespaces (every capability inside one), unless
//     nested_userns or --allow-userns;
//   - System V IPC and Unix socketpairs other than stream and seqpacket
//     (no IPC namespace: the host's shared memory; a datagram socket's
//     sendto by path reaches host sockets such as journald's);
//   - and what every filter of agent-sandbox refuses: TIOCSTI and
//     TIOCLINUX (keystrokes pushed into the user's terminal), socket
//     families outside the allow list (AF_INET, AF_INET6, AF_UNIX,
//     AF_NETLINK with NETLINK_ROUTE only: AF_VSOCK, AF_PACKET, AF_ALG and
//     any family a later kernel adds), io_uring, fscrypt's keys, foreign
//     system call ABIs.
func Filter(p Prepared, s spec.Spec) landlock.Seccomp {
	return landlock.Seccomp{
		DenyKeyrings:    true,
		DenyUnixSockets: len(p.Profile.Filesystem.UnixSocketDirBind) == 0,
		DenyUserns:      !s.NestedUserns,
		DenyHostIPC:     true,
	}
}

// starter starts nono under Filter (see launch.Lifecycle.Start); the
// signals sent to agent-sandbox reach the agent through routeSignal.
func starter(sc landlock.Seccomp) func(*exec.Cmd) (launch.Started, error) {
	return func(cmd *exec.Cmd) (launch.Started, error) {
		wait, err := landlock.StartFiltered(cmd, sc)
		if err != nil {
			return launch.Started{}, err
		}
		nono := cmd.Process.Pid
		return launch.Started{Wait: wait, Signal: func(s os.Signal) error { return routeSignal(nono, s) },
			// The agent is nono's child: a TUI that stops itself
			// leaves nono running.
			Stopped: func() bool { return agentStopped(nono) }}, nil
	}
}

// routeSignal passes s on to the agent under the nono whose pid is nono:
// to nono's children, the agent (nono forks it and it execs the agent's
// command) directly. nono's supervisor passes on only SIGINT, SIGTERM and
// SIGQUIT as they are: it keeps SIGUSR1 for itself (a pause), has no
// handler for SIGUSR2, which would end it (and the agent with it), passes
// SIGWINCH on only to a terminal of its own, and on SIGHUP the agent's
// output ended. Before nono has started its child, SIGINT, SIGTERM,
// SIGHUP and SIGQUIT go to nono, which ends; any other signal has nobody
// to reach and is dropped.
func routeSignal(nono int, s os.Signal) error {
	sig, ok := s.(syscall.Signal)
	if !ok {
		return errors.New("not a signal number")
	}
	kids := children(nono)
	if len(kids) == 0 {
		switch sig {
		case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT:
			return syscall.Kill(nono, sig)
		}
		return errors.New("nono has not started the agent")
	}
	var err error
	for _, pid := range kids {
		if e := syscall.Kill(pid, sig); e != nil {
			err = e
		}
	}
	return err
}

// agentStopped reports whether a child of nono (the agent) is stopped
// now: its state in /proc is T.
func agentStopped(nono int) bool {
	for _, pid := range children(nono) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 'T' {
			return true
		}
	}
	return false
}

// children are the pids of pid's child processes, from
// /proc/PID/task/*/children.
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// describeFilter is the dry run's line about Filter, and its JSON.
func describeFilter(p Prepared) (string, any) {
	sc := Filter(p, p.Spec)
	var denied []string
	if sc.DenyUnixSockets {
		denied = append(denied, "socket(AF_UNIX) (host sockets by path; unix_socket_dir_bind keeps it, with nono's pathname mediation)")
	}
	if sc.DenyKeyrings {
		denied = append(denied, "the keyring calls")
	}
	if sc.DenyUserns {
		denied = append(denied, "new user namespaces")
	}
	if sc.DenyHostIPC {
		denied = append(denied, "System V IPC, Unix socketpairs but stream and seqpacket")
	}
	denied = append(denied, "TIOCSTI/TIOCLINUX, socket families but INET/INET6/UNIX/NETLINK_ROUTE (AF_VSOCK, AF_PACKET...), io_uring, fscrypt keys")
	return "seccomp: agent-sandbox starts nono with no_new_privs and its own filter, which nono and the agent inherit; it refuses " + strings.Join(denied, ", "), sc
}
