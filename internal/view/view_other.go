//go:build !linux

package view

import (
	"errors"
	"os"
)

// Init is Linux-only; elsewhere it refuses.
func Init() int {
	os.Stderr.WriteString("agent-sandbox: error: the sandbox init runs only on Linux\n")
	return 125
}

// ErrUnavailable: views exist only on Linux.
var ErrUnavailable = errors.New("namespace views exist only on Linux")

// Expected is false off Linux.
func Expected() (bool, string) { return false, "namespace views exist only on Linux" }
