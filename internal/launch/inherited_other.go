//go:build !linux

package launch

import "syscall"

// CloseInherited marks every descriptor above stderr close-on-exec, so
// that what the caller left open reaches no program agent-sandbox starts.
// Without a way to list them, it marks the first 1024.
func CloseInherited() {
	for fd := 3; fd < 1024; fd++ {
		syscall.CloseOnExec(fd)
	}
}
