//go:build !linux

package landlock

import (
	"errors"
	"io"
	"os/exec"

	ll "github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// startInView is Linux-only.
func startInView(ll.Policy, spec.Spec, Net, *netSession, io.Writer, func(*exec.Cmd) (func() error, error)) func(cmd *exec.Cmd) (func() error, error) {
	return func(*exec.Cmd) (func() error, error) {
		return nil, errors.New("the namespace view is Linux-only")
	}
}

// viewExpected is false off Linux.
func viewExpected() (bool, string) { return false, "namespace views exist only on Linux" }
