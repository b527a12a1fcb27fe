// Package nono is the nono backend (https://nono.sh), one of the three
// backend.Backend implementations (Backend, in backend.go): it owns
// everything agent-sandbox knows about nono. It turns a run spec into a nono profile
// (JSON valid for nono 0.74-0.78), refuses up front what nono would refuse
// at start (so that agent-sandbox exits 125 itself instead of nono's
// ambiguous exit 1), writes the profile to the per-agent state directory and
// runs `nono [-s] run --profile <abs.json> --workdir <dir> --allow-cwd --
// <agent>` with a cleaned environment.
//
// The profile holds only the run's grants; nono merges its conservative
// default groups (system paths, credential denies, temp dirs) implicitly.
//
// Decisions, in one place:
//
//   - Prepare is pure apart from reading the filesystem (existence, file or
//     directory, symlinks): it writes nothing, so --dry-run writes nothing
//     either. Execute writes the profile just before starting nono.
//     WriteProfile is exported for a caller that wants a dry run to leave a
//     pasteable profile behind (inside the state dir only).
//   - Missing paths are left out of the profile (nono would skip them with a
//     warning that -s hides) and listed in Prepared.Notes, printed under
//     --verbose. The state directory is the exception: Execute creates it.
//   - linux.sandbox_policy is left unset (nono's "auto"): "landlock" drops
//     nono's seccomp network baseline, and "auto" does not degrade silently
//     on old kernels, it enforces the network with seccomp instead.
//   - set_env values from agent.toml go to environment.set_vars, so they
//     reach the agent only and never configure nono itself; PATH (reserved
//     by nono) and values containing "$" (nono would expand them) go
//     through nono's own environment and allow_vars instead.
//   - unsafe_macos_seatbelt_rules are kept when the spec is for macOS and
//     dropped on Linux, with a note.
package nono

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
	"github.com/agent-sandbox/agent-sandbox/internal/scope"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// SchemaURL is the $schema written into generated profiles (the $id of
// nono's profile schema).
const SchemaURL = "https://nono.sh/schemas/nono-profile.schema.json"

// ProfileName is the file name of the generated profile inside the
// per-agent state directory.
const ProfileName = "nono-profile.json"

// MiseCacheName is the private mise cache directory inside the per-agent
// state directory (MISE_CACHE_DIR).
const MiseCacheName = "mise-cache"

// ProfilePath is where the profile for a run is written:
// <state>/agents/<id>/nono-profile.json.
func ProfilePath(s spec.Spec) string { return filepath.Join(s.StateDir, ProfileName) }

// MiseCacheDir is the run's MISE_CACHE_DIR: <state>/agents/<id>/mise-cache.
func MiseCacheDir(s spec.Spec) string { return filepath.Join(s.StateDir, MiseCacheName) }

// Options are the host facts and flags the nono backend needs.
type Options struct {
	// Path is the nono binary (absolute when found on PATH).
	Path string
	// Verbose drops nono's -s so that nono prints its capabilities banner,
	// and makes Execute print the Notes.
	Verbose bool
	// NixStore says whether /nix/store exists (then nono's nix_runtime
	// group is included).
	NixStore bool
	// Home locates the protected paths (nono's state roots, its credential
	// denies) for the defensive re-check of every profile path. When
	// Home.Dir is empty it is derived from the spec (Spec.Home, and the
	// XDG state home that Spec.StateDir lies in).
	Home grant.Home
	// SeatbeltRules are the policy's raw macOS Seatbelt rules
	// (unsafe_macos_seatbelt_rules), kept only when the spec is for macOS.
	SeatbeltRules []string
	// UnixSocketDirBind are the policy's unix_socket_dir_bind grants,
	// absolute and checked.
	UnixSocketDirBind []string
	// InView says nono runs inside the built-in engine's namespace view
	// (engine nono-in-view, see InView): the profile leaves the network
	// to the view, and the launch is made at start (StartInView).
	InView bool
}

// Prepared is the nono side of a plan: what --dry-run prints and what
// Execute runs.
type Prepared struct {
	// Profile is the generated profile, written to ProfilePath by Execute.
	Profile Profile
	// ProfilePath is absolute and ends in .json (nono reads anything else
	// as a profile name or a registry pack).
	ProfilePath string
	// Steps is the one nono launch: argv, and the variables set for nono
	// beyond the host variables Environ passes.
	Steps []spec.Command
	// Warnings are extra warning lines (without the prefix): on Linux,
	// that unix_socket_dir_bind leans on nono's raceable pathname
	// mediation.
	Warnings []string
	// Unprotected says which protected paths nono cannot keep read-only
	// (protect.Unenforced), for --dry-run and doctor; "" when none.
	Unprotected string
	// Notes are informational lines (without a prefix) for --verbose: paths
	// left out because they do not exist, grants narrowed, keys dropped on
	// this platform. Execute prints them, prefixed "agent-sandbox: ", when
	// Verbose is set; a dry run leaves them to its caller.
	Notes []string
	// Refusal, when not empty, is why a real run must not start (exit 125):
	// a nono binary that was not found, or a memory_max nono cannot apply
	// from this process's cgroup.
	Refusal string
	// Verbose is Options.Verbose.
	Verbose bool
	// Spec is the run the profile is for.
	Spec spec.Spec
}

// delegated is scope.Delegated (a variable for the tests): whether nono's
// --memory can make its cgroup from this process's.
var delegated = scope.Delegated

// Prepare builds the profile and the launch for a spec, and refuses (with
// an error naming the entry, and the file it came from where known) what
// nono would refuse at start: grants in or above nono's protected state
// roots, grants containing or inside the credential paths nono always
// denies, unknown network_profile names, a command on nono's
// dangerous_commands lists, and NONO_* variables. It writes nothing.
func Prepare(s spec.Spec, o Options) (Prepared, error) {
	b := newBuilder(s, o)
	prof, err := b.build()
	if err != nil {
		return Prepared{}, err
	}
	p := Prepared{
		Profile:     prof,
		ProfilePath: ProfilePath(s),
		Steps:       []spec.Command{command(s, o.Path, o.Verbose, b.viaEnv)},
		Notes:       b.notes,
		Verbose:     o.Verbose,
		Spec:        s,
	}
	if prof.Linux != nil && prof.Linux.AfUnixMediation == "pathname" && !o.InView {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s: filesystem.unix_socket_dir_bind: the agent may create Unix sockets, so agent-sandbox's seccomp layer cannot refuse socket(AF_UNIX) and only nono's pathname mediation keeps host sockets (the Docker daemon's, the session bus, ssh-agent) out; it checks a path and then lets the kernel resolve it again, so an agent that swaps a symlink in %s between the two reaches any socket on the host (measured with nono 0.78.0); use --sandbox-backend landlock, where host sockets are not in the sandbox", sandboxFile(s), strings.Join(prof.Filesystem.UnixSocketDirBind, ", ")))
	}
	p.Unprotected = protect.Unenforced("nono", protect.NonoCannot, s.Ledger)
	if s.MemoryMax > 0 && !o.InView {
		// nono fails closed without its cgroup, but with exit 1, which
		// cannot be told from the agent's: refused here with 125.
		if err := delegated(); err != nil {
			advice := "remove the key"
			if s.GOOS == "linux" {
				advice = "run from a desktop session's terminal, use --sandbox-backend landlock (a systemd user scope), or remove the key"
			}
			p.Refusal = fmt.Sprintf("%s: memory_max = %q cannot be applied under nono (--memory): %v; %s", agentToml(s), spec.FormatSize(s.MemoryMax), err, advice)
		}
	}
	if !filepath.IsAbs(o.Path) {
		p.Refusal = fmt.Sprintf("nono is not installed (%q not found on PATH); install nono (https://nono.sh, or `nix run .#agent-sandbox`, which brings it), or use --sandbox-backend landlock", o.Path)
	}
	return p, nil
}

// command is the nono launch: `nono [-s] run --profile <abs.json> --workdir
// <dir> --allow-cwd [--memory <bytes>] -- <argv>`. -s is a global flag and
// goes before `run`. --memory is agent.toml's memory_max (nono's own
// cgroup, a hard cap: past it nono kills the agent's whole process tree).
// --no-diagnostics is not passed: -s already turns nono's diagnostic footer
// off, and under --verbose the footer is wanted.
func command(s spec.Spec, nonoPath string, verbose bool, viaEnv map[string]string) spec.Command {
	argv := []string{nonoPath}
	if !verbose {
		argv = append(argv, "-s")
	}
	argv = append(argv, "run", "--profile", ProfilePath(s), "--workdir", s.Workdir, "--allow-cwd")
	if s.MemoryMax > 0 {
		argv = append(argv, "--memory", strconv.FormatInt(s.MemoryMax, 10))
	}
	argv = append(argv, "--")
	argv = append(argv, s.Argv...)
	env := []string{"NONO_NO_UPDATE_CHECK=1", "MISE_CACHE_DIR=" + MiseCacheDir(s)}
	for _, k := range sortedKeys(viaEnv) {
		env = append(env, k+"="+viaEnv[k])
	}
	return spec.Command{
		Argv: argv,
		Env:  env,
		Note: "agent-sandbox first writes the profile to " + ProfilePath(s) + " (a dry run does not; --dry-run --json shows it, with the agent's tmp/ where a run grants its own fresh tmp/run-* and sets TMPDIR to it), then starts nono in the workdir with only the pass-list variables (plus HOME and XDG_*_HOME, for nono) of your environment and no NONO_* variable",
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// agentToml names the agent's agent.toml in messages.
func agentToml(s spec.Spec) string {
	if s.AgentDir == "" {
		return "builtin:" + s.AgentID + "/agent.toml"
	}
	return filepath.Join(s.AgentDir, "agent.toml")
}

// sandboxFile names the agent's sandbox/nono.json in messages.
func sandboxFile(s spec.Spec) string {
	if s.AgentDir == "" {
		return "builtin:" + s.AgentID + "/sandbox/nono.json"
	}
	return filepath.Join(s.AgentDir, "sandbox", "nono.json")
}

// homeFor returns o.Home, or one derived from the spec.
func homeFor(s spec.Spec, o Options) grant.Home {
	h := o.Home
	if h.Dir == "" {
		h.Dir = s.Home
		h.XDGStateHome = filepath.Join(s.Home, ".local", "state")
		// StateDir is <XDG_STATE_HOME>/agent-sandbox/agents/<id>.
		suffix := string(filepath.Separator) + filepath.Join("agent-sandbox", "agents", s.AgentID)
		if strings.HasSuffix(s.StateDir, suffix) {
			h.XDGStateHome = strings.TrimSuffix(s.StateDir, suffix)
		}
		h.XDGConfig = filepath.Join(s.Home, ".config")
	}
	if h.GOOS == "" {
		h.GOOS = s.GOOS
	}
	return h
}
