//go:build !linux

package view

import "os"

// Init is Linux-only; elsewhere it refuses.
func Init() int {
	os.Stderr.WriteString("agent-sandbox: error: the sandbox init runs only on Linux\n")
	return 125
}
