//go:build !linux

package launch

// jobControl is Linux's; elsewhere the agent's own SIGTSTP reaches the job.
func jobControl(child int, tty bool, stopped func() bool, resume func(), done <-chan struct{}) {}
