//go:build linux

package landlock

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// ConfineThread confines the calling thread by p and the seccomp filter
// selected by sc, so that every process it starts afterwards inherits the
// confinement: it empties the capability sets a child could inherit (and,
// with CAP_SETPCAP, the bounding set), sets no_new_privs, enforces a
// Landlock ruleset built from p (with signal and abstract-socket scoping
// where the kernel has them), and installs the seccomp filter.
//
// The caller must have locked its goroutine to the thread
// (runtime.LockOSThread) and must never unlock it: the confinement cannot
// be undone. p.Network must be NetOpen, or NetBlocked enforced by Landlock
// TCP rules alone (no namespace is created here). It fails closed: on any
// error the thread may be partly confined and must not start the child.
// With sc.NotifyConnect, Enforcement.Listener is the seccomp listener of
// connect(2) (see [NotifyLoop]), which the caller must serve.
func ConfineThread(p Policy, sc Seccomp) (Enforcement, error) {
	r, err := NewRuleset(p)
	if err != nil {
		return Enforcement{}, err
	}
	defer r.Close()
	if err := r.AddRest(); err != nil {
		return Enforcement{}, err
	}
	return r.ConfineThread(sc)
}

// Ruleset is the Landlock ruleset of a policy, built ahead of the
// confinement (by any thread of the process) for [Ruleset.ConfineThread]:
// [NewRuleset], then [Ruleset.AddOpened] for paths the caller has open,
// then [Ruleset.AddRest] for the others.
type Ruleset struct {
	fd     int
	e      Enforcement
	p      Policy
	grants [5]grant
	at     map[string][]int // path → the indices of the lists naming it
	done   map[string]bool  // paths whose rules AddOpened added
	rest   bool             // AddRest ran
}

// NewRuleset checks p against the running kernel, as [ConfineThread] does,
// and creates its ruleset with its network rules; its paths' rules are
// added by AddOpened and AddRest.
func NewRuleset(p Policy) (*Ruleset, error) {
	var k kernel
	k.abi, k.abiErr = ABI()
	k.usernsWhy = "the caller manages namespaces itself"
	e, err := plan(p, k)
	if err != nil {
		return nil, err
	}
	return createRuleset(p, e)
}

// Close releases the ruleset (a thread it confined stays confined).
func (r *Ruleset) Close() {
	if r.fd > 0 {
		unix.Close(r.fd)
		r.fd = -1
	}
}

// ConfineThread confines the calling thread by the ruleset and the
// seccomp filter selected by sc, with everything else [ConfineThread]
// (the function) says.
func (r *Ruleset) ConfineThread(sc Seccomp) (Enforcement, error) {
	if r.fd <= 0 {
		return Enforcement{}, fmt.Errorf("landlock: the ruleset was closed")
	}
	if !r.rest {
		return Enforcement{}, fmt.Errorf("landlock: the ruleset is incomplete (AddRest was not called)")
	}
	e := r.e
	if err := dropCapabilities(); err != nil {
		return Enforcement{}, err
	}
	if err := restrictSelf(r.fd); err != nil {
		return Enforcement{}, err
	}
	sc.denyPathTruncate = e.ABI < abiTruncate
	listener, err := installSeccomp(sc)
	if err != nil {
		return Enforcement{}, err
	}
	e.Listener = listener
	return e, nil
}
