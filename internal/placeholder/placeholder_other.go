//go:build !linux

// Package placeholder creates the namespace view's placeholders of missing
// protected paths; the view exists only on Linux.
package placeholder

import (
	"errors"
	"io"

	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// Set is Linux-only.
type Set struct{}

// Make is Linux-only.
func Make(protect.Ledger, string, string) (*Set, error) {
	return nil, errors.New("placeholders are made for the namespace view, which is Linux-only")
}

// Ensure is Linux-only.
func (*Set) Ensure(string) error { return errors.New("Linux-only") }

// Release releases nothing off Linux.
func (*Set) Release(io.Writer) []string { return nil }

// Registry is Linux-only: no run makes placeholders elsewhere.
type Registry struct {
	// StateRoot is agent-sandbox's state directory.
	StateRoot string
}

// Is reports false off Linux.
func (Registry) Is(string) bool { return false }

// Paths is empty off Linux.
func (Registry) Paths() []string { return nil }
