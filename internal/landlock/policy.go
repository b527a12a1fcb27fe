package landlock

import (
	"fmt"
	"strings"
)

// NetMode says what network access the confined child gets.
type NetMode int

const (
	// NetOpen leaves the network as it is for the caller. It is the zero
	// value.
	NetOpen NetMode = iota
	// NetBlocked cuts the child off from every network peer outside the
	// sandbox: a private network namespace when unprivileged user
	// namespaces work, otherwise Landlock TCP rules (ABI 4 or later).
	NetBlocked
)

// String returns "open" or "blocked".
func (m NetMode) String() string {
	switch m {
	case NetOpen:
		return "open"
	case NetBlocked:
		return "blocked"
	}
	return fmt.Sprintf("NetMode(%d)", int(m))
}

// Policy is what a confined child may reach. Paths must be absolute.
// A path is opened following symlinks, so a grant lands on the target of
// a link; callers that must not let a writable location redirect a grant
// canonicalise and vet paths before calling [Start]. Paths that do not
// exist are skipped and listed in [Enforcement.Skipped]; any other error
// opening a path makes [Start] fail.
//
// A path may appear in several lists; its rights are then the union.
// Rights granted on a directory apply to everything beneath it.
type Policy struct {
	// ReadExec paths may be read and executed: directories get
	// execute, read-file and read-dir; files get execute and read-file.
	ReadExec []string
	// ReadOnly paths may be read but not executed: directories get
	// read-file and read-dir; files get read-file.
	ReadOnly []string
	// ReadWrite directories get every right the kernel's Landlock ABI
	// handles except creating character and block device nodes
	// (execute included, and refer on ABI 2+, so rename and link work between
	// ReadWrite directories, truncate on ABI 3+, ioctl on devices on
	// ABI 5+, and connecting to Unix sockets by path on ABI 9+).
	// ReadWrite files (for example /dev/null or /dev/tty) get
	// read-file, write-file, truncate (ABI 3+) and ioctl on devices
	// (ABI 5+), but not execute.
	ReadWrite []string
	// WriteOnly paths may be written but not read or executed (nono's
	// "write" grants): directories get write-file, make-file, make-dir,
	// remove and truncate (ABI 3+); files get write-file and truncate.
	WriteOnly []string
	// List directories may be listed (read-dir, beneath them too) and
	// nothing else: the namespace view's skeleton ("/", "/usr"), whose
	// entries are only what the view mounted there.
	List []string
	// Network is the network mode.
	Network NetMode
	// AllowTCPConnect lists TCP ports the child may still connect to
	// when Network is NetBlocked and Landlock TCP rules are in force
	// (meant for a future egress proxy port). Landlock port rules do not
	// look at the destination address. It is an error with NetOpen.
	AllowTCPConnect []uint16
}

// Enforcement describes how a [Policy] is (or will be) enforced on this
// kernel.
type Enforcement struct {
	// ABI is the Landlock ABI version the ruleset is built for.
	ABI int
	// Listener is ConfineThread's seccomp listener of connect(2)
	// (Seccomp.NotifyConnect), -1 or 0 when there is none.
	Listener int `json:"-"`
	// NetNamespace is true when the child runs in a private user and
	// network namespace.
	NetNamespace bool
	// TCPRules is true when Landlock handles TCP bind and connect, so
	// only the AllowTCPConnect ports can be connected to and nothing can
	// be bound.
	TCPRules bool
	// UDPRules is true when Landlock also handles UDP bind and send
	// (ABI 10+).
	UDPRules bool
	// ScopeSignals is true when the child cannot signal processes
	// outside its Landlock domain (ABI 6+).
	ScopeSignals bool
	// ScopeAbstractUnix is true when the child cannot connect to
	// abstract Unix sockets created outside its Landlock domain (ABI 6+).
	ScopeAbstractUnix bool
	// Warnings are complete sentences about protections the kernel
	// cannot give, for the caller to print (prefixed as it sees fit).
	Warnings []string
	// Skipped lists the policy paths that did not exist and therefore
	// were not granted. It is not a warning: system path sets routinely
	// name directories (such as /lib64) that some hosts lack.
	Skipped []string
}

// Process is a child started by [Start]. Use its Wait method, not the
// [os/exec.Cmd]'s: the goroutine that confined and started the child already
// waits for it. Signals may be sent through the cmd.Process as usual.
type Process struct {
	// Pid is the child's process id.
	Pid int
	// Enforcement is how the policy was enforced for this child.
	Enforcement Enforcement

	done chan struct{}
	err  error
}

// Wait waits for the child to exit and returns what [os/exec.Cmd.Wait]
// returned: nil, an [*os/exec.ExitError] carrying the exit status, or an I/O
// copying error. It may be called more than once and from several
// goroutines; every call returns the same result.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

// Reaches reports whether a file created in dir would be reachable under
// one of p's rules: a path of ReadExec, ReadOnly, ReadWrite or WriteOnly
// that is dir or lies above it (a rule holds beneath its path). List
// rules, which only let a directory be read, do not count.
func (p Policy) Reaches(dir string) bool {
	for _, l := range [][]string{p.ReadExec, p.ReadOnly, p.ReadWrite, p.WriteOnly} {
		for _, path := range l {
			if path == "/" || path == dir || strings.HasPrefix(dir, strings.TrimSuffix(path, "/")+"/") {
				return true
			}
		}
	}
	return false
}
