//go:build !linux

package landlock

import (
	"errors"
	"io"
	"os/exec"

	ll "github.com/agent-sandbox/agent-sandbox/internal/landlock"
)

func viewEngine() bool { return false }

func startInView(ll.Policy, io.Writer) func(cmd *exec.Cmd) (func() error, error) {
	return func(*exec.Cmd) (func() error, error) {
		return nil, errors.New("the namespace view is Linux-only")
	}
}
