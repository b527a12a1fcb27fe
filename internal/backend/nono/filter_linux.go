//go:build linux

package nono

import (
	"os/exec"
	"strings"

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

// starter starts nono under Filter (see launch.Lifecycle.Start).
func starter(sc landlock.Seccomp) func(*exec.Cmd) (launch.Started, error) {
	return func(cmd *exec.Cmd) (launch.Started, error) {
		wait, err := landlock.StartFiltered(cmd, sc)
		return launch.Started{Wait: wait}, err
	}
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
