// Package spec holds the backend-independent description of one run: what
// the agent is, which paths it gets and how, its network policy and its
// environment. Package plan builds a Spec from the agent folder and the
// posture; each backend (internal/backend/...) turns a Spec into the
// commands it runs. A Spec holds only what every backend reads; settings
// one backend alone reads are that backend's Options.
package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// Started is a session started with no agent process (agent-sandbox
// start): commands reach it through agent-sandbox exec; it ends on
// agent-sandbox stop or after IdleTimeout with no exec'd process.
type Started struct {
	// ID is the session's id, chosen by the caller.
	ID string
	// IdleTimeout ends the session once no exec'd process has run for
	// that long.
	IdleTimeout time.Duration
	// Ready, when not nil, is called once the session's control socket
	// listens, with the agent's id.
	Ready func(agent string)
	// Ended, when not nil, is told why the session ends ("stop" or
	// "idle") when that is asked, before its end runs.
	Ended func(reason string)
}

// NoMemoryLimit is Spec.MemoryMax for agent.toml's memory_max = "none".
const NoMemoryLimit = -1

// Spec is one run, with every path absolute and canonical.
type Spec struct {
	AgentID string
	// NestedUserns says the agent may create user namespaces of its own
	// (agent.toml nested_userns, --allow-userns); the built-in engine
	// refuses them otherwise.
	NestedUserns bool
	// Started, when not nil, is a session with no agent process
	// (agent-sandbox start): only the namespace view runs one.
	Started *Started
	// TmpSize bounds the private /tmp, /var/tmp and /dev/shm of the
	// built-in engine together (one tmpfs) in bytes (agent.toml
	// tmp_size); 0: a quarter of the machine's memory.
	TmpSize int64
	// MemoryMax bounds the built-in engine's run as a whole in bytes
	// (agent.toml memory_max), through a systemd user scope: 0 is the
	// default (three quarters of the machine's memory, where the user's
	// manager can apply it), NoMemoryLimit no bound. A bound set here
	// that cannot be applied refuses the run.
	MemoryMax int64
	// Credentials are agent.toml's [[credentials]]: keys the built-in
	// engine's broker injects (sources, never values).
	Credentials []Credential
	// ExpectedRefusals are agent.toml's expected_refusals: refusals the
	// built-in engine's broker logs without warning of them.
	ExpectedRefusals []string
	// AgentDir is the agent folder on disk, granted read-only; "" for a
	// built-in folder, which exists only inside the binary.
	AgentDir string
	Workdir  string
	// StateDir is the per-agent state directory. It belongs to
	// agent-sandbox (generated profiles, records); only AgentStateDirs
	// inside it are granted to the agent, so that a running agent cannot
	// tamper with the policy of its next run.
	StateDir string
	// Home is the user's home directory.
	Home string
	// Argv is the agent's command line; Argv[0] is the resolved absolute
	// path when the command was found, else the name as configured.
	Argv []string
	// CommandFound is false when the command is not on PATH.
	CommandFound bool

	// Read is read-only, Write write-only, Allow read-write.
	Read, Write, Allow []string
	// Sockets are the grants of Read, Write and Allow that are Unix
	// sockets (the plan looked each grant up once; a backend says that
	// such a grant reaches a service outside).
	Sockets []string
	// Exec are programs (the agent's command and exec_paths) whose closures
	// a kernel backend grants read and execute.
	Exec []string
	// ExecClosure are the directories (or single files) covering every
	// file Exec needs to start, from pathresolve, checked by plan. It is
	// all a backend grants for the programs: empty means nothing (plan
	// leaves it empty when a program's chain runs through a writable path),
	// and no backend derives directories from Exec itself.
	ExecClosure []string
	// ConfigPaths are the agent's own state paths (also in Allow).
	ConfigPaths []string
	// GitDirs are the linked git directories (also in Allow).
	GitDirs []string
	// Toolchains are the trees of the programs on the user's PATH, for
	// the built-in engine (nono has its own runtime groups): readable and
	// executable, never writable. Checked like read grants.
	Toolchains []Toolchain
	// Caches are the toolchains' caches the built-in engine layers
	// (private, writable) over the host's.
	Caches []Cache
	// UserConfig are the configuration files everyday tools read (git's:
	// the user's, and for nono the system file /etc/gitconfig, which the
	// built-in engine's view shows with the rest of /etc), readable only,
	// for the built-in engine and nono.
	UserConfig []string
	// Links are symlinks in the user's home whose targets are granted
	// (a ~/.gitconfig kept in a dotfiles repository): the built-in
	// engine's view shows the link where the tools look for it.
	Links []Link
	// Missing are granted paths that do not exist (backends skip them).
	Missing []string
	// Ledger are the paths inside the writable grants that make the
	// user's tools, or the agent's next start, run code (git config and
	// hooks, .vscode, .claude settings, the agent's own code-running
	// config...; internal/protect), minus those the user allowed the
	// agent to edit (Ledger.AllowEdit: agent.toml allow_edit and
	// --allow-edit). The built-in engine's view keeps the read-only ones
	// read-only; every engine has them audited (internal/guard).
	Ledger protect.Ledger

	Network posture.Network

	// Worktree is set for a `--worktree` run (internal/worktree): Workdir
	// is then the run's own tree, which the namespace view also shows at
	// Worktree.At.
	Worktree *Worktree

	// EnvPass are the names of host variables passed in; EnvSet are set.
	EnvPass []string
	EnvSet  map[string]string

	GOOS string
}

// Worktree is where a worktree run's tree is shown and what it borrows.
type Worktree struct {
	// Branch is the run's branch.
	Branch string `json:"branch"`
	// At is the project's directory (the workdir the run was started
	// in): the namespace view shows the tree (Spec.Workdir) there too,
	// with every mount below it, and starts the agent there. Engines
	// without mounts run the agent at Spec.Workdir.
	At string `json:"at"`
	// Objects is the project's object store, granted read-only (also in
	// Read): the tree's repository borrows it.
	Objects string `json:"objects"`
	// ObjectsLink is the path the tree's alternates name: on the host a
	// symlink to Objects; the namespace view binds Objects there
	// read-only (the project's own path is covered by the tree).
	ObjectsLink string `json:"objects_link"`
}

// Toolchain is one tree granted for the programs on PATH.
type Toolchain struct {
	// Path is the tree granted (read and execute).
	Path string `json:"path"`
	// Dir is the PATH directory (or link target) it was found from.
	Dir string `json:"dir"`
	// Why says how it was found.
	Why string `json:"why"`
}

// Cache is a toolchain's cache that the built-in engine gives the agent
// as a private, writable layer over the host's (see plan's userCaches).
type Cache struct {
	// Name names it in the agent's state (caches/<Name>).
	Name string `json:"name"`
	// Path is where the tool looks for it, the host's cache there being
	// the layer's read-only base.
	Path string `json:"path"`
	// Env, when set, is the variable that tells the tool where it is
	// (set for the agent to Path, or to Copy).
	Env string `json:"env,omitempty"`
	// Copy, set only for the built-in engine's weaker sandbox (no view,
	// so no layer at Path), is the run's own cache the agent uses
	// instead: in the agent's state, per project, seeded from Path by
	// copies or reflinks (never hard links) before each run, or, for
	// Go's module cache, filled by Go itself from the host's download
	// cache read-only (Source).
	Copy string `json:"copy,omitempty"`
	// Source, when set with Copy, is the host's read-only source the tool
	// fills Copy from itself (Go's module download cache, as a
	// GOPROXY=file:// proxy) instead of a copy of Path.
	Source string `json:"source,omitempty"`
}

// Link is a symlink at Path (not itself granted) to a granted Target.
type Link struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// Command is one step of a run, in execution order.
type Command struct {
	// Argv is the program and its arguments.
	Argv []string
	// Env lists variables set for this command as KEY=VALUE, beyond the
	// environment the backend passes.
	Env []string
	// InProcess marks the agent start under the built-in landlock engine:
	// agent-sandbox itself confines and starts Argv, so pasting it in a
	// shell would run it unconfined.
	InProcess bool
	// Note is a one-line comment printed above the command by --dry-run.
	Note string
}

// Writable lists every path the agent can write: the workdir and the
// read-write and write-only grants.
func (s Spec) Writable() []string {
	return append(append(append([]string{}, s.Allow...), s.Write...), s.Workdir)
}

// MiseCacheDir is the agent's private mise cache (MISE_CACHE_DIR).
func (s Spec) MiseCacheDir() string { return filepath.Join(s.StateDir, "mise-cache") }

// QuarantineDir is where the audit keeps the files it restored or moved
// aside (StateRoot/quarantine), outside every grant.
func (s Spec) QuarantineDir() string { return filepath.Join(s.StateRoot(), "quarantine") }

// TreeFile is where the scan after a run keeps the workdir's tree for the
// next run in it (StateRoot/scan/<hash of the workdir>), outside every
// grant.
func (s Spec) TreeFile() string {
	sum := sha256.Sum256([]byte(s.Workdir))
	return filepath.Join(s.StateRoot(), "scan", hex.EncodeToString(sum[:16])+".tree")
}

// RunDir holds the markers of the runs going on in the workdir
// (StateRoot/runs/<hash of the workdir>), outside every grant: one left by
// a killed agent-sandbox is audited by the next start (guard.Recover).
func (s Spec) RunDir() string {
	sum := sha256.Sum256([]byte(s.Workdir))
	return filepath.Join(s.StateRoot(), "runs", hex.EncodeToString(sum[:16]))
}

// StateRoot is agent-sandbox's own state directory
// ($XDG_STATE_HOME/agent-sandbox, grant.Home.StateRoot), which holds the
// agents' state dirs (StateRoot/agents/<id>) and is outside every grant.
func (s Spec) StateRoot() string { return filepath.Dir(filepath.Dir(s.StateDir)) }

// AuditDir is the egress broker's audit directory, StateRoot/audit
// (AuditDirName).
func (s Spec) AuditDir() string { return filepath.Join(s.StateRoot(), AuditDirName) }

// AuditDirName is the audit directory's name in the state root.
const AuditDirName = "audit"

// TempDir is the agent's private TMPDIR.
func (s Spec) TempDir() string { return filepath.Join(s.StateDir, "tmp") }

// AgentStateDirs are the parts of the state dir the agent may write. The
// backend creates them (mode 0700) before the agent starts.
func (s Spec) AgentStateDirs() []string { return []string{s.MiseCacheDir(), s.TempDir()} }

// ConfigIsFile says whether a config path that does not exist yet is
// created as a file rather than a directory: its name, without a leading
// dot, has an extension (~/.claude.json is a file, ~/.claude and
// ~/.pi/agent are directories).
func ConfigIsFile(p string) bool {
	return filepath.Ext(strings.TrimPrefix(filepath.Base(p), ".")) != ""
}

// ConfigToCreate lists the config paths missing from the host that a run
// creates before the agent starts, so that an agent's first run can save
// its settings (see ConfigIsFile for which become files).
func (s Spec) ConfigToCreate() []string {
	var out []string
	for _, m := range s.Missing {
		for _, c := range s.ConfigPaths {
			if m == c {
				out = append(out, c)
			}
		}
	}
	return out
}

// Credential is a key the broker injects (agent.toml [[credentials]]):
// the agent gets a phantom in Env and BaseURLEnv pointing at the route;
// the real value, read from Source when the run starts, stays outside.
type Credential struct {
	Env, BaseURLEnv, Upstream, Header, Source string
	// BaseURLArgs go right after the command, "{base_url}" replaced by
	// the route's URL.
	BaseURLArgs []string
	// Intercept: the broker answers a CONNECT to Upstream's host with
	// the run's CA (a client that takes no base URL).
	Intercept bool
	// Git: the agent's git reaches Upstream through the route.
	Git bool
}

// Route is the credential's route name on the broker's port: its
// variable, lower case.
func (c Credential) Route() string { return strings.ToLower(c.Env) }

// UpstreamFor is where the route forwards, without a trailing slash: the
// caller's own endpoint when lookup gives BaseURLEnv an http(s) URL with a
// host (a proxy or stand-in the caller uses), else Upstream.
func (c Credential) UpstreamFor(lookup func(string) (string, bool)) string {
	up := c.Upstream
	if v, ok := lookup(c.BaseURLEnv); ok && c.BaseURLEnv != "" {
		if u, err := url.Parse(v); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
			up = v
		}
	}
	return strings.TrimSuffix(up, "/")
}

// FormatSize writes a size in binary units, as agent.toml's tmp_size and
// memory_max take them.
func FormatSize(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.size {
			if n%u.size == 0 {
				return strconv.FormatInt(n/u.size, 10) + u.unit
			}
			return strconv.FormatFloat(float64(n)/float64(u.size), 'f', 1, 64) + u.unit
		}
	}
	return strconv.FormatInt(n, 10)
}
