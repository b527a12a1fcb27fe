//go:build !linux

package scope

import "errors"

// Find finds no user manager off Linux: systemd scopes are Linux's.
func Find() (*Manager, error) {
	return nil, errors.New("systemd user scopes are Linux-only")
}

// Attach is Linux-only.
func (m *Manager) Attach(pid int, unit, description string, l Limits) (*Scope, error) {
	return nil, errors.New("systemd user scopes are Linux-only")
}

// Delegated is Linux-only: nono enforces --memory through cgroup v2.
func Delegated() error { return errors.New("nono enforces --memory on Linux only (cgroup v2)") }
