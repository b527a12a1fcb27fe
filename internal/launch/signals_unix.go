//go:build unix

package launch

import (
	"os"
	"syscall"
)

// forwarded are the signals passed on to the agent.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGWINCH, syscall.SIGUSR1, syscall.SIGUSR2}

func terminalSignal(s os.Signal) bool {
	return s == syscall.SIGINT || s == syscall.SIGQUIT || s == syscall.SIGWINCH
}

// defaultIgnored says whether s's default action is to be ignored.
func defaultIgnored(s os.Signal) bool { return s == syscall.SIGWINCH }

// interruptSignals end the checks after a run early.
var interruptSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}
