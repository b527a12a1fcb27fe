//go:build linux

package landlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ABI returns the Landlock ABI version of the running kernel. When
// Landlock cannot be used it returns 0 and an error that says why and
// what to do about it.
func ABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, abiError(errno)
	}
	if int(v) < 1 {
		return 0, fmt.Errorf("Landlock is not available (kernel %s reports Landlock ABI %d)", kernelRelease(), int(v))
	}
	if c := abiCap(); c > 0 && c < int(v) {
		return c, nil
	}
	return int(v), nil
}

func abiError(errno unix.Errno) error {
	rel := kernelRelease()
	switch errno {
	case unix.ENOSYS:
		return fmt.Errorf("Landlock is not available (kernel %s has no Landlock system calls: it needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK=y, and no seccomp filter blocking them)", rel)
	case unix.EOPNOTSUPP:
		return fmt.Errorf("Landlock is not available (kernel %s has Landlock built in but not enabled: add landlock to the lsm= boot parameter)", rel)
	case unix.EPERM:
		return fmt.Errorf("Landlock is not available (kernel %s: landlock_create_ruleset was refused, probably by a seccomp filter such as a container runtime's; allow the landlock_* system calls)", rel)
	}
	return fmt.Errorf("Landlock is not available (kernel %s: landlock_create_ruleset: %v)", rel, errno)
}

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "(unknown release)"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// kernel is what planning needs to know about the running kernel. Tests
// construct other values to exercise kernels this machine is not.
type kernel struct {
	abi       int    // Landlock ABI; 0 when unavailable
	abiErr    error  // why Landlock is unavailable, when abi is 0
	userns    bool   // user and network namespaces can be created
	usernsWhy string // why not, when userns is false
}

// hostKernel describes the running kernel. User namespaces are probed
// only when the policy needs them, because the probe starts a process.
func hostKernel(p Policy) kernel {
	var k kernel
	k.abi, k.abiErr = ABI()
	if p.Network == NetBlocked {
		k.userns, k.usernsWhy = probeUserNamespaces()
	}
	return k
}

// Plan reports how p would be enforced on this kernel, without starting
// anything. It fails closed: when the kernel cannot enforce p (no
// Landlock, or a blocked network with neither a network namespace nor
// Landlock ABI 4) the error says what is missing. Paths that do not exist
// are listed in Enforcement.Skipped. For a blocked network it may probe
// user namespaces (see [UserNamespacesAvailable]).
func Plan(p Policy) (Enforcement, error) {
	e, err := plan(p, hostKernel(p))
	if err != nil {
		return Enforcement{}, err
	}
	for _, l := range p.lists() {
		for _, path := range l.paths {
			if _, err := os.Stat(path); isMissing(err) {
				e.Skipped = append(e.Skipped, path)
			}
		}
	}
	return e, nil
}

// plan decides how p is enforced on kernel k.
func plan(p Policy, k kernel) (Enforcement, error) {
	if err := p.validate(); err != nil {
		return Enforcement{}, err
	}
	if k.abi < 1 {
		if k.abiErr != nil {
			return Enforcement{}, k.abiErr
		}
		return Enforcement{}, errors.New("Landlock is not available")
	}
	abi := min(k.abi, maxKnownABI)
	e := Enforcement{
		ABI:               abi,
		ScopeSignals:      abi >= abiScope,
		ScopeAbstractUnix: abi >= abiScope,
	}
	if p.Network == NetBlocked {
		switch {
		case k.userns:
			e.NetNamespace = true
			e.TCPRules = abi >= abiTCP
			e.UDPRules = abi >= abiUDP
		case abi >= abiTCP:
			e.TCPRules = true
			e.UDPRules = abi >= abiUDP
			if !e.UDPRules {
				e.Warnings = append(e.Warnings, fmt.Sprintf(
					"UDP (DNS included) is not confined: there is no private network namespace (user namespaces are unavailable: %s) and Landlock filters only TCP before ABI %d (kernel has ABI %d)",
					k.usernsWhy, abiUDP, k.abi))
			}
		default:
			return Enforcement{}, fmt.Errorf(
				"network blocking needs a network namespace or Landlock ABI %d (kernel has ABI %d; user namespaces are unavailable: %s)",
				abiTCP, k.abi, k.usernsWhy)
		}
	}
	if !e.ScopeSignals {
		e.Warnings = append(e.Warnings, fmt.Sprintf(
			"processes outside the sandbox that run as the same user can be signalled from inside it: signal scoping needs Landlock ABI %d (kernel has ABI %d)",
			abiScope, k.abi))
	}
	if !e.ScopeAbstractUnix && !e.NetNamespace {
		e.Warnings = append(e.Warnings, fmt.Sprintf(
			"abstract Unix sockets outside the sandbox (X11, D-Bus) can be connected to from inside it: abstract socket scoping needs Landlock ABI %d (kernel has ABI %d)",
			abiScope, k.abi))
	}
	if abi < abiResolveUnix {
		e.Warnings = append(e.Warnings, fmt.Sprintf(
			"Unix sockets outside the sandbox can still be connected to by path (for example the Docker or nix-daemon socket): confining them needs Landlock ABI %d (kernel has ABI %d)",
			abiResolveUnix, k.abi))
	}
	return e, nil
}

type pathList struct {
	name  string
	paths []string
}

func (p Policy) lists() []pathList {
	return []pathList{
		{"ReadExec", p.ReadExec},
		{"ReadOnly", p.ReadOnly},
		{"ReadWrite", p.ReadWrite},
		{"WriteOnly", p.WriteOnly},
		{"List", p.List},
	}
}

func (p Policy) validate() error {
	for _, l := range p.lists() {
		for _, path := range l.paths {
			if !filepath.IsAbs(path) {
				return fmt.Errorf("landlock policy: %s path %q is not absolute", l.name, path)
			}
		}
	}
	switch p.Network {
	case NetOpen:
		if len(p.AllowTCPConnect) > 0 {
			return errors.New("landlock policy: AllowTCPConnect needs Network: NetBlocked (with an open network every port is reachable already)")
		}
	case NetBlocked:
		for _, port := range p.AllowTCPConnect {
			if port == 0 {
				return errors.New("landlock policy: AllowTCPConnect contains port 0")
			}
		}
	default:
		return fmt.Errorf("landlock policy: unknown network mode %d", int(p.Network))
	}
	return nil
}

// isMissing reports whether err means the path does not exist (ENOTDIR:
// a component of it is not a directory).
func isMissing(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)
}
