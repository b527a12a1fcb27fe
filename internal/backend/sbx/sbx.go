// Package sbx is the Docker Sandboxes backend, one of the three
// backend.Backend implementations (Backend, in backend.go), with what it
// refuses (a nono network profile, write-only grants). It owns everything that turns
// a run spec into a microVM run: the guest mount set and the sandbox name
// hashed from it, the per-sandbox network policy rule, the environment that
// reaches the guest (with loopback URLs rewritten to host.docker.internal),
// in-guest provisioning pinned to the host's version of the agent, the
// generated pi extension that rewrites models.json baseUrls, the final
// `sbx exec`, the records of the sandboxes it created and the rule that
// calls one of them stale.
//
// Prepare is pure apart from reading the filesystem (which paths exist): it
// builds the seed's setup sequence (create, policy rule, provision, exec) for
// --dry-run and for Execute. Execute materialises it against the real sbx
// CLI and returns the exit status. DESIGN.md in this directory records the
// decisions the seed and the spec leave open.
package sbx

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/piext"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
	"github.com/agent-sandbox/agent-sandbox/internal/uniq"
)

// NamePrefix starts the name of every sandbox agent-sandbox creates.
const NamePrefix = "agent-sandbox-"

// ReadOnlySuffix marks a read-only mount in `sbx create` arguments.
const ReadOnlySuffix = ":ro"

// Mounts lists every guest mount of a spec at its verbatim host path, as
// `sbx create` arguments: read-only ones (the agent folder and the read
// grants) with the ":ro" suffix, read-write ones (workdir, the agent's parts of
// the state dir, config paths, linked git dirs, write and allow grants; sbx has no write-only
// mount) bare. The list is sorted and de-duplicated; a path granted both ways
// is mounted read-write. It does not look at the filesystem: Prepare drops
// the paths that do not exist.
func Mounts(s spec.Spec, o Options) []string {
	rw := map[string]bool{}
	add := func(set map[string]bool, p string) {
		if p != "" {
			set[filepath.Clean(p)] = true
		}
	}
	add(rw, s.Workdir)
	for _, list := range [][]string{s.ConfigPaths, s.GitDirs, s.Allow} {
		for _, p := range list {
			add(rw, p)
		}
	}
	ro := map[string]bool{}
	add(ro, s.AgentDir)
	if IsPi(s, o) && s.StateDir != "" {
		// The generated extension, read-only: the state dir itself is
		// agent-sandbox's and is never mounted.
		add(ro, filepath.Dir(PiExtensionPath(s)))
	}
	for _, p := range s.Read {
		add(ro, p)
	}
	out := make([]string, 0, len(rw)+len(ro))
	for p := range rw {
		out = append(out, p)
	}
	for p := range ro {
		if !rw[p] {
			out = append(out, p+ReadOnlySuffix)
		}
	}
	sort.Strings(out)
	return out
}

// MountHash is the first 8 hex digits of the sha256 of a mount list. The
// list is serialised as its sorted, de-duplicated `sbx create` arguments
// (absolute paths, read-only ones with the ":ro" suffix) joined by single
// newlines, with no trailing newline. Order does not matter; any change of a
// path or of its access gives another hash.
func MountHash(mounts []string) string {
	sorted := uniq.Sorted(mounts)
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\n")))
	return hex.EncodeToString(sum[:])[:8]
}

// Name is the sandbox name agent-sandbox-<id>-<hash8> (hash8 = MountHash).
// sbx names allow letters, digits, '-', '.' and '+', agent ids also '_':
// each '_' becomes '-'. Two ids that differ only there still get different
// names, because each agent's own state dir (which contains its id) is in
// its mount list.
func Name(id string, mounts []string) string {
	return NamePrefix + strings.ReplaceAll(id, "_", "-") + "-" + MountHash(mounts)
}

// Rule is the per-sandbox network policy rule of a run.
type Rule struct {
	// Decision is "allow" or "deny".
	Decision string
	// Resources is sbx's comma-separated resource list.
	Resources string
}

// Argv is the rule as an sbx command for sandbox name.
func (r Rule) Argv(sbxPath, name string) []string {
	return []string{sbxPath, "policy", r.Decision, "network", "--sandbox", name, r.Resources}
}

// NetworkRule turns the resolved network policy into at most one rule:
// blocked is `deny '**'`, an allowlist one `allow` call with AllowResources,
// open none (the machine's global sbx policy applies). An allowlist that
// expands to nothing (an empty allow_domain list) is refused to the whole
// network (deny '**', which beats the global policy), never left open.
func NetworkRule(n posture.Network) *Rule {
	switch n.Mode {
	case posture.NetBlocked:
		return &Rule{Decision: "deny", Resources: "**"}
	case posture.NetAllowlist:
		if r := AllowResources(n.AllowDomains); r != "" {
			return &Rule{Decision: "allow", Resources: r}
		}
		return &Rule{Decision: "deny", Resources: "**"}
	}
	return nil
}

// GatewayHost is the name under which the guest reaches the host's loopback
// through sbx's policy proxy.
const GatewayHost = "host.docker.internal"

// AllowResources expands an allow list for `sbx policy allow network`: each
// domain d (optionally with :port) becomes d,*.d, because sbx matches a host
// and its subdomains as separate resources; *.d wildcards and bare IPv4
// addresses pass unchanged; localhost and 127.0.0.0/8 are dropped and
// replaced by host.docker.internal (the guest's own loopback is the microVM;
// host.docker.internal is routed back to the host's loopback). Names are
// lower-cased, a trailing dot is dropped, and duplicates are removed.
func AllowResources(domains []string) string {
	var out []string
	add := func(r string) { out = append(out, r) }
	for _, d := range domains {
		d = strings.ToLower(strings.TrimSpace(d))
		if d == "" {
			continue
		}
		host, port := d, ""
		if i := strings.LastIndexByte(d, ':'); i >= 0 {
			host, port = d[:i], d[i:]
		}
		host = strings.TrimSuffix(host, ".")
		switch {
		case isLoopbackHost(host):
			add(GatewayHost + port)
		case host == GatewayHost, isIPv4(host), strings.HasPrefix(host, "*."):
			add(host + port)
		default:
			add(host + port)
			add("*." + host + port)
		}
	}
	return strings.Join(uniq.Ordered(out), ",")
}

func isIPv4(h string) bool {
	parts := strings.Split(h, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return false
		}
		n := 0
		fmt.Sscan(p, &n)
		if n > 255 {
			return false
		}
	}
	return true
}

// isLoopbackHost reports whether a host name or address means "this
// machine": localhost, 127.0.0.0/8, ::1 and 0.0.0.0.
func isLoopbackHost(h string) bool {
	h = strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), "."))
	switch {
	case h == "localhost", h == "::1", h == "0.0.0.0":
		return true
	case isIPv4(h) && strings.HasPrefix(h, "127."):
		return true
	}
	return false
}

// Options are the host facts the sbx backend needs.
type Options struct {
	// Path is the sbx binary: absolute when found on PATH, else the bare
	// name (and a real run is refused).
	Path string
	// TTY says whether stdout is a terminal (exec -t). Execute decides again
	// from the stream it is handed.
	TTY bool
	// Verbose drops the "Sandbox Active" banner and echoes each setup
	// command on stderr.
	Verbose bool
	// Quiet drops the banner (--quiet).
	Quiet bool
	// Getenv reads the host environment (the loopback_env variables); nil
	// reads nothing.
	Getenv func(string) string
	// StateRoot is $XDG_STATE_HOME/agent-sandbox, where the records of
	// created sandboxes live (outside every mount). "" derives it from
	// the spec's state dir (<root>/agents/<id>).
	StateRoot string
	// PolicyFile is the sandbox policy file the network and filesystem
	// keys came from, named in refusals.
	PolicyFile string

	// The agent's sbx settings from agent.toml: Install is [sbx] install
	// ("npm:<package>"), VersionCommand [sbx] version_command, Home [sbx]
	// home ("~" or "" is the host's home path), LoopbackEnv loopback_env
	// (variables whose loopback URLs are rewritten for the guest).
	Install        string
	VersionCommand []string
	Home           string
	LoopbackEnv    []string
}

// Install is the provisioning step: the agent's npm package installed in
// the guest, pinned to the host's version when the run materialises.
type Install struct {
	// Package is the declared npm package, unpinned (agent.toml
	// [sbx] install without "npm:").
	Package string
	// HostVersion is the command run on the host for the pin.
	HostVersion []string
	// GuestVersion is the same command run in the guest.
	GuestVersion []string
}

// Exec is the final `sbx exec`.
type Exec struct {
	// Env are the guest variables as K=V, HOME first (see guestEnv: no
	// secrets, because `-e` values show in the host process list).
	Env []string
	// Workdir is the guest working directory (the host workdir's path).
	Workdir string
	// Command is the guest command line.
	Command []string
}

// Prepared is the sbx side of a plan: everything Execute needs, and the
// steps --dry-run prints.
type Prepared struct {
	// Path is the sbx binary.
	Path string
	// Name is the sandbox name.
	Name string
	// Mounts are the `sbx create` mount arguments.
	Mounts []string
	// Create are host directories created before `sbx create` (the state
	// dir and missing config directories), so that every run of the same
	// grants gets the same mount set.
	Create []string
	// Skipped are granted paths that do not exist on the host and are not
	// mounted (sbx cannot mount them).
	Skipped []string
	// Mode is the network mode; Rule its per-sandbox rule (nil when open).
	Mode posture.NetMode
	Rule *Rule
	// Install is nil when the agent declares no [sbx] install.
	Install *Install
	// Exec is the final `sbx exec`.
	Exec Exec
	// PiExtension is the generated pi extension's path ("" unless pi).
	PiExtension string
	// AgentID, AgentDir and Workdir go into the sandbox's record.
	AgentID, AgentDir, Workdir string
	// StateRoot is where records live.
	StateRoot string
	// Verbose drops the banner and echoes the setup commands.
	Verbose bool
	// Quiet drops the banner (--quiet).
	Quiet bool
	// Steps are the commands in materialise order, as --dry-run prints them
	// (provision unpinned).
	Steps []spec.Command
	// Warnings are extra warning lines (without the prefix).
	Warnings []string
	// Unprotected says which protected paths sbx cannot keep read-only
	// (protect.Unenforced), for --dry-run and doctor; "" when none.
	Unprotected string
	// Refusal, when not empty, is why a real run must not start (exit 125).
	Refusal string
	// Spec is the run this prepares.
	Spec spec.Spec
	// LoopbackEnv is Options.LoopbackEnv.
	LoopbackEnv []string
}

// AdditiveWarning is printed on every run that emits an allow rule.
const AdditiveWarning = "sbx: the per-sandbox allow rule only ADDS to this machine's global sbx policy, it cannot subtract from it: hosts the global policy allows stay reachable. For a strict allowlist run `sbx policy init deny-all` once on this machine (`sbx policy ls` shows the global rules)"

// Prepare builds the run for a spec. It runs nothing and writes nothing; it
// reads the filesystem to drop granted paths that do not exist.
func Prepare(s spec.Spec, o Options) (Prepared, error) {
	if len(s.Argv) == 0 {
		return Prepared{}, fmt.Errorf("%s: no command to run", s.AgentID)
	}
	if err := refuse(s, o); err != nil {
		return Prepared{}, err
	}
	p := Prepared{
		Path: o.Path, Mode: s.Network.Mode, AgentID: s.AgentID, AgentDir: s.AgentDir,
		Workdir: s.Workdir, Verbose: o.Verbose, Quiet: o.Quiet, StateRoot: o.StateRoot, Spec: s, LoopbackEnv: o.LoopbackEnv,
	}
	if p.StateRoot == "" {
		p.StateRoot = filepath.Dir(filepath.Dir(grant.Canonical(s.StateDir)))
	}
	if err := p.planMounts(s, o); err != nil {
		return Prepared{}, err
	}
	p.Name = Name(s.AgentID, p.Mounts)

	p.Rule = NetworkRule(s.Network)
	if p.Rule != nil && p.Rule.Decision == "allow" {
		p.Warnings = append(p.Warnings, AdditiveWarning)
	}
	p.Install = installFor(s, o)
	if p.Install != nil && p.Rule != nil && p.Rule.Decision == "deny" {
		p.Warnings = append(p.Warnings, fmt.Sprintf("sbx: this run blocks the network, so it cannot install %s in the guest: it fails unless the sandbox already has the host's version (run once with network to provision it)", p.Install.Package))
	}

	env, warns := guestEnv(s, o)
	p.Warnings = append(p.Warnings, warns...)
	p.Unprotected = protect.Unenforced("sbx", protect.SbxCannot, s.Ledger)
	p.Exec = Exec{Env: env, Workdir: s.Workdir, Command: guestCommand(s.Argv)}
	if IsPi(s, o) {
		p.PiExtension = PiExtensionPath(s)
		p.Exec.Command = piext.WithExtension(p.Exec.Command, p.PiExtension)
	}
	if !filepath.IsAbs(o.Path) {
		p.Refusal = "sbx (Docker Sandboxes) is not installed: `sbx` is not on PATH. Install it (Debian/Ubuntu package docker-sbx, Homebrew docker/tap/sbx; https://docs.docker.com/ai/sandboxes/), then once per machine run `sbx login` and `sbx policy init deny-all`"
	}
	p.Steps = p.steps(o.TTY)
	return p, nil
}

// refuse rejects what a microVM cannot enforce: a nono network profile,
// and write-only grants (sbx mounts are read-only or read-write; turning a
// write-only grant into a read-write mount would let the agent read what
// the policy keeps from it).
func refuse(s spec.Spec, o Options) error {
	if s.Network.Profile != "" {
		return fmt.Errorf("%s: network.network_profile %q cannot be enforced by sbx (it is nono-only); remove it or use the nono backend", o.PolicyFile, s.Network.Profile)
	}
	for _, w := range s.Write {
		return fmt.Errorf("%s: filesystem.write %q cannot be enforced by sbx, which has no write-only mount (a read-write mount would let the agent read it); grant it with filesystem.allow if the agent may read it, or use the nono or landlock backend", o.PolicyFile, w)
	}
	return nil
}

// planMounts decides the mount set: paths that exist are mounted; the state
// dir and missing config directories are created first; other missing
// paths are skipped with a warning.
func (p *Prepared) planMounts(s spec.Spec, o Options) error {
	created := map[string]bool{} // agent-sandbox's own, made before create
	if s.StateDir != "" {
		for _, d := range s.AgentStateDirs() {
			created[grant.Canonical(d)] = true
		}
		if IsPi(s, o) {
			created[filepath.Dir(PiExtensionPath(s))] = true
		}
	}
	config := map[string]bool{}
	for _, c := range s.ConfigPaths {
		config[filepath.Clean(c)] = true
	}
	var skippedFiles []string
	for _, m := range Mounts(s, o) {
		path := strings.TrimSuffix(m, ReadOnlySuffix)
		if strings.ContainsAny(path, ":\n\x00") {
			return fmt.Errorf("%s: cannot be mounted by sbx, whose mount syntax is PATH[:ro]: the path contains ':' or a control character; rename it, drop the grant, or use the nono backend", path)
		}
		if _, err := os.Lstat(path); err == nil {
			p.Mounts = append(p.Mounts, m)
			continue
		}
		switch {
		case created[path], config[path] && looksLikeDir(path):
			p.Create = append(p.Create, path)
			p.Mounts = append(p.Mounts, m)
		case config[path]:
			skippedFiles = append(skippedFiles, path)
			p.Skipped = append(p.Skipped, path)
		default:
			p.Skipped = append(p.Skipped, path)
		}
	}
	if len(p.Skipped) > 0 {
		msg := fmt.Sprintf("sbx: not mounting granted paths that do not exist on the host (sbx cannot mount a missing path): %s", strings.Join(p.Skipped, ", "))
		if len(skippedFiles) > 0 {
			msg += fmt.Sprintf("; once the config file %s exists, the mount set changes and the next run gets a new sandbox", strings.Join(skippedFiles, ", "))
		}
		p.Warnings = append(p.Warnings, msg)
	}
	return nil
}

// looksLikeDir guesses whether a missing config path is a directory: a
// name without a dot after its leading dots (.claude, agent,
// claude-cli-nodejs) is; .claude.json is a file and is not created.
func looksLikeDir(p string) bool {
	return !strings.Contains(strings.TrimLeft(filepath.Base(p), "."), ".")
}

// guestCommand is the agent's command line as run in the guest: the
// command by name (host paths do not exist there), then its arguments.
func guestCommand(argv []string) []string {
	return append([]string{filepath.Base(argv[0])}, argv[1:]...)
}

// ExecArgv is the final `sbx exec` command line; tty adds -t.
func (p Prepared) ExecArgv(tty bool) []string {
	argv := []string{p.Path, "exec", "-i"}
	if tty {
		argv = append(argv, "-t")
	}
	for _, e := range p.Exec.Env {
		argv = append(argv, "-e", e)
	}
	argv = append(argv, "-w", p.Exec.Workdir, p.Name)
	return append(argv, p.Exec.Command...)
}

// CreateArgv is the `sbx create` command line.
func (p Prepared) CreateArgv() []string {
	argv := append([]string{p.Path, "create", "shell"}, p.Mounts...)
	return append(argv, "--name", p.Name, "-q")
}

// InstallArgv is the in-guest install of pkg (pinned or not).
func (p Prepared) InstallArgv(pkg string) []string {
	return []string{p.Path, "exec", p.Name, "npm", "install", "-g", pkg}
}

// GuestVersionArgv runs the agent's version command in the guest.
func (p Prepared) GuestVersionArgv() []string {
	return append([]string{p.Path, "exec", p.Name}, p.Install.GuestVersion...)
}

func (p Prepared) steps(tty bool) []spec.Command {
	note := "create the sandbox (an \"already exists\" answer means attach: the mounts are fixed at creation, and the name hashes them)"
	if len(p.Create) > 0 {
		note += "; first creates " + strings.Join(p.Create, ", ") + " on the host"
	}
	steps := []spec.Command{{Argv: p.CreateArgv(), Note: note}}
	if p.Rule != nil {
		n := "per-sandbox network rule: block everything (beats the inherited global policy)"
		if p.Rule.Decision == "allow" {
			n = "per-sandbox network rule: allow these hosts (adds to the global sbx policy)"
		}
		steps = append(steps, spec.Command{Argv: p.Rule.Argv(p.Path, p.Name), Note: n})
	}
	if p.Install != nil {
		steps = append(steps, spec.Command{
			Argv: p.InstallArgv(p.Install.Package),
			Note: fmt.Sprintf("provision: runs only when `%s` in the guest differs from `%s` on the host, and then pins the package to that host version (printed unpinned: the pin is read when the run materialises)",
				strings.Join(p.Install.GuestVersion, " "), strings.Join(p.Install.HostVersion, " ")),
		})
	}
	n := "start the agent in the microVM; host secrets are not passed in (store API keys with `sbx secret set`)"
	if !p.Verbose {
		n += "; prints \U0001F512 Sandbox Active (sbx) first"
	}
	if p.PiExtension != "" {
		n += "; " + p.PiExtension + " (generated when the run materialises) rewrites loopback baseUrls in models.json"
	}
	steps = append(steps, spec.Command{Argv: p.ExecArgv(tty), Note: n})
	return steps
}
