package nono

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
	"github.com/agent-sandbox/agent-sandbox/internal/uniq"
)

// nono inside the namespace view (engine nono-in-view): the built-in
// engine builds its view (namespaces, read-only protections, private /tmp
// and caches, the egress broker and its credential routes) and starts
// nono in it instead of the agent; nono confines the agent with its own
// Landlock and seccomp policy, a second layer. Each run gets its own
// directory in the state root (RunsDir), outside every grant: the profile
// (read-only in the view) and nono's own state (XDG_STATE_HOME and
// XDG_CACHE_HOME for nono, writable in the view, and outside the agent's
// nono policy). It is removed after the run, so that nothing the agent
// can reach decides its next run's nono policy.

// RunsDirName is the directory of the state root that holds each
// nono-in-view run's own directory.
const RunsDirName = "nono-runs"

// RunsDir is <state root>/nono-runs.
func RunsDir(s spec.Spec) string { return filepath.Join(s.StateRoot(), RunsDirName) }

// InViewProfilePath is what the dry run shows as the profile's path: the
// run's own directory is made at start.
func InViewProfilePath(s spec.Spec) string {
	return filepath.Join(RunsDir(s), "run-*", ProfileName)
}

// InViewRun is what the view gives the agent, which nono's profile must
// grant again: nono's policy knows only the run's grants.
type InViewRun struct {
	// Argv and Env are the agent's command and environment as the view
	// would start it (the broker's variables and arguments included).
	Argv, Env []string
	// Allow are directories the view makes private and writable for the
	// run: the run's TMPDIR, /tmp, /var/tmp, /dev/shm, the toolchains'
	// cache layers.
	Allow []string
	// Read are trees the view shows read-only and executable (the
	// toolchains on PATH).
	Read []string
	// ReadFiles are files the view shows read-only for this run (the
	// run's CA bundle, pi's extension).
	ReadFiles []string
}

// InViewStart is nono's launch inside the view.
type InViewStart struct {
	// Argv and Env start nono, which starts the agent.
	Argv, Env []string
	// Profile is the profile as written.
	Profile Profile
	// ReadOnly are the paths the view must show read-only (the run's
	// directory, holding the profile); Writable those it must show
	// writable (nono's own state for the run).
	ReadOnly, Writable []string
	// Cleanup removes the run's directory.
	Cleanup func()
}

// StartInView writes the run's profile (p.Profile with what the view
// gives the agent granted again, and the environment's names as
// allow_vars) into a fresh directory of RunsDir, and returns nono's
// launch.
func StartInView(p Prepared, r InViewRun) (InViewStart, error) {
	s := p.Spec
	root := RunsDir(s)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return InViewStart{}, fmt.Errorf("creating %s: %v", root, err)
	}
	dir, err := os.MkdirTemp(root, "run-")
	if err != nil {
		return InViewStart{}, fmt.Errorf("creating the nono run directory in %s: %v", root, err)
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	state, cache := filepath.Join(dir, "state"), filepath.Join(dir, "cache")
	for _, d := range []string{state, cache} {
		if err := os.Mkdir(d, 0o700); err != nil {
			cleanup()
			return InViewStart{}, fmt.Errorf("creating %s: %v", d, err)
		}
	}
	prof := InViewProfile(p.Profile, r, dir)
	env, setVars := inViewEnv(r.Env, state, cache)
	names := make([]string, 0, len(env))
	for _, kv := range r.Env {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "NONO_") {
			names = append(names, k)
		}
	}
	prof.Environment = Environment{AllowVars: uniq.Sorted(names), SetVars: setVars}
	path := filepath.Join(dir, ProfileName)
	if err := WriteProfile(Prepared{Profile: prof, ProfilePath: path}); err != nil {
		cleanup()
		return InViewStart{}, err
	}
	argv := InViewArgv(p, path, r.Argv)
	return InViewStart{Argv: argv, Env: env, Profile: prof, ReadOnly: []string{dir}, Writable: []string{state, cache}, Cleanup: cleanup}, nil
}

// InViewProfile is prof with what the view gives the agent (r) granted
// again, but for a directory that holds dir (the run's directory: nono
// refuses a grant above its own state root, which lies there; a home
// under /tmp keeps /tmp write-only, nono's own default).
func InViewProfile(prof Profile, r InViewRun, dir string) Profile {
	fs := prof.Filesystem
	// The paths are the view's, as it shows them (nono resolves them
	// inside the view, where they exist).
	allow := slices.DeleteFunc(slices.Clone(r.Allow), func(p string) bool { return grant.Within(dir, p) })
	fs.Allow = uniq.Sorted(append(slices.Clone(fs.Allow), allow...))
	fs.Read = minus(uniq.Sorted(append(slices.Clone(fs.Read), r.Read...)), fs.Allow)
	fs.ReadFile = minus(uniq.Sorted(append(slices.Clone(fs.ReadFile), r.ReadFiles...)), fs.AllowFile)
	prof.Filesystem = fs
	return prof
}

// inViewEnv is nono's environment inside the view: the agent's, with
// nono's own state and cache pointed at the run's directory. The
// agent's own values of those variables (or their absence) are given
// back to it through set_vars.
func inViewEnv(env []string, state, cache string) ([]string, map[string]string) {
	own := map[string]string{"XDG_STATE_HOME": state, "XDG_CACHE_HOME": cache}
	var out []string
	set := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "NONO_") {
			continue
		}
		if _, ok := own[k]; ok {
			set[k] = v
			continue
		}
		out = append(out, kv)
	}
	for _, k := range []string{"XDG_STATE_HOME", "XDG_CACHE_HOME"} {
		out = append(out, k+"="+own[k])
	}
	out = append(out, "NONO_NO_UPDATE_CHECK=1")
	if len(set) == 0 {
		set = nil
	}
	return out, set
}

func minus(list, drop []string) []string {
	var out []string
	for _, p := range list {
		if !slices.Contains(drop, p) {
			out = append(out, p)
		}
	}
	return out
}

// InViewArgv is nono's command line inside the view for the agent's argv,
// with the profile at profile: `nono [-s] run --profile <profile>
// --workdir <dir> --allow-cwd -- <argv>` (no --memory: the view's
// systemd user scope bounds the run's memory).
func InViewArgv(p Prepared, profile string, argv []string) []string {
	out := []string{p.Steps[0].Argv[0]}
	if !p.Verbose {
		out = append(out, "-s")
	}
	out = append(out, "run", "--profile", profile, "--workdir", p.Spec.Workdir, "--allow-cwd", "--")
	return append(out, argv...)
}
