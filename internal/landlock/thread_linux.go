//go:build linux

package landlock

import "golang.org/x/sys/unix"

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
	var k kernel
	k.abi, k.abiErr = ABI()
	k.usernsWhy = "the caller manages namespaces itself"
	e, err := plan(p, k)
	if err != nil {
		return Enforcement{}, err
	}
	fd, skipped, err := buildRuleset(p, e)
	if err != nil {
		return Enforcement{}, err
	}
	defer unix.Close(fd)
	e.Skipped = skipped
	if err := dropCapabilities(); err != nil {
		return Enforcement{}, err
	}
	if err := restrictSelf(fd); err != nil {
		return Enforcement{}, err
	}
	listener, err := installSeccomp(sc)
	if err != nil {
		return Enforcement{}, err
	}
	e.Listener = listener
	return e, nil
}
