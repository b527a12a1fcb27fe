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
// internal/backends composes two of them: on Linux, where the namespace
// view can be built, a nono run is the landlock backend's view with nono
// started inside it (landlock.Inner, engine "nono-in-view");
// Description.Engine names the engine that runs.
//
// plan.Build calls Prepare once; the run command calls Execute once.
package backend

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/guard"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/placeholder"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
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
	// Repeating are those of Warnings that every run on this host
	// repeats and that say nothing about this run's safety (the kernel
	// shortfalls of the namespace view): --quiet drops them.
	Repeating []string
	// Protection says what the backend does with the run's ledger.
	Protection Protection
	// Refusal, when not empty, is why a real run must not start (exit 125).
	Refusal string
	// Comments are extra header lines of the --dry-run text, without "# "
	// (nono: where the profile goes).
	Comments []string
	// Environment, when not nil, replaces the spec's environment in the
	// plan (sbx: what reaches the guest).
	Environment *Environment
	// Engine is the engine the run will use (internal/engine's ID:
	// "view", "nono-in-view", "nono", "weaker", "sbx"): "" means the
	// backend's one engine (nono alone for nono, sbx).
	Engine string
	// JSON are the backend's own keys of the --dry-run --json plan (nono:
	// "profile", "profile_path" and on Linux "seccomp"; landlock:
	// "landlock"). A documented key a backend leaves out prints as null.
	JSON map[string]any
}

// Protection is what a backend does with the ledger's read-only entries
// (internal/protect). Whatever it says, every sandboxed run has the ledger
// watched while the agent runs (on Linux) and audited after it
// (internal/guard): code-running settings restored, hooks quarantined,
// every other change named.
type Protection struct {
	// ReadOnly says the backend keeps the read-only entries read-only and
	// binds one again when the host replaces it (the namespace view).
	ReadOnly bool
	// Why, when not ReadOnly, says why it cannot.
	Why string
}

// Rights are what a backend lets the agent do with a path.
type Rights struct {
	Read  bool `json:"read"`
	Write bool `json:"write"`
	Exec  bool `json:"exec"`
}

// Reach is how a prepared run treats one host path: what `agent-sandbox
// why` reports, computed from the same policy and view the run enforces.
type Reach struct {
	// Rights are the union of the rules covering the path, narrowed by
	// the view (a read-only bind takes write away; a mask or a path
	// outside every bind takes everything).
	Rights Rights
	// Rule is the policy entry that grants the most specific access (the
	// deepest covering path), "" when none does.
	Rule string
	// List names Rule's list: "read_exec", "read_only", "read_write" or
	// "write_only".
	List string
	// System says Rule is one of the engine's own system paths.
	System bool
	// Masked is the view's mask over the path (a credential inside a
	// granted tree, an /etc secret), "" when none.
	Masked string
	// Private is the private mount over the path (/tmp, /dev/shm, an
	// agent config file's scratch directory, /proc): the host's path is
	// not what the agent sees there.
	Private string
	// Hidden says the view shows nothing at the path: no bind covers it.
	Hidden bool
	// Cache is the toolchain cache the path lies in, which the view shows
	// as a private, writable layer over the host's ("" when none).
	Cache string
	// CacheCopy, with Cache, is the weaker sandbox's own copy of that
	// cache (per project), which the tool is pointed at instead: the
	// host's cache itself is not granted.
	CacheCopy string
}

// Reacher is a Prepared run that can say exactly how it treats a path
// (the built-in engine, from the policy and view it enforces); `why`
// falls back to agent-sandbox's own grants for the others.
type Reacher interface {
	Reach(path string) Reach
}

// HostReach is how a prepared run treats a TCP connection from the agent
// to one host and port: what `agent-sandbox why --host` reports, computed
// from the same decision the run carries out (the network namespace, the
// forwarded ports, the egress broker's policy).
type HostReach struct {
	// Allowed says the connection reaches the host (or its network).
	Allowed bool
	// Path is the way it goes, or would: "host" (the host's own network),
	// "forward" (a forwarded loopback port), "proxy" (the egress broker),
	// "port rule" (the weaker sandbox's Landlock TCP rule), "none".
	Path string
	// By is the rule that decided ("open_port 8080", an allow-list entry,
	// the network's source), "" when none names it.
	By string
	// Reason is one sentence.
	Reason string
	// Loopback says the target is the agent's own loopback, which reaches
	// the host's only on forwarded ports: the fix forwards the port.
	Loopback bool
	// Fix, when not empty, is the backend's own fix (what to connect to
	// instead), which `why` prints as it is.
	Fix string
}

// HostReacher is a Prepared run that can say exactly how it treats a
// connection (the built-in engine); `why --host` falls back to the allow
// list's names for the others.
type HostReacher interface {
	ReachHost(host string, port int) (HostReach, error)
}

// Early is part of a sandbox started before its run is planned (see
// Prestarter): the run takes it over, or Abort ends it.
type Early interface {
	// Abort ends what was started, unless a run took it over.
	Abort()
}

// Prestarter is a Backend that can start part of its sandbox before the
// run is planned, knowing only the network mode (the built-in engine
// forks its init, whose runtime's start then overlaps the planning). The
// Early it returns goes into Options.Early of the same run.
type Prestarter interface {
	Prestart(network posture.NetMode, stdio launch.Stdio) Early
}

// Toolchains is a Backend that grants the trees of the user's programs on
// PATH (the built-in engine; nono has runtime groups of its own):
// SystemCovers says whether its own system paths grant p already.
type Toolchains interface {
	SystemCovers(p string) bool
}

// Options are what a backend is built with (internal/backends.New): each
// backend reads the fields it needs.
type Options struct {
	// Verbose drops nono's -s and makes the built-in engine describe
	// itself; Quiet drops the banner.
	Verbose, Quiet bool
	// TTY says whether stdout is a terminal (sbx exec -t).
	TTY bool
	// NixStore says whether /nix/store exists.
	NixStore bool
	// Home is the user's home and state.
	Home grant.Home
	// LookPath finds a program on the host PATH; Getenv reads the host
	// environment.
	LookPath func(string) (string, error)
	Getenv   func(string) string
	// PolicyFile is the sandbox policy file the network keys came from.
	PolicyFile string
	// SeatbeltRules are nono.json's unsafe_macos_seatbelt_rules.
	SeatbeltRules []string
	// UnixSocketDirBind are nono.json's filesystem.unix_socket_dir_bind
	// directories (checked as writable grants).
	UnixSocketDirBind []string
	// Sbx is agent.toml's [sbx] table and LoopbackEnv its loopback_env.
	SbxInstall, SbxHome string
	SbxVersionCommand   []string
	LoopbackEnv         []string
	// Early is what a Prestarter started for this run, or nil.
	Early Early
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

// Guard are the options of the ledger's protection for a sandboxed run of
// s (see launch.Lifecycle): every backend's run has its ledger watched and
// audited.
func Guard(s spec.Spec) *guard.Options {
	return &guard.Options{Ledger: s.Ledger, Workdir: s.Workdir, QuarantineDir: s.QuarantineDir(), Agent: s.AgentID, TreeFile: s.TreeFile(), RunDir: s.RunDir(), Placeholders: placeholder.Registry{StateRoot: s.StateRoot()}}
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

// StateDirs creates the run's state directories (s.StateDir and the parts
// the agent may write) and the run's private TMPDIR under s.TempDir(),
// which it returns; the caller removes it after the run. An error names
// agent-sandbox's state directory as the cause and what to do
// (StateDirError), never the policy.
func StateDirs(s spec.Spec) (string, error) {
	for _, d := range append([]string{s.StateDir}, s.AgentStateDirs()...) {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", StateDirError(d, err)
		}
	}
	runTmp, err := os.MkdirTemp(s.TempDir(), "run-")
	if err != nil {
		return "", StateDirError(s.TempDir(), err)
	}
	return runTmp, nil
}

// StateDirError says that agent-sandbox's own state directory (dir, under
// $XDG_STATE_HOME/agent-sandbox) could not be created or written, which
// directory refused it, and what to do: it is the host's filesystem, not a
// policy the backend cannot enforce.
func StateDirError(dir string, err error) error {
	blocker := dir
	for {
		if _, serr := os.Lstat(blocker); serr == nil || filepath.Dir(blocker) == blocker {
			break
		}
		blocker = filepath.Dir(blocker)
	}
	cause := err
	if pe, ok := err.(*os.PathError); ok {
		cause = pe.Err
	}
	fix := fmt.Sprintf("make %s writable (chmod u+w %s, or chown it to you)", blocker, blocker)
	if st, serr := os.Stat(blocker); serr == nil && !st.IsDir() {
		fix = fmt.Sprintf("%s is not a directory: move it away", blocker)
	}
	return fmt.Errorf("agent-sandbox's state directory %s cannot be created or written (%v at %s): it holds the run's TMPDIR and records and must be writable by you; %s, or set XDG_STATE_HOME to a directory you own", dir, cause, blocker, fix)
}
