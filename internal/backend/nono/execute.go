package nono

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/atomicfile"
	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/session"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
	"github.com/agent-sandbox/agent-sandbox/internal/uniq"
)

// nonoEnv are host variables nono itself needs to find the same directories
// agent-sandbox uses (its protected state root $XDG_STATE_HOME/nono, its
// config, its audit log). They are passed to nono even when the agent does
// not get them: the profile's allow_vars keeps them from the agent.
var nonoEnv = []string{"HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"}

// Execute creates the agent's state dirs and the run's private TMPDIR,
// writes the profile, starts nono in the workdir and waits for it.
// It returns nono's exit status, which is the agent's own (128+N when a
// signal N killed it); signals are forwarded by launch.Run. It returns 125
// when it cannot start nono (nono missing, the profile cannot be written)
// and 127 when the agent's command was not found.
func Execute(p Prepared, s spec.Spec, stdio launch.Stdio) int {
	fail := func(err error) int {
		diag.Errorf(stdio.Err, "%v", err)
		return launch.ExitRefused
	}
	if p.Refusal != "" {
		return fail(errors.New(p.Refusal))
	}
	if len(p.Steps) != 1 || len(p.Steps[0].Argv) == 0 {
		return fail(errors.New("internal error: the nono plan has no launch command"))
	}
	step := p.Steps[0]
	if err := checkBinary(step.Argv[0]); err != nil {
		return fail(err)
	}
	if !s.CommandFound {
		cmd := "?"
		if len(s.Argv) > 0 {
			cmd = s.Argv[0]
		}
		diag.Errorf(stdio.Err, "%s: command %q not found on PATH; install it, or set command to its absolute path", agentToml(s), cmd)
		return launch.ExitNotFound
	}
	// TMPDIR is private to this run, as under the built-in engine: a fresh
	// directory under the agent's tmp/, granted instead of tmp/ itself and
	// removed afterwards. nono sets no TMPDIR, and its system_write_linux
	// group makes /tmp write-only (a file can be created there but not
	// opened read-write, so mkstemp, mktemp and Python's tempfile fail).
	runTmp, err := backend.StateDirs(s)
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(runTmp)
	if err := backend.CreateConfig(s); err != nil {
		return fail(err)
	}
	p.Profile = WithRunTemp(p.Profile, s.TempDir(), runTmp)
	if err := WriteProfile(p); err != nil {
		return fail(err)
	}
	if p.Verbose {
		for _, n := range p.Notes {
			diag.Notef(stdio.Err, "%s", n)
		}
	}
	// The ledger (git's config and hooks, the agent's own code-running
	// config...) is not read-only under nono; it is watched and audited.
	// nono starts under agent-sandbox's own seccomp layer (Filter).
	// Standard streams that are files reach nono as pipes (pipedFiles).
	return launch.Lifecycle{Argv: step.Argv, Env: append(Environ(p, s, os.Environ()), "TMPDIR="+runTmp), Dir: s.Workdir, Stdio: pipedFiles(stdio), Start: withRelayDelay(starter(Filter(p, s))), Guard: backend.Guard(s),
		Session: backend.SessionHook(s, "nono", session.Handlers{Unsupported: map[string]string{
			"exec":  backend.NonoExecRefusal,
			"allow": backend.NoAllow("nono alone", "its network policy is fixed when nono starts"),
		}}, stdio)}.Execute()
}

// WithRunTemp returns the profile with the agent's tmp directory (granted
// read-write by Prepare) replaced by the run's own directory inside it.
func WithRunTemp(prof Profile, tmp, runTmp string) Profile {
	canon, runCanon := grant.Canonical(tmp), grant.Canonical(runTmp)
	allow := make([]string, 0, len(prof.Filesystem.Allow))
	for _, d := range prof.Filesystem.Allow {
		if d == tmp || d == canon {
			d = runCanon
		}
		allow = append(allow, d)
	}
	prof.Filesystem.Allow = uniq.Sorted(allow)
	return prof
}

// checkBinary says whether path is an executable nono.
func checkBinary(path string) error {
	hint := "install nono (https://nono.sh, or `nix run .#agent-sandbox`, which brings it), or use --sandbox-backend landlock"
	if !filepath.IsAbs(path) {
		return fmt.Errorf("nono is not installed (%q not found on PATH); %s", path, hint)
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("nono is not installed (%s: %v); %s", path, errors.Unwrap(err), hint)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("nono at %s is not an executable file; %s", path, hint)
	}
	return nil
}

// WriteProfile writes p.Profile to p.ProfilePath atomically: a temporary
// file in the same directory, mode 0600, renamed over the old profile (so a
// symlink planted at that path is replaced, never followed). The directory
// is created with mode 0700, and tightened to 0700 if it exists.
func WriteProfile(p Prepared) error {
	if !filepath.IsAbs(p.ProfilePath) || !strings.HasSuffix(p.ProfilePath, ".json") {
		return fmt.Errorf("internal error: the nono profile path %q must be absolute and end in .json", p.ProfilePath)
	}
	data, err := Marshal(p.Profile)
	if err != nil {
		return fmt.Errorf("cannot render the nono profile: %v", err)
	}
	dir := filepath.Dir(p.ProfilePath)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return backend.StateDirError(dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("cannot restrict the state dir %s to mode 0700: %v", dir, err)
	}
	if err := atomicfile.Write(p.ProfilePath, data, 0o600); err != nil {
		return fmt.Errorf("cannot write the nono profile: %v", err)
	}
	return nil
}

// Environ is the environment nono is started with: the host variables in
// host (KEY=VALUE) named by s.EnvPass, plus the few nono itself needs to
// find its own directories, without any NONO_* variable; then the
// variables of the launch step (NONO_NO_UPDATE_CHECK=1, MISE_CACHE_DIR, and
// the set_env entries that cannot go to the profile's set_vars). What the
// agent finally sees is further cut by the profile's allow_vars.
func Environ(p Prepared, s spec.Spec, host []string) []string {
	pass := map[string]bool{}
	for _, n := range s.EnvPass {
		pass[n] = true
	}
	for _, n := range nonoEnv {
		pass[n] = true
	}
	var set []string
	if len(p.Steps) > 0 {
		set = p.Steps[0].Env
	}
	overridden := map[string]bool{}
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		overridden[k] = true
	}
	env := []string{}
	seen := map[string]bool{}
	for _, kv := range host {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || strings.HasPrefix(k, "NONO_") || !pass[k] || overridden[k] || seen[k] {
			continue
		}
		seen[k] = true
		env = append(env, kv)
	}
	return append(env, set...)
}
