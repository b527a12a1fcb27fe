//go:build !linux

package guard

import (
	"os"
	"syscall"
)

// procStart is "-" while process pid runs, "" otherwise (no start time
// off Linux: a reused pid is taken for the same process).
func procStart(pid int) string {
	p, err := os.FindProcess(pid)
	if err != nil || p.Signal(syscall.Signal(0)) != nil {
		return ""
	}
	return "-"
}
