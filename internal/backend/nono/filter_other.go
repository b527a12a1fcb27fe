//go:build !linux

package nono

import (
	"os/exec"

	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// Filter is Linux's (seccomp); elsewhere nono's own sandbox (Seatbelt on
// macOS) is all there is, and Filter selects nothing.
func Filter(p Prepared, s spec.Spec) landlock.Seccomp { return landlock.Seccomp{} }

// starter is nil: nono starts as it is.
func starter(sc landlock.Seccomp) func(*exec.Cmd) (launch.Started, error) { return nil }

// describeFilter says nothing: there is no filter here.
func describeFilter(p Prepared) (string, any) { return "", nil }
