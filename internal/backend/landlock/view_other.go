//go:build !linux

package landlock

import (
	"errors"
	"io"
	"os/exec"

	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

func (v *viewRun) prepare() (func() []string, error) { return nil, nil }

func (v *viewRun) start(*exec.Cmd) (launch.Started, error) {
	return launch.Started{}, errors.New("the namespace view is Linux-only")
}

// Early is Linux-only: off Linux, Prestart starts nothing.
type Early struct{}

// Prestart starts nothing off Linux.
func Prestart(posture.NetMode, launch.Stdio) *Early { return nil }

// Abort does nothing off Linux.
func (*Early) Abort() {}

func (*Early) take(Net) *Early { return nil }

func startScope(spec.Spec, *Early) *runScope { return nil }

func spawnView(posture.NetMode, launch.Stdio, bool) *Early { return nil }

// viewExpected is false off Linux.
func viewExpected() (bool, string) { return false, "namespace views exist only on Linux" }

// weakerLimits and applyLimits are Linux's (the weaker sandbox's
// resource limits); off Linux there are none.
func weakerLimits() string { return "" }

func applyLimits(env []string, _ io.Writer) []string { return env }
