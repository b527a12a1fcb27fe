package landlock

import (
	"fmt"

	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// EngineNonoInView is nono run inside the namespace view: the view's
// namespaces, read-only protections, private /tmp and caches, egress
// broker and credential routes, and inside it nono's own Landlock and
// seccomp policy over the agent, a second layer. internal/backends makes
// it (an Inner) for a run whose backend resolves to nono on a host where
// the view can be built.
const EngineNonoInView = "nono-in-view"

// Inner is a second sandbox the view starts the agent under (nono): the
// view starts Inner's command in place of the agent's.
type Inner struct {
	// Name names it in messages ("nono").
	Name string
	// Exec are the paths the view shows read-only and executable for it
	// (its program, symlinks resolved).
	Exec []string
	// Shown is the dry run's command inside the view, for the agent's
	// argv.
	Shown func(argv []string) spec.Command
	// Comments are the dry run's lines about it.
	Comments []string
	// JSON are its keys of the --dry-run --json plan ("profile",
	// "profile_path").
	JSON map[string]any
	// Stdio, when not nil, is what the agent's standard streams become
	// before the view starts (nono: a file reaches it as a relayed pipe),
	// and whether any changed.
	Stdio func(launch.Stdio) (launch.Stdio, bool)
	// Start is called when the view is about to start the agent (run:
	// what the view gives it) and returns the command to start instead.
	Start func(run InnerRun) (InnerStart, error)
}

// InnerRun is what the view gives the agent when it starts: the inner
// sandbox's policy must grant it again.
type InnerRun struct {
	// Argv and Env are the agent's command and environment.
	Argv, Env []string
	// Allow are the directories private to the run and writable: its
	// TMPDIR, /tmp, /var/tmp, /dev/shm and the caches' layers.
	Allow []string
	// Read are the toolchains' trees, read-only and executable.
	Read []string
	// ReadFiles are files shown read-only for this run only (the CA
	// bundle of credential interception, pi's extension).
	ReadFiles []string
}

// InnerStart is the inner sandbox's command.
type InnerStart struct {
	// Argv and Env replace the agent's.
	Argv, Env []string
	// ReadOnly and Writable are paths the view adds to its policy for
	// it.
	ReadOnly, Writable []string
	// Cleanup runs after the run (or when it does not start).
	Cleanup func()
}

// innerRun is what the view gives the agent of s, started with argv and
// env: the run's TMPDIR runTmp, the private /tmp, /var/tmp and /dev/shm,
// the caches' layers, the toolchains, and the run's own files readFiles.
func innerRun(s spec.Spec, argv, env []string, runTmp string, readFiles []string) InnerRun {
	r := InnerRun{Argv: argv, Env: env, Allow: []string{runTmp, "/tmp", "/var/tmp", "/dev/shm"}, ReadFiles: readFiles}
	for _, c := range s.Caches {
		r.Allow = append(r.Allow, c.Path)
	}
	for _, t := range s.Toolchains {
		r.Read = append(r.Read, t.Path)
	}
	if s.Worktree != nil {
		// The project's objects, where the view binds them for the
		// tree's alternates (nono's own grant of their real path finds
		// the tree's objects there: the tree is shown over the project).
		r.Read = append(r.Read, s.Worktree.ObjectsLink)
	}
	return r
}

// exec is i.Exec; none for a nil *Inner.
func (i *Inner) exec() []string {
	if i == nil {
		return nil
	}
	return i.Exec
}

// engine is the engine of a view with i inside: EngineView without one.
func (i *Inner) engine() string {
	if i == nil {
		return EngineView
	}
	return EngineNonoInView
}

// networkProfileRefusal refuses a nono network profile, which only nono's
// own proxy knows.
func (b Backend) networkProfileRefusal(name string) error {
	if b.Inner != nil {
		return fmt.Errorf("%s: network.network_profile %q cannot be enforced: nono runs inside agent-sandbox's namespace view, whose egress broker carries out the allow list (nono's own proxy has no route out of it); list the hosts in network.allow_domain instead", b.PolicyFile, name)
	}
	return fmt.Errorf("%s: network.network_profile %q cannot be enforced by the landlock backend (only nono knows network profiles); install nono or remove it", b.PolicyFile, name)
}
