package view

import (
	"os"
	"os/exec"
)

// nullStdio connects cmd's unset standard streams to /dev/null, as exec
// would, for starters that fork from a thread which may not open it. The
// caller closes the returned file (nil when nothing was unset) after the
// start. (The view's own: view does not import internal/launch.)
func nullStdio(cmd *exec.Cmd) (*os.File, error) {
	if cmd.Stdin != nil && cmd.Stdout != nil && cmd.Stderr != nil {
		return nil, nil
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	if cmd.Stdin == nil {
		cmd.Stdin = devNull
	}
	if cmd.Stdout == nil {
		cmd.Stdout = devNull
	}
	if cmd.Stderr == nil {
		cmd.Stderr = devNull
	}
	return devNull, nil
}
