// Package backends is the one place that knows every backend: it builds
// the one a run's posture chose (New), composes nono with the built-in
// engine's namespace view (nonoEngine: nono inside the view where it can
// be built, else nono alone or the weaker sandbox), and dispatches the
// hidden commands a backend re-executes agent-sandbox for inside its
// sandbox (Hidden). The
// packages that plan and wire a run (internal/plan, cmd/agent-sandbox)
// see backends only through the internal/backend interfaces. What a command
// needs of one engine outside a run is a function here too: the sandboxes
// sbx keeps between runs, for `agents` and `prune` (kept.go), and what
// `doctor` asks of the engines (doctor.go), so that doctor imports none.
package backends

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"

	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/backend/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/backend/nono"
	"github.com/agent-sandbox/agent-sandbox/internal/backend/sbx"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
	"github.com/agent-sandbox/agent-sandbox/internal/view"
)

// New builds the backend named b with the run's options.
func New(b posture.Backend, o backend.Options) backend.Backend {
	switch b {
	case posture.Nono:
		nb := nono.Backend{Options: nono.Options{
			Path: lookOr(o.LookPath, "nono"), Verbose: o.Verbose, NixStore: o.NixStore, Home: o.Home,
			SeatbeltRules: o.SeatbeltRules, UnixSocketDirBind: o.UnixSocketDirBind,
		}}
		if runtime.GOOS != "linux" {
			return nonoAlone{nono: nb, getenv: o.Getenv}
		}
		early, _ := o.Early.(*landlock.Early)
		return nonoEngine{nono: nb, getenv: o.Getenv, tty: o.TTY, view: landlock.Backend{
			NixStore: o.NixStore, Verbose: o.Verbose, Quiet: o.Quiet, PolicyFile: o.PolicyFile, UnixSocketDirs: o.UnixSocketDirBind, Early: early,
		}}
	case posture.Sbx:
		return sbx.Backend{Options: sbx.Options{
			Path: lookOr(o.LookPath, "sbx"), TTY: o.TTY, Verbose: o.Verbose, Quiet: o.Quiet, Getenv: o.Getenv,
			StateRoot: o.Home.StateRoot(), PolicyFile: o.PolicyFile,
			Install: o.SbxInstall, VersionCommand: o.SbxVersionCommand, Home: o.SbxHome, LoopbackEnv: o.LoopbackEnv,
		}}
	case posture.Landlock:
		early, _ := o.Early.(*landlock.Early)
		return landlock.Backend{NixStore: o.NixStore, Verbose: o.Verbose, Quiet: o.Quiet, PolicyFile: o.PolicyFile, UnixSocketDirs: o.UnixSocketDirBind, Early: early}
	}
	return unknown(b)
}

// unknown refuses a backend this build does not have.
type unknown posture.Backend

// Prepare refuses: this build has no such backend.
func (u unknown) Prepare(spec.Spec) (backend.Prepared, error) {
	return nil, fmt.Errorf("backend %s cannot run yet", string(u))
}

// lookOr is the absolute path of name on PATH, or name when not found.
func lookOr(look func(string) (string, error), name string) string {
	if look == nil {
		return name
	}
	if p, err := look(name); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return name
}

// Hidden runs one of the hidden commands a backend re-executes
// agent-sandbox for (the namespace view's init, the weaker sandbox's
// trampoline) when args start with one, and returns its exit status with
// true; otherwise false.
func Hidden(args []string, stderr io.Writer) (int, bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case view.InitArg:
		return view.Init(), true
	case landlock.TrampolineArg:
		return landlock.Trampoline(args[1:], stderr), true
	}
	return 0, false
}
