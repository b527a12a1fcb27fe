// Package backend is the one seam between a run's plan and the sandbox that
// enforces it. A Backend turns the backend-neutral spec.Spec into a
// Prepared run; the Prepared run describes itself for --dry-run (its
// commands, warnings, refusal and its own keys of the JSON plan) and
// executes. Each implementation lives in a subpackage and owns everything
// about its sandbox, including what it refuses:
//
//   - backend/nono: the nono profile and the `nono run` launch;
//   - backend/sbx: the Docker Sandboxes microVM (mounts, network rule,
//     provisioning, `sbx exec`);
//   - backend/landlock: the built-in engine's policy (on top of the kernel
//     library internal/landlock) and its trampoline.
//
// plan.Build calls Prepare once; the run command calls Execute once.
package backend

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// Backend turns a run spec into a prepared run.
type Backend interface {
	// Prepare builds the run. It starts nothing and writes nothing, so that
	// --dry-run shows exactly what a run does. An error is a policy the
	// backend cannot enforce: it names the file, key and value at fault,
	// and the run exits 125.
	Prepare(s spec.Spec) (Prepared, error)
}

// Prepared is one prepared run of one backend.
type Prepared interface {
	// Describe is what --dry-run prints of this run.
	Describe() Description
	// Execute starts the run and returns its exit status: the agent's own,
	// 125 when the sandbox cannot be set up, 127 when the agent's command
	// is missing. It prints its own diagnostics on stdio.Err.
	Execute(stdio launch.Stdio) int
}

// Description is a prepared run as --dry-run shows it.
type Description struct {
	// Commands are the steps in execution order.
	Commands []spec.Command
	// Warnings are warning lines without the "agent-sandbox: warning: "
	// prefix.
	Warnings []string
	// Refusal, when not empty, is why a real run must not start (exit 125).
	Refusal string
	// Comments are extra header lines of the --dry-run text, without "# "
	// (nono: where the profile goes).
	Comments []string
	// Environment, when not nil, replaces the spec's environment in the
	// plan (sbx: what reaches the guest).
	Environment *Environment
	// JSON are the backend's own keys of the --dry-run --json plan (nono:
	// "profile" and "profile_path"; landlock: "landlock"). A documented
	// key a backend leaves out prints as null.
	JSON map[string]any
}

// Of returns p as a Prepared, or err: the last line of a backend's Prepare
// that wraps its package's own Prepare function.
func Of[P Prepared](p P, err error) (Prepared, error) {
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Environment is what reaches the agent: host variables passed by name,
// and variables set.
type Environment struct {
	Pass []string
	Set  map[string]string
}

// Unsandboxed is the run of an agent without any sandbox (--no-sandbox or
// an agent that opts out): its command with the whole host environment.
type Unsandboxed struct {
	// Argv is the agent's command line.
	Argv []string
	// Workdir is where it runs.
	Workdir string
}

// Describe is the one command, unconfined.
func (u Unsandboxed) Describe() Description {
	return Description{Commands: []spec.Command{{Argv: u.Argv, Note: "unsandboxed"}}}
}

// Execute runs the command with the host environment.
func (u Unsandboxed) Execute(stdio launch.Stdio) int {
	return launch.Run(u.Argv, os.Environ(), u.Workdir, stdio, nil)
}

// Self is the agent-sandbox executable (symlinks resolved). plan.Build
// checks that it lies outside every writable grant, and the landlock
// backend runs it inside the sandbox as the trampoline.
func Self() (string, error) { return self() }

// self is computed once per process: a run asks for it several times
// (plan.Build, the backend's Prepare, the weaker engine's start).
var self = sync.OnceValues(func() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find the agent-sandbox executable: %v", err)
	}
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return "", fmt.Errorf("cannot resolve the agent-sandbox executable %s: %v", exe, err)
	}
	return real, nil
})

// CreateConfig creates the config paths of s that do not exist yet
// (spec.ConfigToCreate): directories with mode 0700, files empty with mode
// 0600 ("{}" for a .json file, so that the agent reads valid JSON). It
// never replaces anything: a path that appeared meanwhile is left as is.
func CreateConfig(s spec.Spec) error {
	for _, p := range s.ConfigToCreate() {
		if !spec.ConfigIsFile(p) {
			if err := os.MkdirAll(p, 0o700); err != nil {
				return fmt.Errorf("creating the config directory %s: %w", p, err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return fmt.Errorf("creating the directory of the config file %s: %w", p, err)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if os.IsExist(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("creating the config file %s: %w", p, err)
		}
		if filepath.Ext(p) == ".json" {
			_, err = f.WriteString("{}\n")
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("creating the config file %s: %w", p, err)
		}
	}
	return nil
}
