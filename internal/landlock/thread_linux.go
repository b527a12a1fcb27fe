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
	// none: the kernel has no Landlock and the caller's mounts are the
	// boundary (NewRulesetOrNone): no ruleset exists, the rules are not
	// added, and ConfineThread sets no_new_privs and seccomp only.
	none bool
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

// NewRulesetOrNone is [NewRuleset] for the namespace view's init, whose
// mounts are the boundary: on a kernel without Landlock (ABI 0, or its
// system calls refused) it returns a ruleset that holds no Landlock
// rules ([Ruleset.None]), whose ConfineThread still drops capabilities,
// sets no_new_privs and installs the seccomp filter, as bubblewrap
// confines. Only a caller whose run was planned and warned for that may
// use it (view.Config.WithoutLandlock); every other caller uses
// NewRuleset, which fails closed. On a kernel with Landlock it is
// NewRuleset.
func NewRulesetOrNone(p Policy) (*Ruleset, error) {
	if abi, _ := ABI(); abi >= 1 {
		return NewRuleset(p)
	}
	return newNoneRuleset(p)
}

// newNoneRuleset is the ruleset of p without Landlock (see
// NewRulesetOrNone).
func newNoneRuleset(p Policy) (*Ruleset, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	return &Ruleset{fd: -1, p: p, done: map[string]bool{}, none: true}, nil
}

// None says that the ruleset holds no Landlock rules: the kernel has no
// Landlock (see [NewRulesetOrNone]).
func (r *Ruleset) None() bool { return r.none }

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
	if r.fd <= 0 && !r.none {
		return Enforcement{}, fmt.Errorf("landlock: the ruleset was closed")
	}
	if !r.rest {
		return Enforcement{}, fmt.Errorf("landlock: the ruleset is incomplete (AddRest was not called)")
	}
	e := r.e
	if err := dropCapabilities(); err != nil {
		return Enforcement{}, err
	}
	if r.none {
		// No Landlock: no_new_privs (which the seccomp filter needs
		// too), then the filter alone.
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return Enforcement{}, fmt.Errorf("setting no_new_privs: %w", err)
		}
	} else if err := restrictSelf(r.fd); err != nil {
		return Enforcement{}, err
	}
	// Below ABI 3 Landlock does not mediate truncate(2) by path, so
	// seccomp refuses it; without Landlock (none) the mounts and the
	// file modes govern it exactly as they govern an open for writing.
	sc.denyPathTruncate = !r.none && e.ABI < abiTruncate
	listener, err := installSeccomp(sc)
	if err != nil {
		return Enforcement{}, err
	}
	e.Listener = listener
	return e, nil
}
