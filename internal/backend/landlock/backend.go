package landlock

import (
	"fmt"
	"os"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/engine"
	ll "github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// Backend is the built-in landlock backend.Backend.
type Backend struct {
	// NixStore says whether /nix/store exists (then nono's nix_runtime
	// paths are readable).
	NixStore bool
	// Verbose makes Execute describe how the policy is enforced.
	Verbose bool
	// Quiet drops the banner (--quiet).
	Quiet bool
	// PolicyFile is the sandbox policy file the network keys came from,
	// named in refusals.
	PolicyFile string
	// UnixSocketDirs are nono.json's filesystem.unix_socket_dir_bind
	// directories (checked as writable grants): read-write in the view,
	// so the agent can bind and connect to sockets there.
	UnixSocketDirs []string
	// ABI reports the kernel's Landlock ABI; nil is ll.ABI.
	ABI func() (int, error)
	// View reports whether this host is expected to let agent-sandbox
	// build a namespace view, and why not; nil is view.Expected.
	View func() (bool, string)
	// Weaker says the user accepted the weaker sandbox where no view can
	// be built (WeakerSandboxEnv); nil is WeakerSandboxAllowed.
	Weaker func() bool
	// Early is the view's init started before planning ([Prestart]),
	// or nil: Execute takes it over when it fits the run.
	Early *Early
	// Inner, when set, is a second sandbox the view starts the agent
	// under (engine EngineNonoInView); the host must allow a view.
	Inner *Inner
}

// Prepared is a run under the built-in engine: the policy it enforces and
// the in-process start.
type Prepared struct {
	// Spec is the run.
	Spec spec.Spec
	// Policy is what the engine enforces (PolicyFor), before the per-run
	// TMPDIR and the agent's own terminal are added at start.
	Policy ll.Policy
	// Verbose is Backend.Verbose; Quiet is Backend.Quiet.
	Verbose, Quiet bool
	// Engine is EngineView, or EngineWeaker where this host allows no
	// view and the user accepted the weaker sandbox.
	Engine string
	// Warnings are the kernel's shortfalls (KernelWarnings).
	Warnings []string
	// Refusal, when not empty, is why a real run must not start.
	Refusal string
	// Net is how the agent gets its network (NetFor).
	Net Net
	// Early is Backend.Early.
	Early *Early
	// Inner is Backend.Inner.
	Inner *Inner
}

// The engines of the built-in backend.
const (
	// EngineView is the namespace view with Landlock, seccomp and
	// no_new_privs inside it.
	EngineView = "view"
	// EngineWeaker is Landlock, seccomp and no_new_privs without a view.
	EngineWeaker = "landlock-only"
)

// PrintedPolicy is the policy as the JSON plan prints it (key "landlock").
type PrintedPolicy struct {
	Engine    string   `json:"engine"`
	ReadExec  []string `json:"read_exec"`
	ReadOnly  []string `json:"read_only"`
	ReadWrite []string `json:"read_write"`
	WriteOnly []string `json:"write_only"`
	Network   string   `json:"network"`
	// Net is how the network policy is carried out: the broker's port,
	// the allow list it serves, the forwarded ports.
	Net Net `json:"net"`
	// Toolchains are the trees granted for the programs on PATH, and why.
	Toolchains []spec.Toolchain `json:"toolchains"`
	// Caches are the toolchains' caches the view layers privately over
	// the host's.
	Caches []spec.Cache `json:"caches"`
	// Create are the config paths a run creates before the agent starts.
	Create []string `json:"create"`
	// Limits are the resource limits the agent gets: "processes",
	// "open_files", and "memory" (bytes, the run as a whole) where a
	// systemd user scope will bound it.
	Limits map[string]uint64 `json:"limits"`
	// Protected are the ledger's entries (internal/protect): the
	// read-only ones kept read-only by the view (those missing created
	// empty for the run), every one watched and audited.
	Protected []protect.Entry `json:"protected"`
	// AllowEdit are the protected names the agent may edit this run.
	AllowEdit []string `json:"allow_edit"`
}

// Prestart starts the view's init for a run with the network mode mode
// (backend.Prestarter; see the package function Prestart).
func (b Backend) Prestart(mode posture.NetMode, stdio launch.Stdio) backend.Early {
	if e := Prestart(mode, stdio); e != nil {
		return e
	}
	return nil
}

// SystemCovers reports whether the engine's own system paths grant p
// (backend.Toolchains).
func (Backend) SystemCovers(p string) bool { return SystemCovers(p) }

// Prepare refuses what the engine cannot enforce (a nono network profile;
// open_port 0; a kernel without Landlock; without a view, a listen_port)
// and builds the policy with PolicyFor and the network with NetFor.
func (b Backend) Prepare(s spec.Spec) (backend.Prepared, error) {
	if s.Network.Profile != "" {
		return nil, b.networkProfileRefusal(s.Network.Profile)
	}
	netPlan, err := NetFor(s.Network, b.PolicyFile)
	if err != nil {
		return nil, err
	}
	self, err := backend.Self()
	if err != nil {
		return nil, err
	}
	if len(b.UnixSocketDirs) > 0 {
		s.Allow = append(append([]string{}, s.Allow...), b.UnixSocketDirs...)
	}
	p := &Prepared{Spec: s, Policy: PolicyFor(s, b.NixStore, self), Verbose: b.Verbose, Quiet: b.Quiet, Net: netPlan, Early: b.Early, Inner: b.Inner}
	p.Policy.ReadExec = append(p.Policy.ReadExec, b.Inner.exec()...)
	abiOf := b.ABI
	if abiOf == nil {
		abiOf = ll.ABI
	}
	abi, abiErr := abiOf()
	expected, why := viewExpectedOr(b.View)
	if abiErr != nil && !expected {
		// Without a view, Landlock is the sandbox: refused.
		p.Refusal = fmt.Sprintf("the landlock backend cannot run here: %v", abiErr)
	}
	weaker := WeakerSandboxAllowed
	if b.Weaker != nil {
		weaker = b.Weaker
	}
	// nono inside the view has no weaker sandbox under it: without a
	// view internal/backends chooses another engine before this.
	view := b.Inner.engine()
	switch {
	case expected:
		p.Engine = view
		p.Warnings = ViewWarnings(p.Policy, abi)
		if abiErr != nil {
			// One warning, which says the rest too.
			p.Warnings = []string{NoLandlockWarning(abiErr, p.Policy)}
			p.Refusal = noLandlockRefusal(s, b.PolicyFile)
			if b.Inner != nil {
				// nono's own policy is Landlock: it cannot start.
				p.Refusal = fmt.Sprintf("%s cannot run on this kernel, which has no Landlock (%v): run the namespace view alone with --sandbox-backend landlock, which warns what Landlock would add", b.Inner.Name, abiErr)
			}
		}
	case b.Inner == nil && weaker():
		p.Engine = EngineWeaker
		narrowed := s
		narrowed.Toolchains = narrowForWeaker(s.Toolchains, s.Home)
		// No overlay without the view: the run's own copies instead.
		narrowed.Caches = weakerCaches(s)
		p.Spec, p.Policy = narrowed, PolicyFor(narrowed, b.NixStore, self)
		p.Policy.ReadWrite, p.Policy.ReadOnly = weakerCacheGrants(narrowed.Caches, p.Policy.ReadWrite, p.Policy.ReadOnly)
		p.Warnings = append([]string{weakerWarning(why)}, KernelWarnings(p.Policy, abi)...)
		if netPlan.Mode == posture.NetAllowlist {
			p.Warnings = append(p.Warnings, weakerAllowlistWarning)
		}
		if len(netPlan.Listen) > 0 && p.Refusal == "" {
			p.Refusal = weakerListenRefusal
		}
		if ro := s.Ledger.ReadOnly(); len(ro) > 0 {
			p.Warnings = append(p.Warnings, weakerProtectedWarning(ro))
		}
	default:
		p.Engine = view
		if p.Refusal == "" {
			p.Refusal = noViewRefusal(why)
		}
	}
	inView := p.Engine != EngineWeaker
	if s.Ledger.Problem != "" && inView && p.Refusal == "" {
		p.Refusal = s.Ledger.Problem
	}
	if inView && p.Refusal == "" {
		p.Refusal = privateRefusal(s)
	}
	if p.Refusal == "" {
		p.Refusal = memoryRefusal(s)
	}
	return p, nil
}

// NoLandlockWarning is the one warning of a run in the namespace view on a
// kernel without Landlock (why says why there is none), for the policy p:
// what Landlock would add (engine.WithoutLandlock), and with an open
// network the abstract sockets it would scope.
func NoLandlockWarning(why error, p ll.Policy) string {
	w := fmt.Sprintf("%v: %s", why, engine.WithoutLandlock)
	if len(ViewWarnings(p, 0)) > 0 {
		// An open network shares the host's network namespace.
		w += "; with the network open, the host's abstract Unix sockets (X11, D-Bus) are reachable, as below Landlock ABI 6"
	}
	return w
}

// noLandlockRefusal refuses, for the view without Landlock, what only
// Landlock enforces: a write-only grant (the view binds it read-write,
// and only Landlock keeps it unreadable).
func noLandlockRefusal(s spec.Spec, policyFile string) string {
	if len(s.Write) == 0 {
		return ""
	}
	if policyFile == "" {
		policyFile = "the grants"
	}
	return fmt.Sprintf("%s: filesystem.write (write-only) %s cannot be enforced without Landlock (this kernel has none): the namespace view would bind it read-write, readable by the agent; make it a read-write grant (filesystem.allow) if the agent may read it, or run on Linux 5.13 or later with Landlock", policyFile, strings.Join(s.Write, ", "))
}

// viewPrivate are the paths the view has its own of, empty at each start:
// the host's are not what the agent sees there.
var viewPrivate = []string{"/tmp", "/var/tmp", "/var/lock", "/dev/shm", "/dev", "/proc"}

// privateRefusal refuses a workdir or grant that is one of the view's
// private paths: the agent would see, and write into, the sandbox's own,
// which vanishes with the run (its work lost without a word). A path
// below one is fine: it is bound over the private mount.
func privateRefusal(s spec.Spec) string {
	check := func(what, p string) string {
		for _, v := range viewPrivate {
			if p == v {
				return fmt.Sprintf("%s %s is the sandbox's own private %s inside the namespace view (empty at each start, gone at the end): the agent's work there would be lost; run from a project directory (for example mkdir %s/work && cd %s/work), or grant a directory below it", what, p, v, v, v)
			}
		}
		return ""
	}
	if r := check("the working directory", s.Workdir); r != "" {
		return r
	}
	for _, list := range [][]string{s.Read, s.Allow, s.Write} {
		for _, g := range list {
			if r := check("the grant", g); r != "" {
				return r
			}
		}
	}
	return ""
}

// Describe is the in-process start and the policy: the plan's "landlock".
func (p *Prepared) Describe() backend.Description {
	pol := p.Policy
	// The plan's header names the engine (internal/engine) and what it
	// lacks.
	var comments []string
	if p.Engine == EngineNonoInView && p.Inner != nil {
		comments = append(comments, p.Inner.Comments...)
	}
	for _, g := range p.Spec.Sockets {
		comments = append(comments, fmt.Sprintf("unix socket reachable (granted by path): %s", g))
	}
	for _, t := range p.Spec.Toolchains {
		comments = append(comments, fmt.Sprintf("toolchain %s: read and execute (%s)", t.Path, t.Why))
	}
	for _, c := range p.Spec.UserConfig {
		comments = append(comments, fmt.Sprintf("git configuration %s: read-only", c))
	}
	for _, c := range p.Spec.Caches {
		comments = append(comments, cacheComment(p.Spec, c))
	}
	create := p.Spec.ConfigToCreate()
	for _, c := range create {
		comments = append(comments, fmt.Sprintf("created before the run (missing): %s", c))
	}
	if p.Engine == EngineWeaker {
		comments = append(comments, weakerComments(p.Spec.Home)...)
	}
	comments = append(comments, p.Net.Comments()...)
	comments = append(comments, credentialComments(p.Spec, p.Net)...)
	comments = append(comments, protectedComments(p.Spec)...)
	comments = append(comments, limitComment(p.Spec))
	if size := TmpSize(p.Spec); size > 0 {
		from := "a quarter of this machine's memory; tmp_size in agent.toml sets it"
		if p.Spec.TmpSize > 0 {
			from = "tmp_size"
		}
		comments = append(comments, fmt.Sprintf("private /tmp, /var/tmp and /dev/shm: one tmpfs, up to %s for the three together (%s); every bind outside /dev is nodev", spec.FormatSize(size), from))
	}
	if os.Geteuid() == 0 {
		comments = append(comments, "root caller: the agent is uid 0 inside (no capabilities); every file of /etc only root may read is hidden, not only the secrets every run hides")
	}
	if p.Spec.NestedUserns {
		comments = append(comments, "kernel surface: nested user namespaces ALLOWED (nested_userns / --allow-userns); socket families but INET, INET6, UNIX and NETLINK_ROUTE (AF_VSOCK, AF_PACKET, AF_ALG...), netlink other than NETLINK_ROUTE and io_uring refused")
	} else {
		comments = append(comments, "kernel surface refused: nested user namespaces (nested_userns = true or --allow-userns allows them), socket families but INET, INET6, UNIX and NETLINK_ROUTE (AF_VSOCK, AF_PACKET, AF_ALG...), netlink other than NETLINK_ROUTE, io_uring")
	}
	toolchains := p.Spec.Toolchains
	if toolchains == nil {
		toolchains = []spec.Toolchain{}
	}
	if create == nil {
		create = []string{}
	}
	limits := map[string]uint64{"processes": defaultMaxProcesses, "open_files": defaultMaxOpenFiles}
	if m := appliedMemoryMax(p.Spec); m > 0 {
		limits["memory"] = uint64(m)
	}
	cmd := spec.Command{
		Argv: p.Spec.Argv, Env: withEnv(Env(p.Spec, func(string) (string, bool) { return "", false }), p.Net.proxyEnvShown()), InProcess: true,
		Note: "confined in-process by agent-sandbox's built-in landlock engine; pasting this line would run it unconfined",
	}
	if p.Inner != nil {
		inner := p.Inner.Shown(p.Spec.Argv)
		cmd.Argv = inner.Argv
		cmd.Env = append(cmd.Env, inner.Env...)
		cmd.Note = "started by agent-sandbox's built-in engine inside its namespace view, in place of the agent: " + inner.Note + "; pasting this line would run nono without the view"
	}
	d := backend.Description{
		Comments: comments,
		Commands: []spec.Command{cmd},
		Warnings: p.Warnings,
		Refusal:  p.Refusal,
		Engine:   string(p.engineID()),
		JSON: map[string]any{"landlock": &PrintedPolicy{
			Engine: p.Engine, Toolchains: toolchains, Create: create, Net: p.Net, Caches: nonNil(p.Spec.Caches),
			Limits:    limits,
			Protected: nonNil(p.Spec.Ledger.Entries), AllowEdit: nonNil(p.Spec.Ledger.AllowEdit),
			ReadExec: pol.ReadExec, ReadOnly: pol.ReadOnly, ReadWrite: pol.ReadWrite, WriteOnly: pol.WriteOnly, Network: string(p.Net.Mode),
		}},
	}
	if p.Inner != nil {
		for k, v := range p.Inner.JSON {
			d.JSON[k] = v
		}
	}
	if p.Engine == EngineView || p.Engine == EngineNonoInView {
		// The view's kernel shortfalls repeat on every run on this host.
		d.Repeating = p.Warnings
		d.Protection.ReadOnly = true
	} else {
		d.Protection.Why = "the weaker sandbox (no namespace view) cannot keep paths inside a writable grant read-only"
	}
	return d
}

// engineID is the internal/engine name of p's engine.
func (p *Prepared) engineID() engine.ID {
	switch p.Engine {
	case EngineWeaker:
		return engine.Weaker
	case EngineNonoInView:
		return engine.NonoInView
	}
	return engine.View
}

// protectedComments are the --dry-run lines on the ledger: each entry
// and how the run keeps it, what allow_edit lifted, and what is not
// covered.
func protectedComments(s spec.Spec) []string {
	var out []string
	for _, e := range s.Ledger.Entries {
		var line string
		switch e.Guard {
		case protect.ReadOnly:
			line = fmt.Sprintf("protected (read-only, bound again when the host replaces it; %s): %s", e.Why, e.Path)
			if e.Link != "" {
				line = fmt.Sprintf("protected symlink (the link itself, bound onto itself: neither removed nor replaced; put back after the run if it changed; %s): %s", e.Why, e.Path)
			}
			if e.Missing {
				kind := "an empty file"
				if e.Dir {
					kind = "an empty directory"
				} else if strings.HasSuffix(e.Path, ".json") {
					kind = "a file holding {}"
				} else if e.Name == protect.GitConfig && e.Format == protect.FormatOpaque {
					kind = `a file holding "." (the git dir itself, as git reads a missing one)`
				}
				line += fmt.Sprintf(" (missing: %s is created for the run so that the agent cannot create it, and removed after)", kind)
			}
		case protect.Audited:
			line = fmt.Sprintf("audited (the agent writes it; its keys that run code are restored after the run if changed: %s): %s", strings.Join(e.Keys, ", "), e.Path)
		}
		out = append(out, line)
	}
	if len(s.Ledger.AllowEdit) > 0 {
		out = append(out, fmt.Sprintf("editable by allow_edit/--allow-edit: %s", strings.Join(s.Ledger.AllowEdit, ", ")))
	}
	if len(s.Ledger.Entries) > 0 {
		out = append(out, "not protected: a .git the agent creates elsewhere in the project (git init in a subdirectory) and hooks or config it writes there; agent-sandbox scans the working directory after the run and warns, naming each one")
	}
	return out
}

// joinProtected lists the ledger entries for a message.
func joinProtected(ps []protect.Entry) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Path
	}
	return strings.Join(names, ", ")
}

// nonNil is s, or an empty slice for nil (the JSON plan has no nulls).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func viewExpectedOr(f func() (bool, string)) (bool, string) {
	if f != nil {
		return f()
	}
	return viewExpected()
}

// Execute runs the agent (see the package function Execute).
func (p *Prepared) Execute(stdio launch.Stdio) int {
	if p.Refusal != "" {
		p.Early.Abort()
		diag.Errorf(stdio.Err, "%s", p.Refusal)
		return launch.ExitRefused
	}
	early := p.Early
	if p.Inner != nil && p.Inner.Stdio != nil {
		if s, changed := p.Inner.Stdio(stdio); changed {
			// The init started early holds the caller's streams as
			// they were: one is started with the new ones instead.
			early.Abort()
			early, stdio = nil, s
		}
	}
	return execute(p.Spec, p.Policy, p.Net, stdio, p.Verbose, p.Engine == EngineWeaker, !p.Verbose && !p.Quiet, early, p.Inner)
}
