//go:build !linux

package launch

// becomeSubreaper has no portable equivalent off Linux: orphans the agent
// leaves are re-parented to init (documented in README.md).
func becomeSubreaper() error { return nil }

// sweep is a no-op off Linux.
func sweep(int) {}
