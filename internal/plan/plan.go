// Package plan turns an agent folder and a resolved posture into the plan of
// one run: the grants (expanded, canonical and checked) as a spec.Spec, then
// the backend's prepared run (backend.Backend.Prepare, called once here),
// whose description completes the plan: the commands in execution order,
// warnings, refusal and the backend's own JSON keys.
//
// Build is a pure function of its Input apart from reading the filesystem to
// make paths canonical; it starts nothing and writes nothing. The same Plan is
// executed (Plan.Prepared.Execute) and printed by --dry-run (text or JSON).
//
// buildSpec reads as named steps run in order on a specBuilder (stateDirs,
// workdir, repository, ..., ledgerAndMissing, environment, openPorts); the
// first that refuses ends it. The text form leads with the first look
// (summary.go: Plan.Facts, Plan.Summary); a run refused before a plan exists
// still gets a JSON plan (Refused).
package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/backends"
	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/engine"
	"github.com/agent-sandbox/agent-sandbox/internal/gitdir"
	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/optfile"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
	"github.com/agent-sandbox/agent-sandbox/internal/sandboxfile"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
	"github.com/agent-sandbox/agent-sandbox/internal/uniq"
	"github.com/agent-sandbox/agent-sandbox/pathresolve"
)

// BaseEnv are the host variables every sandboxed agent receives.
var BaseEnv = []string{
	"HOME", "PATH", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "TERM_PROGRAM",
	"LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "LC_COLLATE", "LC_NUMERIC",
	"LC_TIME", "LC_MONETARY", "TZ", "NO_COLOR",
}

// Input is everything Build needs.
type Input struct {
	Folder  *agent.Folder
	Posture posture.Posture
	Home    grant.Home
	// Workdir is the run's working directory, absolute.
	Workdir string
	// Args are the agent arguments from the command line.
	Args []string
	// Getenv reads the host environment.
	Getenv func(string) string
	// LookPath finds a program on the host PATH.
	LookPath func(string) (string, error)
	// Protected are further directories no writable grant may overlap
	// (agent lookup directories such as /etc/agent-sandbox/agents).
	Protected []string
	// NixStore says whether /nix/store exists.
	NixStore bool
	// Verbose drops nono's -s.
	Verbose bool
	// Quiet drops the backend's banner.
	Quiet bool
	// TTY says whether stdout is a terminal (sbx exec -t).
	TTY bool
	// RunRead and RunWrite are the per-run grants (--read: read-only,
	// --write: read-write), absolute or starting with ~/; checked like
	// the folder's grants.
	RunRead, RunWrite []string
	// AllowEdit are --allow-edit names (checked by internal/cli): with
	// the folder's allow_edit, the protected paths the agent may edit.
	AllowEdit []string
	// AllowUserns is --allow-userns: the agent may create user
	// namespaces of its own this run (as agent.toml nested_userns).
	AllowUserns bool
	// Worktree is set for a --worktree run (Workdir is then its tree).
	Worktree *WorktreeInput
	// Started, when not nil, makes the run a session with no agent
	// process (agent-sandbox start).
	Started *spec.Started
	// Early is what the backend started before planning (Prestart), or
	// nil; the backend takes it over. The caller ends it (Early.Abort)
	// after the run.
	Early backend.Early
}

// Plan is one run, ready to execute or print.
type Plan struct {
	Agent       string      `json:"agent"`
	AgentFolder string      `json:"agent_folder"`
	AgentSource string      `json:"agent_source"`
	Workdir     string      `json:"workdir"`
	Sandboxed   bool        `json:"sandboxed"`
	Backend     *string     `json:"backend"`
	Reason      string      `json:"backend_reason"`
	Fallback    *string     `json:"backend_fallback"`
	Network     Network     `json:"network"`
	Filesystem  Filesystem  `json:"filesystem"`
	Environment Environment `json:"environment"`
	StateDir    *string     `json:"state_dir"`
	Warnings    []string    `json:"warnings"`
	Commands    [][]string  `json:"commands"`
	// Profile, ProfilePath, Seccomp and Landlock are the backend's own
	// keys (Description.JSON: nono fills the first three, Seccomp on
	// Linux only, the built-in engine the last); null for a backend that
	// does not fill them.
	Profile     any     `json:"profile"`
	ProfilePath any     `json:"profile_path"`
	Seccomp     any     `json:"seccomp"`
	Refusal     *string `json:"refusal"`
	Landlock    any     `json:"landlock"`
	// Engine is the engine that will run and what it does and does not
	// give (internal/engine); null when unsandboxed.
	Engine *Engine `json:"engine"`
	// RunGrants are the per-run grants of --read and --write, canonical
	// (also in Filesystem.Read and Filesystem.Allow).
	RunGrants RunGrants `json:"run_grants"`
	// Repeating are the lines of Warnings that every run on this host
	// repeats and that say nothing about this run's safety (the nono
	// fallback notice, the kernel shortfalls of the namespace view):
	// --quiet drops them. Loud warnings (an opt-out, --no-sandbox,
	// --network open, the weaker sandbox) are never among them.
	Repeating []string `json:"-"`
	// Protection says which paths inside the writable grants, that the
	// user's tools run code from, the backend keeps read-only; null when
	// unsandboxed.
	Protection *Protection `json:"protection"`
	// Worktree is the --worktree run's tree, branch and mounts; null
	// without --worktree.
	Worktree *Worktree `json:"worktree"`
	// Spec is the backend-neutral run.
	Spec    spec.Spec       `json:"-"`
	Posture posture.Posture `json:"-"`
	// Prepared is the backend's prepared run (backend.Unsandboxed when not
	// sandboxed); Description is what it said of itself.
	Prepared    backend.Prepared    `json:"-"`
	Description backend.Description `json:"-"`
}

// Engine is the plan's engine as printed: internal/engine's description.
type Engine struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	How  string `json:"how"`
	// Lacks are the protections it does not give in full, and why.
	Lacks []string `json:"lacks"`
}

// EngineID is the engine a sandboxed plan runs in: the one its backend
// described, else the backend's only engine.
func (p *Plan) EngineID() engine.ID {
	if p.Description.Engine != "" {
		return engine.ID(p.Description.Engine)
	}
	if p.Backend == nil {
		return ""
	}
	switch posture.Backend(*p.Backend) {
	case posture.Nono:
		return engine.Nono
	case posture.Sbx:
		return engine.Sbx
	}
	return engine.View
}

// EngineInfo is the description of the plan's engine (false when
// unsandboxed).
func (p *Plan) EngineInfo() (engine.Engine, bool) {
	if !p.Sandboxed {
		return engine.Engine{}, false
	}
	return engine.Get(p.EngineID())
}

// RunGrants are the grants of the command line's --read and --write.
type RunGrants struct {
	Read  []string `json:"read"`
	Write []string `json:"write"`
}

// Protection is the plan's ledger (internal/protect) and what the run does
// with it.
type Protection struct {
	// Enforced says whether the backend keeps the read-only entries
	// read-only, binding one again when the host replaces it (the
	// built-in engine's view); false under nono, sbx and the weaker
	// sandbox, which cannot.
	Enforced bool `json:"enforced"`
	// Watched says the entries are watched while the agent runs, a change
	// to what runs code undone at once (Linux: inotify).
	Watched bool `json:"watched"`
	// Audited says the entries are audited after the run (every
	// sandboxed run): code-running settings restored, hooks quarantined,
	// other changes named.
	Audited bool `json:"audited"`
	// Paths are the ledger's entries.
	Paths []protect.Entry `json:"paths"`
	// AllowEdit are the names allow_edit and --allow-edit lifted.
	AllowEdit []string `json:"allow_edit"`
	// Unenforced says why the backend cannot keep them read-only, when it
	// cannot.
	Unenforced *string `json:"unenforced"`
}

// protection describes what the prepared run does with the ledger.
func protection(s spec.Spec, d backend.Description) *Protection {
	pr := &Protection{Paths: s.Ledger.Entries, AllowEdit: s.Ledger.AllowEdit, Enforced: d.Protection.ReadOnly,
		Watched: runtime.GOOS == "linux", Audited: true}
	if why := d.Protection.Why; !pr.Enforced && len(s.Ledger.ReadOnly()) > 0 {
		if why == "" {
			why = "this backend does not keep them read-only"
		}
		pr.Unenforced = &why
	}
	if pr.Paths == nil {
		pr.Paths = []protect.Entry{}
	}
	if pr.AllowEdit == nil {
		pr.AllowEdit = []string{}
	}
	return pr
}

// Network is the plan's network policy as printed.
type Network struct {
	Mode           string   `json:"mode"`
	AllowDomains   []string `json:"allow_domains"`
	OpenPorts      []int    `json:"open_ports"`
	ListenPorts    []int    `json:"listen_ports"`
	NetworkProfile *string  `json:"network_profile"`
	Source         string   `json:"source"`
}

// Filesystem lists the run's grants as absolute paths.
type Filesystem struct {
	Read  []string `json:"read"`
	Write []string `json:"write"`
	Allow []string `json:"allow"`
	Exec  []string `json:"exec"`
	// ExecClosure covers every file Exec needs to start (read + execute).
	ExecClosure []string `json:"exec_closure"`
	Missing     []string `json:"missing"`
}

// Environment says which host variables pass and which are set.
type Environment struct {
	Pass []string          `json:"pass"`
	Set  map[string]string `json:"set"`
}

// Build makes the plan. Its errors name the file, key and value at fault.
func Build(in Input) (*Plan, error) {
	f, pst := in.Folder, in.Posture
	p := &Plan{
		Agent:       f.ID,
		AgentFolder: f.Dir,
		AgentSource: string(f.Source),
		Workdir:     in.Workdir,
		Sandboxed:   pst.Sandboxed,
		Reason:      string(pst.Reason),
		Posture:     pst,
		Commands:    [][]string{},
		RunGrants:   RunGrants{Read: []string{}, Write: []string{}},
	}
	p.Warnings = append(append([]string{}, pst.Warnings...), f.Warnings()...)
	if pst.Fallback != "" {
		p.Fallback = &pst.Fallback
		p.Warnings = append(p.Warnings, pst.Fallback)
	}

	cmdName := f.Config.ResolveCommand(in.Getenv)
	argv0, found := cmdName, false
	if path, err := in.LookPath(cmdName); err == nil {
		if abs, err := filepath.Abs(path); err == nil {
			argv0, found = abs, true
		}
	}
	if !found {
		if pst.Backend == posture.Sbx {
			// The agent runs in the guest; only the version pin needs it here.
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: command %q not found on this host's PATH: the in-guest install cannot be pinned to a host version", f.ID, cmdName))
		} else {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: command %q not found on PATH; the run would exit 127", f.ID, cmdName))
		}
	}
	argv := append(append([]string{argv0}, f.Config.Args...), in.Args...)

	if !pst.Sandboxed {
		if len(in.RunRead)+len(in.RunWrite) > 0 {
			p.Warnings = append(p.Warnings, "--read and --write have no effect without the sandbox: "+f.ID+" runs with your full user rights")
		}
		p.Network = Network{Mode: "unrestricted", AllowDomains: []string{}, OpenPorts: []int{}, ListenPorts: []int{}, Source: "no sandbox"}
		p.Filesystem = Filesystem{Read: []string{}, Write: []string{}, Allow: []string{}, Exec: []string{}, ExecClosure: []string{}, Missing: []string{}}
		p.Environment = Environment{Pass: []string{"*"}, Set: map[string]string{}}
		p.Spec = spec.Spec{AgentID: f.ID, Workdir: in.Workdir, Argv: argv, CommandFound: found}
		p.finish(backend.Unsandboxed{Argv: argv, Workdir: in.Workdir})
		p.Worktree = worktreeStep(in.Worktree, false, "")
		return p, nil
	}

	s, warns, b, err := buildSpec(in, argv, found, &p.RunGrants)
	if err != nil {
		return nil, err
	}
	p.Warnings = append(p.Warnings, warns...)
	p.Spec = s
	// The programs that confine the agent must not lie where the agent can
	// write: it would replace them and run unconfined next time.
	self, err := backend.Self()
	if err != nil {
		return nil, err
	}
	confiners := map[string]string{"agent-sandbox": self}
	switch pst.Backend {
	case posture.Nono, posture.Sbx:
		confiners[string(pst.Backend)] = lookOr(in.LookPath, string(pst.Backend))
	}
	for name, path := range confiners {
		if err := outsideWritable(name, path, s); err != nil {
			return nil, err
		}
	}
	name := string(pst.Backend)
	p.Backend = &name
	p.StateDir = &s.StateDir
	p.Network = Network{
		Mode: string(s.Network.Mode), AllowDomains: s.Network.AllowDomains,
		OpenPorts: s.Network.OpenPorts, ListenPorts: s.Network.ListenPorts, Source: s.Network.Source,
	}
	if s.Network.Profile != "" {
		p.Network.NetworkProfile = &s.Network.Profile
	}
	p.Filesystem = Filesystem{Read: s.Read, Write: s.Write, Allow: s.Allow, Exec: s.Exec, ExecClosure: s.ExecClosure, Missing: s.Missing}
	p.Environment = Environment{Pass: s.EnvPass, Set: s.EnvSet}

	prepared, err := b.Prepare(s)
	if err != nil {
		return nil, err
	}
	p.finish(prepared)
	p.Protection = protection(s, p.Description)
	if e, ok := p.EngineInfo(); ok {
		p.Engine = &Engine{ID: string(e.ID), Name: e.Name, How: e.How, Lacks: nonNilStrings(e.Lacks())}
	}
	if err := worktreeEngineRefusal(in.Worktree, p.EngineID()); err != nil {
		return nil, err
	}
	p.Worktree = worktreeStep(in.Worktree, true, p.EngineID())
	return p, nil
}

// options are the backend's options for a run (the nono.json keys only
// one backend reads are added by buildSpec).
func options(in Input, pst posture.Posture) backend.Options {
	o := backend.Options{
		Verbose: in.Verbose, Quiet: in.Quiet, TTY: in.TTY, NixStore: in.NixStore, Home: in.Home,
		LookPath: in.LookPath, Getenv: in.Getenv, Early: in.Early,
	}
	if pst.Policy != nil {
		o.PolicyFile = pst.Policy.Path
	}
	if f := in.Folder; f != nil {
		o.SbxInstall, o.SbxVersionCommand, o.SbxHome = f.Config.Sbx.Install, f.Config.Sbx.VersionCommand, f.Config.Sbx.Home
		o.LoopbackEnv = f.Config.LoopbackEnv
	}
	return o
}

// Prestart starts, for a real run with posture pst, what its backend can
// start before the run is planned (backend.Prestarter: the built-in
// engine's init), and returns it for Input.Early; nil when the backend
// starts nothing early.
func Prestart(pst posture.Posture, stdio launch.Stdio) backend.Early {
	if !pst.Sandboxed {
		return nil
	}
	if ps, ok := backends.New(pst.Backend, backend.Options{}).(backend.Prestarter); ok {
		return ps.Prestart(pst.Network.Mode, stdio)
	}
	return nil
}

// finish completes the plan from the prepared run's description.
func (p *Plan) finish(prepared backend.Prepared) {
	d := prepared.Describe()
	p.Prepared, p.Description = prepared, d
	p.Profile, p.ProfilePath, p.Seccomp, p.Landlock = d.JSON["profile"], d.JSON["profile_path"], d.JSON["seccomp"], d.JSON["landlock"]
	p.Warnings = append(p.Warnings, d.Warnings...)
	if d.Refusal != "" {
		p.Refusal = &d.Refusal
	}
	if d.Environment != nil {
		p.Environment = Environment{Pass: d.Environment.Pass, Set: d.Environment.Set}
	}
	for _, c := range d.Commands {
		p.Commands = append(p.Commands, c.Argv)
	}
	repeating := map[string]bool{}
	if p.Fallback != nil {
		repeating[*p.Fallback] = true
	}
	for _, w := range d.Repeating {
		repeating[w] = true
	}
	lines := make([]string, len(p.Warnings))
	for i, w := range p.Warnings {
		lines[i] = diag.WarningPrefix + w
		if repeating[w] {
			p.Repeating = append(p.Repeating, lines[i])
		}
	}
	p.Warnings = lines
}

// nonNilStrings is s, or an empty list for nil (the JSON plan has no
// nulls in lists).
func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func lookOr(look func(string) (string, error), name string) string {
	if p, err := look(name); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return name
}

// grantSet accumulates checked, de-duplicated grants.
type grantSet struct {
	checker grant.Checker
	seen    map[string]bool
	missing []string
	sockets []string
}

func (g *grantSet) add(dst *[]string, p string) {
	if g.seen[p] {
		return
	}
	g.seen[p] = true
	*dst = append(*dst, p)
	switch exists, socket := g.checker.Lstat(p); {
	case !exists:
		g.missing = append(g.missing, p)
	case socket:
		g.sockets = append(g.sockets, p)
	}
}

// specBuilder is the state buildSpec's steps share: the run's input, the
// spec being filled, its grants and warnings, and the backend's options.
type specBuilder struct {
	in     Input
	argv   []string
	found  bool
	run    *RunGrants
	f      *agent.Folder
	pst    posture.Posture
	h      grant.Home
	warns  []string
	opts   backend.Options
	s      spec.Spec
	g      *grantSet
	wd     string
	linked *gitdir.Linked
	// repoTop is the top of the repository the workdir is a
	// subdirectory of, when its git dir is granted.
	repoTop string
	b       backend.Backend
}

// buildSpec expands and checks every grant of a sandboxed run, computes
// its ledger, and builds its backend, as named steps run in order; the
// first that refuses ends it.
func buildSpec(in Input, argv []string, found bool, run *RunGrants) (spec.Spec, []string, backend.Backend, error) {
	sb := newSpecBuilder(in, argv, found, run)
	for _, step := range []func(*specBuilder) error{
		(*specBuilder).stateDirs,
		(*specBuilder).workdir,
		(*specBuilder).repository,
		(*specBuilder).linkedGitDirs,
		(*specBuilder).folderGrants,
		(*specBuilder).runGrants,
		(*specBuilder).worktree,
		(*specBuilder).nonoOnlyKeys,
		(*specBuilder).execAndLimits,
		(*specBuilder).userConfiguration,
		(*specBuilder).ledgerAndMissing,
		(*specBuilder).environment,
		(*specBuilder).openPorts,
	} {
		if err := step(sb); err != nil {
			return sb.s, nil, nil, err
		}
	}
	return sb.s, sb.warns, sb.b, nil
}

// newSpecBuilder starts the spec of a run: its fixed fields and empty
// grant lists.
func newSpecBuilder(in Input, argv []string, found bool, run *RunGrants) *specBuilder {
	f, pst, h := in.Folder, in.Posture, in.Home
	sb := &specBuilder{in: in, argv: argv, found: found, run: run, f: f, pst: pst, h: h}
	sb.opts = options(in, pst)
	sb.s = spec.Spec{
		AgentID: f.ID, Workdir: in.Workdir, StateDir: h.AgentStateDir(f.ID), Home: h.Dir,
		Argv: argv, CommandFound: found, Network: pst.Network, GOOS: h.GOOS,
		Read: []string{}, Write: []string{}, Allow: []string{}, Exec: []string{},
		ConfigPaths: []string{}, GitDirs: []string{},
	}
	return sb
}

// stateDirs refuses a state dir that is not a directory and sets up the
// grant checker (the agent folder is protected unless built in).
func (sb *specBuilder) stateDirs() error {
	s, f, h, in := &sb.s, sb.f, sb.h, sb.in
	// The state dir and its parts the agent gets are created when missing;
	// a name there that exists but is not a directory (a dangling symlink, a
	// file) is refused here, by name, rather than failing later or being
	// taken for absent.
	for _, d := range append([]string{h.StateRoot(), s.StateDir}, s.AgentStateDirs()...) {
		if _, err := optfile.Dir(d); err != nil {
			return fmt.Errorf("agent-sandbox's state: %v", err)
		}
	}
	protected := h.Protected(in.Protected...)
	if !f.Builtin() {
		s.AgentDir = f.Dir
		protected = append(protected, f.Dir)
	}
	sb.g = &grantSet{checker: grant.Checker{Home: h, Protected: protected}.Memoize(), seen: map[string]bool{}}
	return nil
}

// workdir grants the workdir and the agent's state dirs writable and the
// agent folder readable, refusing a folder inside the workdir or around
// it.
func (sb *specBuilder) workdir() error {
	s, f, h, g := &sb.s, sb.f, sb.h, sb.g
	wd := grant.Canonical(sb.in.Workdir)
	sb.wd = wd
	if s.AgentDir != "" {
		// The workdir is granted read-write: an agent folder inside it (or
		// holding it) would let the agent rewrite its own policy for the
		// next run. A folder given by path is refused here, not only
		// warned about (a folder found by name there is refused by lookup).
		ad := grant.Canonical(s.AgentDir)
		switch {
		case grant.Within(ad, wd):
			return fmt.Errorf("agent folder %s lies inside the working directory %s, which the sandboxed agent can write: it could rewrite its own policy for the next run; move the folder out of the working directory (e.g. to %s) or run from another directory (--workdir)", ad, wd, filepath.Join(h.ConfigRoot(), "agents", f.ID))
		case grant.Within(wd, ad):
			return fmt.Errorf("the working directory %s lies inside the agent folder %s, which the sandboxed agent would then write: it could rewrite its own policy for the next run; run from a project directory outside the folder (--workdir)", wd, ad)
		}
	}
	if err := g.checker.Check(wd, true); err != nil {
		return fmt.Errorf("working directory %s %s; run agent-sandbox from a project directory or pass --workdir", wd, err)
	}
	s.Workdir = wd
	g.add(&s.Allow, wd)
	for _, d := range s.AgentStateDirs() {
		g.add(&s.Allow, grant.Canonical(d))
	}
	if s.AgentDir != "" {
		if err := g.checker.Check(grant.Canonical(s.AgentDir), false); err != nil {
			return fmt.Errorf("agent folder %s %v; keep agent folders in a directory of their own", s.AgentDir, err)
		}
		g.add(&s.Read, s.AgentDir)
	}
	return nil
}

// repository finds the workdir's linked git dirs and, for a workdir
// inside a repository (a subdirectory of its working tree), grants what
// git inside needs: the working tree (read-only: writes stay in the
// workdir) and its git dir (read-write, under the ledger's protection
// like a workdir's own .git).
func (sb *specBuilder) repository() error {
	s, h, g, wd := &sb.s, sb.h, sb.g, sb.wd
	linked, err := gitdir.Find(wd)
	if err != nil {
		sb.warns = append(sb.warns, err.Error())
	}
	sb.linked = linked
	top := gitdir.Top(wd, grant.Canonical(h.Dir))
	if top == "" {
		return nil
	}
	dotgit := filepath.Join(top, ".git")
	st, _ := os.Lstat(dotgit)
	switch err := g.checker.Check(top, false); {
	case err != nil:
		sb.warns = append(sb.warns, fmt.Sprintf("the working directory lies in the repository %s, which %s; git inside will not find the repository", top, err))
	case st != nil && st.IsDir():
		if err := g.checker.Check(dotgit, true); err != nil {
			sb.warns = append(sb.warns, fmt.Sprintf("the repository's git dir %s %s; git inside will not find the repository", dotgit, err))
			break
		}
		sb.repoTop = top
		g.add(&s.Read, top)
		s.GitDirs = append(s.GitDirs, dotgit)
		g.add(&s.Allow, dotgit)
	default:
		l, err := gitdir.Find(top)
		if err != nil || l == nil {
			if err != nil {
				sb.warns = append(sb.warns, err.Error())
			}
			break
		}
		sb.repoTop, sb.linked = top, l
		g.add(&s.Read, top)
	}
	return nil
}

// linkedGitDirs grants the linked git dirs writable, each that passes the
// checker.
func (sb *specBuilder) linkedGitDirs() error {
	s, g := &sb.s, sb.g
	for _, d := range sb.linked.Dirs() {
		if err := g.checker.Check(d, true); err != nil {
			sb.warns = append(sb.warns, fmt.Sprintf("linked git dir %s %s; not granting it (git commands in the sandbox will fail)", d, err))
			continue
		}
		s.GitDirs = append(s.GitDirs, d)
		g.add(&s.Allow, d)
	}
	return nil
}

// folderGrants resolves and checks the folder's grants: agent.toml's
// config_paths and read_paths, the policy file's filesystem lists.
func (sb *specBuilder) folderGrants() error {
	s, f, pst, g := &sb.s, sb.f, sb.pst, sb.g
	tomlPath := filepath.Join(f.Dir, "agent.toml")
	type list struct {
		file, key string
		paths     []string
		dst       *[]string
		writable  bool
	}
	lists := []list{
		{tomlPath, "config_paths", f.Config.ConfigPaths, &s.Allow, true},
		{tomlPath, "read_paths", f.Config.ReadPaths, &s.Read, false},
	}
	if pf := pst.Policy; pf != nil {
		lists = append(lists,
			list{pf.Path, "filesystem.read", pf.Filesystem.Read, &s.Read, false},
			list{pf.Path, "filesystem.write", pf.Filesystem.Write, &s.Write, true},
			list{pf.Path, "filesystem.allow", pf.Filesystem.Allow, &s.Allow, true},
		)
	}
	for _, l := range lists {
		for i, raw := range l.paths {
			p, err := g.checker.Resolve(raw, l.writable)
			if err != nil {
				return fmt.Errorf("%s: %s[%d]: %v", l.file, l.key, i, err)
			}
			if l.key == "config_paths" {
				s.ConfigPaths = append(s.ConfigPaths, p)
			}
			g.add(l.dst, p)
		}
	}
	return nil
}

// runGrants resolves and checks the per-run --read and --write grants:
// each must exist, and --write makes a path the folder grants read-only
// read-write.
func (sb *specBuilder) runGrants() error {
	s, in, run := &sb.s, sb.in, sb.run
	for _, l := range []struct {
		flag     string
		paths    []string
		dst, run *[]string
		writable bool
	}{{"--read", in.RunRead, &s.Read, &run.Read, false}, {"--write", in.RunWrite, &s.Allow, &run.Write, true}} {
		for _, raw := range l.paths {
			if err := sb.runGrant(l.flag, raw, l.dst, l.run, l.writable); err != nil {
				return err
			}
		}
	}
	return nil
}

// runGrant adds one per-run grant raw of flag to dst and run.
func (sb *specBuilder) runGrant(flag, raw string, dst, run *[]string, writable bool) error {
	g := sb.g
	p, err := g.checker.Resolve(raw, writable)
	if err != nil {
		return fmt.Errorf("%s %v", flag, err)
	}
	exists, socket := g.checker.Lstat(p)
	if !exists {
		return fmt.Errorf("%s %q: %s does not exist (a per-run grant names an existing file or directory)", flag, raw, p)
	}
	if socket && !slices.Contains(g.sockets, p) {
		g.sockets = append(g.sockets, p)
	}
	if !slices.Contains(*run, p) {
		*run = append(*run, p)
	}
	// Not g.add: a path the folder grants read-only must still
	// become read-write under --write.
	if !slices.Contains(*dst, p) {
		*dst = append(*dst, p)
	}
	g.seen[p] = true
	return nil
}

// nonoOnlyKeys applies the policy file's nono-only keys: into the
// backend's options, or, when a nono.json is forced under sbx, dropped
// with a warning (they change the printed network).
func (sb *specBuilder) nonoOnlyKeys() error {
	s, pst, g := &sb.s, sb.pst, sb.g
	pf := pst.Policy
	if pf == nil {
		return nil
	}
	nonoOnly := pst.Backend == posture.Sbx && pf.Kind == sandboxfile.Nono
	drop := func(key string) {
		sb.warns = append(sb.warns, fmt.Sprintf("%s: %s is nono-only: the sbx microVM has no equivalent, so it is dropped (it applies only under --sandbox-backend nono)", pf.Path, key))
	}
	for i, raw := range pf.Filesystem.UnixSocketDirBind {
		if nonoOnly {
			drop("filesystem.unix_socket_dir_bind")
			break
		}
		p, err := g.checker.Resolve(raw, true)
		if err != nil {
			return fmt.Errorf("%s: filesystem.unix_socket_dir_bind[%d]: %v", pf.Path, i, err)
		}
		sb.opts.UnixSocketDirBind = append(sb.opts.UnixSocketDirBind, p)
	}
	if !nonoOnly {
		sb.opts.SeatbeltRules = pf.SeatbeltRules
		return nil
	}
	if len(s.Network.OpenPorts) > 0 {
		drop("network.open_port")
	}
	if len(s.Network.ListenPorts) > 0 {
		drop("network.listen_port")
	}
	if len(pf.SeatbeltRules) > 0 {
		drop("unsafe_macos_seatbelt_rules")
	}
	s.Network.OpenPorts, s.Network.ListenPorts = []int{}, []int{}
	return nil
}

// execAndLimits sets the programs, the size limits, the credentials and
// nested user namespaces, refusing memory_max under sbx.
func (sb *specBuilder) execAndLimits() error {
	s, f, pst, h, in := &sb.s, sb.f, sb.pst, sb.h, sb.in
	if sb.found {
		s.Exec = append(s.Exec, sb.argv[0])
	}
	s.Exec = append(s.Exec, f.Config.ExecPaths...)
	s.TmpSize = f.Config.TmpSizeBytes()
	if s.MemoryMax = f.Config.MemoryMaxBytes(); s.MemoryMax > 0 && pst.Backend == posture.Sbx {
		// sbx sizes a microVM when it creates it (sbx create --memory)
		// and agent-sandbox reuses a sandbox: a bound the folder asks
		// for is refused rather than dropped.
		return fmt.Errorf("%s: memory_max = %q: the sbx backend does not apply it (a microVM's memory is fixed when sbx creates it, and agent-sandbox reuses an existing sandbox); remove the key or use --sandbox-backend landlock or nono", filepath.Join(f.Dir, "agent.toml"), f.Config.MemoryMax)
	}
	s.ExpectedRefusals = f.Config.ExpectedRefusals
	for _, c := range f.Config.Credentials {
		src := c.Source
		if src == "" {
			src = "env:" + c.Env
		}
		s.Credentials = append(s.Credentials, spec.Credential{Env: c.Env, BaseURLEnv: c.BaseURLEnv, Upstream: c.Upstream, Header: c.Header, Source: src, BaseURLArgs: c.BaseURLArgs, Intercept: c.Intercept, Git: c.Git})
	}
	// The built-in engine refuses nested user namespaces, and so does the
	// seccomp layer agent-sandbox puts under nono on Linux.
	refusesUserns := pst.Backend == posture.Landlock || pst.Backend == posture.Nono && h.GOOS == "linux"
	s.Started = in.Started
	if s.NestedUserns = f.Config.NestedUserns || in.AllowUserns; s.NestedUserns && refusesUserns {
		from := "--allow-userns"
		if f.Config.NestedUserns {
			from = filepath.Join(f.Dir, "agent.toml") + ": nested_userns"
		}
		sb.warns = append(sb.warns, fmt.Sprintf("nested user namespaces are allowed (%s): inside one the agent holds every capability, which opens kernel code (nf_tables and other CAP_NET_ADMIN paths) behind many local privilege escalations", from))
	}
	return nil
}

// userConfiguration resolves the programs' closure, builds the backend
// and grants what the user's tools need: the toolchains and caches where
// the backend takes them (backend.Toolchains), git's configuration under
// nono.
func (sb *specBuilder) userConfiguration() error {
	s, pst, h, in, g := &sb.s, sb.pst, sb.h, sb.in, sb.g
	closure, cwarns := execClosure(s.Exec, in.Getenv("PATH"), g.checker, s.Writable())
	s.ExecClosure = closure
	sb.warns = append(sb.warns, cwarns...)
	sb.b = backends.New(pst.Backend, sb.opts)
	if tc, ok := sb.b.(backend.Toolchains); ok {
		var notes []string
		s.Toolchains, s.UserConfig, s.Links, notes = userTools(h, in.Getenv("PATH"), g.checker, s.Writable(), tc.SystemCovers)
		s.Caches = userCaches(h, in.Getenv, in.Getenv("PATH"), g.checker, s.Writable())
		sb.warns = append(sb.warns, notes...)
	}
	if pst.Backend == posture.Nono {
		// git reads its configuration files on every command and stops
		// when one exists but cannot be read, so a nono run without them
		// could not run git at all.
		var notes []string
		s.UserConfig, notes = nonoGitConfig(h, g.checker)
		sb.warns = append(sb.warns, notes...)
	}
	return nil
}

// ledgerAndMissing computes the ledger and lists the grants that do not
// exist (but for the state dirs the backend creates) and the sockets.
func (sb *specBuilder) ledgerAndMissing() error {
	s, g := &sb.s, sb.g
	s.Ledger = ledger(sb.in, *s, sb.linked, sb.repoTop)
	s.Missing = []string{}
	created := map[string]bool{} // the backend creates these
	for _, d := range s.AgentStateDirs() {
		created[grant.Canonical(d)] = true
	}
	for _, m := range g.missing {
		if !created[m] {
			s.Missing = append(s.Missing, m)
		}
	}
	s.Sockets = g.sockets
	return nil
}

// environment sets the variables passed and set.
func (sb *specBuilder) environment() error {
	s, f := &sb.s, sb.f
	s.EnvPass = envPass(f.Config.Env)
	s.EnvSet = map[string]string{}
	for k, v := range f.Config.SetEnv {
		s.EnvSet[k] = v
	}
	return nil
}

// openPorts refuses open_port 0 (any localhost port) outside macOS.
func (sb *specBuilder) openPorts() error {
	s, h := &sb.s, sb.h
	if s.Network.Mode == posture.NetBlocked || s.Network.Mode == posture.NetAllowlist {
		for _, p := range s.Network.OpenPorts {
			if p == 0 && h.GOOS != "darwin" {
				return fmt.Errorf("%s: network.open_port: 0 (any localhost port) is macOS-only; Linux needs explicit ports", sb.pst.Policy.Path)
			}
		}
	}
	return nil
}

// ledger computes the run's ledger (internal/protect) once every writable
// grant is known.
func ledger(in Input, s spec.Spec, linked *gitdir.Linked, repoTop string) protect.Ledger {
	f, h := in.Folder, in.Home
	li := protect.Input{
		Workdir: s.Workdir, RepoTop: repoTop, Writable: s.Writable(), Home: h.Dir,
		AllowEdit:     uniq.Sorted(protect.Normalize(append(append([]string{}, f.Config.AllowEdit...), in.AllowEdit...))),
		UserGitConfig: protect.UserGitConfigs(h.Dir, in.Getenv),
	}
	if linked != nil {
		li.GitDir, li.CommonDir = linked.GitDir, linked.CommonDir
	}
	expand := func(p string) string {
		if e, err := h.Expand(p); err == nil {
			return grant.Canonical(e)
		}
		return ""
	}
	codePaths, codeKeys := f.Config.CodePaths, f.Config.CodeKeys
	// What runs code is a property of the file, whoever's folder grants
	// it: a folder of the user's own that grants ~/.claude gets the
	// built-in claude folder's code_paths and code_keys too.
	bp, bk := builtinCode()
	codePaths = append(append([]string(nil), codePaths...), bp...)
	codeKeys = append(append([]agent.CodeKeys(nil), codeKeys...), bk...)
	for _, p := range codePaths {
		if e := expand(p); e != "" {
			li.AgentCode = append(li.AgentCode, e)
		}
	}
	li.AgentKeys = mergeKeyFiles(codeKeys, expand)
	return protect.Build(li)
}

// builtinCode are the code_paths and code_keys of every built-in agent
// folder (read once).
var builtinCode = sync.OnceValues(func() ([]string, []agent.CodeKeys) {
	var paths []string
	var keys []agent.CodeKeys
	for _, n := range agent.BuiltinNames() {
		f, err := agent.LoadBuiltin(n)
		if err != nil || f.Config == nil {
			continue
		}
		paths = append(paths, f.Config.CodePaths...)
		keys = append(keys, f.Config.CodeKeys...)
	}
	return paths, keys
})

// mergeKeyFiles turns code_keys tables into the ledger's key files, one
// per path: the keys of every table naming a file are audited, and a
// Commands prefix holds only where every table naming it agrees (else
// every value of those keys counts).
func mergeKeyFiles(tables []agent.CodeKeys, expand func(string) string) []protect.KeyFile {
	var out []protect.KeyFile
	at := map[string]int{}
	for _, k := range tables {
		e := expand(k.File)
		if e == "" {
			continue
		}
		i, ok := at[e]
		if !ok {
			at[e] = len(out)
			out = append(out, protect.KeyFile{Path: e, Keys: append([]string(nil), k.Keys...), Commands: k.Commands})
			continue
		}
		out[i].Keys = uniq.Sorted(append(out[i].Keys, k.Keys...))
		if out[i].Commands != k.Commands {
			out[i].Commands = ""
		}
	}
	return out
}

// execClosure resolves every program the agent runs (pathresolve) and
// returns the paths to grant read and execute: each covering directory that
// passes the grant rules, else the individual files in it that do. A
// program whose chain passes through a path the agent can write (writable)
// contributes nothing: the agent could rewrite a shebang or wrapper there to
// name any file, and so widen its next run.
func execClosure(execs []string, path string, c grant.Checker, writable []string) ([]string, []string) {
	var out, warns []string
	add := func(p string) { out = append(out, p) }
	for _, e := range execs {
		r, err := pathresolve.Resolve(e, pathresolve.Options{PATH: path})
		if err != nil {
			warns = append(warns, fmt.Sprintf("%v; it will not be granted", err))
			continue
		}
		if f, w := firstWithin(r.Files, writable); f != "" {
			warns = append(warns, fmt.Sprintf("%s is started through %s, inside %s which the agent can write: nothing is granted from its chain (only the system paths and the grants apply)", e, f, w))
			continue
		}
		for _, m := range r.Missing {
			warns = append(warns, fmt.Sprintf("%s needs %s, which was not found (%s); it may fail to start", m.NeededBy, m.Name, m.Reason))
		}
		for _, d := range append(packageRoots(r.Files), r.Dirs...) {
			if c.Check(d, false) == nil {
				add(d)
				continue
			}
			for _, f := range r.Files {
				if filepath.Dir(f) != d && !grant.Within(f, d) {
					continue
				}
				if err := c.Check(f, false); err != nil {
					warns = append(warns, fmt.Sprintf("%s is needed to start %s but %v; not granted", f, e, err))
					continue
				}
				add(f)
			}
		}
	}
	return uniq.Sorted(out), warns
}

// outsideWritable refuses a confining program (agent-sandbox, nono, sbx)
// that lies, as found or after symlinks, inside a path the agent can write.
func outsideWritable(name, path string, s spec.Spec) error {
	if !filepath.IsAbs(path) {
		return nil // not installed; the backend refuses on its own
	}
	for _, p := range []string{path, grant.Canonical(path)} {
		for _, w := range s.Writable() {
			if grant.Within(p, w) {
				return fmt.Errorf("%s at %s lies inside %s, which the sandboxed agent can write: it could replace the program that confines its next run; install %s outside every granted path", name, p, w, name)
			}
		}
	}
	return nil
}

// firstWithin returns the first file lying inside one of dirs, and that dir.
func firstWithin(files, dirs []string) (string, string) {
	for _, f := range files {
		if len(dirs) == 0 {
			break
		}
		canon := grant.Canonical(f)
		for _, d := range dirs {
			if grant.Within(f, d) || grant.Within(canon, d) {
				return f, d
			}
		}
	}
	return "", ""
}

// packageRoots are the node_modules directories that hold a program's
// files: a Node.js program loads its dependencies from there at run time,
// beyond anything pathresolve can see.
func packageRoots(files []string) []string {
	var out []string
	for _, f := range files {
		if i := strings.Index(f, "/node_modules/"); i >= 0 {
			out = append(out, f[:i+len("/node_modules")])
		}
	}
	return out
}

func envPass(extra []string) []string {
	return uniq.Sorted(append(append([]string{}, BaseEnv...), extra...))
}

// NixStore reports whether /nix/store exists on this host.
func NixStore() bool {
	st, err := os.Stat("/nix/store")
	return err == nil && st.IsDir()
}
