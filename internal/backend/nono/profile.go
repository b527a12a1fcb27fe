package nono

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/broker"
	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
	"github.com/agent-sandbox/agent-sandbox/internal/uniq"
)

// Profile is the subset of nono's profile format (schema
// reference/nono-0.74/nono-profile.schema.json) that agent-sandbox writes.
// Every key is in the schema: nono rejects unknown keys.
type Profile struct {
	Schema      string      `json:"$schema"`
	Meta        Meta        `json:"meta"`
	Groups      *Groups     `json:"groups,omitempty"`
	Filesystem  Filesystem  `json:"filesystem"`
	Network     Network     `json:"network"`
	Environment Environment `json:"environment"`
	Workdir     Workdir     `json:"workdir"`
	// Linux is set where the folder names unix_socket_dir_bind (see
	// Linux).
	Linux *Linux `json:"linux,omitempty"`
	// SeatbeltRules are raw macOS Seatbelt rules, kept only for macOS.
	SeatbeltRules []string `json:"unsafe_macos_seatbelt_rules,omitempty"`
}

// Linux are nono's Linux hardening keys. agent-sandbox sets one:
// af_unix_mediation "pathname" where the folder names unix_socket_dir_bind
// directories. Elsewhere its own seccomp layer (Filter) refuses
// socket(AF_UNIX) under nono; the agent's sockets in those directories
// need it, so there nono's pathname mediation stands in: a connect or bind
// by path only in the granted directories. It is weaker than the filter:
// nono checks the path and then resumes the call, which the kernel
// resolves again, so a symlink swapped in a granted directory between the
// two reaches a host socket (measured; Prepare warns on every run).
type Linux struct {
	AfUnixMediation string `json:"af_unix_mediation,omitempty"`
}

// Meta names the profile.
type Meta struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Groups adds policy groups from nono's policy.json to the default ones.
type Groups struct {
	Include []string `json:"include,omitempty"`
}

// Filesystem are the run's grants as absolute, canonical paths. allow,
// read and write hold directories; the *_file keys hold single files.
type Filesystem struct {
	Allow             []string `json:"allow,omitempty"`
	Read              []string `json:"read,omitempty"`
	Write             []string `json:"write,omitempty"`
	AllowFile         []string `json:"allow_file,omitempty"`
	ReadFile          []string `json:"read_file,omitempty"`
	WriteFile         []string `json:"write_file,omitempty"`
	UnixSocketDirBind []string `json:"unix_socket_dir_bind,omitempty"`
}

// Network is the run's network policy.
type Network struct {
	Block          bool     `json:"block"`
	AllowDomain    []string `json:"allow_domain,omitempty"`
	OpenPort       []int    `json:"open_port,omitempty"`
	ListenPort     []int    `json:"listen_port,omitempty"`
	NetworkProfile string   `json:"network_profile,omitempty"`
}

// Environment limits the variables the agent sees (allow_vars) and sets the
// agent.toml set_env values (set_vars).
type Environment struct {
	AllowVars []string          `json:"allow_vars"`
	SetVars   map[string]string `json:"set_vars,omitempty"`
}

// Workdir sets the access to --workdir; always "readwrite", with
// --allow-cwd on the command line.
type Workdir struct {
	Access string `json:"access"`
}

// Marshal renders a profile as it is written to disk: indented JSON, HTML
// characters unescaped, a final newline.
func Marshal(p Profile) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// builder accumulates one profile.
type builder struct {
	s    spec.Spec
	o    Options
	home grant.Home
	stat func(string) (fs.FileInfo, error)

	allow, read, write, allowFile, readFile, writeFile, sockets []string
	notes                                                       []string
	// viaEnv are set_env entries that cannot go to set_vars; they are set
	// in nono's own environment and pass through allow_vars.
	viaEnv map[string]string
}

func newBuilder(s spec.Spec, o Options) *builder {
	return &builder{s: s, o: o, home: homeFor(s, o), stat: os.Stat, viaEnv: map[string]string{}}
}

func (b *builder) note(format string, a ...any) { b.notes = append(b.notes, fmt.Sprintf(format, a...)) }

// build makes the profile, or says why nono would refuse it.
func (b *builder) build() (Profile, error) {
	if err := b.checkSpec(); err != nil {
		return Profile{}, err
	}
	wd, skip, err := b.grantStateDirs()
	if err != nil {
		return Profile{}, err
	}
	if err := b.grantSources(wd, skip); err != nil {
		return Profile{}, err
	}
	if err := b.grantSockets(); err != nil {
		return Profile{}, err
	}
	if err := b.addExec(); err != nil {
		return Profile{}, err
	}
	return b.profile()
}

// checkSpec refuses a spec nono cannot be given: relative state dir,
// workdir or home, a command or environment nono would misread.
func (b *builder) checkSpec() error {
	s := b.s
	if !filepath.IsAbs(s.StateDir) || !filepath.IsAbs(s.Workdir) {
		return fmt.Errorf("internal error: the state dir %q and the workdir %q must be absolute", s.StateDir, s.Workdir)
	}
	if !filepath.IsAbs(b.home.Dir) {
		return fmt.Errorf("internal error: the home directory %q must be absolute", b.home.Dir)
	}
	if err := checkCommand(s); err != nil {
		return err
	}
	return checkEnv(s)
}

// grantStateDirs checks the workdir and grants the agent's parts of the
// state dir; it returns the canonical workdir and the paths the listed
// grants must skip (both are granted already).
func (b *builder) grantStateDirs() (string, map[string]bool, error) {
	s := b.s
	// The workdir is granted by workdir.access + --allow-cwd, not listed;
	// nono re-runs its overlap checks on it, so check it here too.
	wd := grant.Canonical(s.Workdir)
	if err := b.check(wd); err != nil {
		return "", nil, fmt.Errorf("working directory %s %v; run agent-sandbox from a project directory or pass --workdir", wd, err)
	}

	// The agent's parts of the state dir are created by Execute, so they
	// are granted even when they do not exist yet. The state dir itself
	// (which holds this profile) is never granted.
	skip := map[string]bool{wd: true}
	for _, d := range s.AgentStateDirs() {
		d = grant.Canonical(d)
		if err := b.check(d); err != nil {
			return "", nil, fmt.Errorf("agent-sandbox's state dir %s %v; set XDG_STATE_HOME to a directory outside nono's protected paths", d, err)
		}
		b.allow = append(b.allow, d)
		skip[d] = true
	}
	return wd, skip, nil
}

// grantSource is one list of grants: where its directories and files go
// in the profile, and how a path in it is named in messages.
type grantSource struct {
	paths       []string
	dirs, files *[]string
	origin      func(p string) string
}

// grantSources grants the listed paths (agent folder, linked git dirs,
// config_paths, the filesystem grants, git's configuration), each once per
// kind, skipping the paths in skip.
func (b *builder) grantSources(wd string, skip map[string]bool) error {
	seen := map[*[]string]map[string]bool{}
	for _, src := range b.sources(wd) {
		if seen[src.dirs] == nil {
			seen[src.dirs] = map[string]bool{}
		}
		for _, raw := range uniq.Sorted(src.paths) {
			p := grant.Canonical(raw)
			if skip[p] || seen[src.dirs][p] {
				continue
			}
			seen[src.dirs][p] = true
			if err := b.add(p, src.dirs, src.files, src.origin(raw)); err != nil {
				return err
			}
		}
	}
	return nil
}

// sources lists the spec's grants in the order they are granted, each with
// the file and key that asked for it.
func (b *builder) sources(wd string) []grantSource {
	s := b.s
	inList := func(list []string) map[string]bool {
		m := map[string]bool{}
		for _, p := range list {
			m[p] = true
		}
		return m
	}
	gitDirs, configPaths := inList(s.GitDirs), inList(s.ConfigPaths)
	var agentDir []string
	if s.AgentDir != "" {
		agentDir = []string{s.AgentDir}
	}
	return []grantSource{
		{agentDir, &b.read, &b.readFile, func(string) string { return "the agent folder" }},
		{s.GitDirs, &b.allow, &b.allowFile, func(string) string { return "the linked git dir of " + wd }},
		{s.ConfigPaths, &b.allow, &b.allowFile, func(string) string { return agentToml(s) + ": config_paths" }},
		{s.Allow, &b.allow, &b.allowFile, func(p string) string {
			switch {
			case gitDirs[p]:
				return "the linked git dir of " + wd
			case configPaths[p]:
				return agentToml(s) + ": config_paths"
			}
			return sandboxFile(s) + ": filesystem.allow"
		}},
		{s.Read, &b.read, &b.readFile, func(p string) string {
			if p == s.AgentDir {
				return "the agent folder"
			}
			return agentToml(s) + ": read_paths or " + sandboxFile(s) + ": filesystem.read"
		}},
		{s.Write, &b.write, &b.writeFile, func(string) string { return sandboxFile(s) + ": filesystem.write" }},
		{s.UserConfig, &b.read, &b.readFile, func(string) string { return "git's configuration" }},
	}
}

// grantSockets grants the unix_socket_dir_bind directories: a missing one
// is left out with a note, a file or a protected path is refused.
func (b *builder) grantSockets() error {
	s := b.s
	for _, raw := range uniq.Sorted(b.o.UnixSocketDirBind) {
		p := grant.Canonical(raw)
		origin := sandboxFile(s) + ": filesystem.unix_socket_dir_bind"
		st, err := b.stat(p)
		if err != nil {
			b.note("not granted: %s (%s) does not exist, and nono skips missing paths; create the directory before the run", p, origin)
			continue
		}
		if !st.IsDir() {
			return fmt.Errorf("%s: %s is not a directory; unix_socket_dir_bind takes the directory the sockets are created in", origin, p)
		}
		if err := b.check(p); err != nil {
			return fmt.Errorf("%s: %s %v", origin, p, err)
		}
		b.sockets = append(b.sockets, p)
	}
	return nil
}

// profile assembles the profile from the grants gathered so far, with the
// network and environment policy and the platform-only parts.
func (b *builder) profile() (Profile, error) {
	s := b.s
	prof := Profile{
		Schema: SchemaURL,
		Meta: Meta{
			Name:        "agent-sandbox-" + s.AgentID,
			Description: "generated by agent-sandbox for " + s.AgentID + " on every run; edits are overwritten",
		},
		Workdir: Workdir{Access: "readwrite"},
	}
	if b.o.NixStore {
		prof.Groups = &Groups{Include: []string{"nix_runtime"}}
	}
	prof.Filesystem = b.filesystem()
	if s.GOOS == "linux" && len(prof.Filesystem.UnixSocketDirBind) > 0 {
		prof.Linux = &Linux{AfUnixMediation: "pathname"}
	}
	if err := noGlobs(prof.Filesystem); err != nil {
		return Profile{}, err
	}
	net, err := b.network()
	if err != nil {
		return Profile{}, err
	}
	prof.Network = net
	prof.Environment = b.environment()
	if len(b.o.SeatbeltRules) > 0 {
		if s.GOOS == "darwin" {
			prof.SeatbeltRules = append([]string{}, b.o.SeatbeltRules...)
		} else {
			b.note("%s: %d unsafe_macos_seatbelt_rules left out of the profile: they are macOS-only and this is %s", sandboxFile(s), len(b.o.SeatbeltRules), s.GOOS)
		}
	}
	return prof, nil
}

// noGlobs refuses a profile path that nono would read as a pattern: it
// expands * and ** in grant paths (and rejects ? and [...]). Grants as
// written are refused earlier (grant.CheckNoGlob); this catches a literal
// glob character in a path they resolve to, the workdir's state dirs or the
// program closure, which nono would otherwise widen.
func noGlobs(fs Filesystem) error {
	for _, l := range [][]string{fs.Allow, fs.Read, fs.Write, fs.AllowFile, fs.ReadFile, fs.WriteFile, fs.UnixSocketDirBind} {
		for _, p := range l {
			if strings.ContainsAny(p, grant.GlobChars) {
				return fmt.Errorf("%s contains one of %q, which nono reads as a glob pattern in profile paths (it would grant every path the pattern matches): rename the path, or use --sandbox-backend landlock, which takes paths literally", p, grant.GlobChars)
			}
		}
	}
	return nil
}

// add grants p (directory or file) after the defensive re-check; missing
// paths are left out with a note.
func (b *builder) add(p string, dirs, files *[]string, origin string) error {
	st, err := b.stat(p)
	if err != nil {
		b.note("not granted: %s (%s) does not exist, and nono skips missing paths; create it before the run if the agent needs it", p, origin)
		return nil
	}
	if err := b.check(p); err != nil {
		return fmt.Errorf("%s: %s %v", origin, p, err)
	}
	if st.IsDir() {
		*dirs = append(*dirs, p)
	} else {
		*files = append(*files, p)
	}
	return nil
}

// addExec grants the closure of the agent's programs (command and
// exec_paths) read, which includes execute under Landlock: the files and
// directories plan found with pathresolve and checked path by path. An
// empty closure grants nothing: plan leaves it empty when a program's chain
// runs through a path the agent can write, and no directory is derived
// here from the programs themselves (one could be the agent's own).
func (b *builder) addExec() error {
	s := b.s
	for _, raw := range uniq.Sorted(s.ExecClosure) {
		p := grant.Canonical(raw)
		st, err := b.stat(p)
		if err != nil {
			b.note("not granted: %s (closure of the agent's programs) does not exist", p)
			continue
		}
		if err := b.check(p); err != nil {
			return fmt.Errorf("%s: the closure of the agent's programs (command, exec_paths) includes %s, which cannot be granted: it %v; install the program somewhere else", agentToml(s), p, err)
		}
		if st.IsDir() {
			b.read = append(b.read, p)
		} else {
			b.readFile = append(b.readFile, p)
		}
	}
	return nil
}

// filesystem sorts and de-duplicates the grants; a path granted read-write
// is dropped from the read-only and write-only lists.
func (b *builder) filesystem() Filesystem {
	if b.o.InView {
		// Inside the view no host socket is there to reach: the
		// unix_socket_dir_bind directories are plain read-write grants,
		// and nono's pathname mediation, which does not start inside the
		// view (nono 0.78.0: "CLONE_FILES bootstrap: child died or
		// timed out"), is not asked.
		b.allow = append(b.allow, b.sockets...)
		b.sockets = nil
	}
	allow, allowFile := uniq.Sorted(b.allow), uniq.Sorted(b.allowFile)
	minus := func(list, drop []string) []string {
		d := map[string]bool{}
		for _, p := range drop {
			d[p] = true
		}
		var out []string
		for _, p := range uniq.Sorted(list) {
			if !d[p] {
				out = append(out, p)
			}
		}
		return out
	}
	fs := Filesystem{
		Allow:             allow,
		Read:              minus(b.read, allow),
		Write:             minus(b.write, allow),
		AllowFile:         allowFile,
		ReadFile:          minus(b.readFile, allowFile),
		WriteFile:         minus(b.writeFile, allowFile),
		UnixSocketDirBind: uniq.Sorted(b.sockets),
	}
	for _, l := range []*[]string{&fs.Allow, &fs.Read, &fs.Write, &fs.AllowFile, &fs.ReadFile, &fs.WriteFile, &fs.UnixSocketDirBind} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	return fs
}

// network renders the resolved network policy. A blocked network keeps
// the policy file's open_port and listen_port (--offline has none), as
// the file says them. An allow-list entry naming a loopback host with a
// port also opens that port (open_port): NO_PROXY sends clients there
// directly, past the proxy, so the entry would otherwise allow nothing;
// the built-in engine gives the entry the same meaning.
func network(s spec.Spec) (Network, error) {
	n := s.Network
	var out Network
	switch n.Mode {
	case posture.NetBlocked:
		out.Block = true
	case posture.NetAllowlist:
		if n.NoHost() {
			// An empty allow_domain would leave nono's network open (an
			// empty list does not start its proxy), so an allow list that
			// names no host is nono's block. nono has no "block every host
			// but open these localhost ports": refused rather than opened.
			if len(n.OpenPorts) > 0 || len(n.ListenPorts) > 0 {
				return out, fmt.Errorf("%s: network.allow_domain is empty (no host reachable) and network.open_port/listen_port %v/%v are set: nono cannot block every host while keeping these ports open (its block closes them, and an empty allow_domain would leave the network open); list the hosts the agent may reach in network.allow_domain, or drop the ports (an empty allow list alone blocks everything)", n.Source, n.OpenPorts, n.ListenPorts)
			}
			out.Block = true
			return out, nil
		}
		// nono's proxy matches host names only: nono-cli strips an
		// entry's :port (0.78.0, measured: TestNonoProxyPrograms), so
		// "host:8080" would admit every port of host (for a loopback
		// host, every local service). A port nono cannot enforce is
		// refused, never dropped.
		for _, d := range n.AllowDomains {
			where := fmt.Sprintf("%s: network.allow_domain %q", n.Source, d)
			if n.Source == "--allow-host" {
				where = fmt.Sprintf("--allow-host %q", d)
			}
			if s.GOOS == "linux" && directLoopback(d) {
				port, _ := broker.EntryPort(d)
				return out, fmt.Errorf("%s: %s", where, loopbackRefusal(s, port))
			}
			if port, ok := broker.EntryPort(d); ok {
				return out, fmt.Errorf("%s: nono cannot keep an allow-list entry to port %d (its proxy matches host names only and admits every port of the host); list the host without the port to allow all its ports, or use --sandbox-backend landlock, whose broker keeps the port", where, port)
			}
		}
		if s.GOOS == "linux" && len(n.OpenPorts) > 0 {
			return out, fmt.Errorf("%s: network.open_port %v: %s", n.Source, n.OpenPorts, loopbackRefusal(s, n.OpenPorts[0]))
		}
		out.AllowDomain = uniq.Sorted(n.AllowDomains)
		if n.Profile != "" {
			if err := checkNetworkProfile(n.Profile, n.Source); err != nil {
				return out, err
			}
			out.NetworkProfile = n.Profile
		}
	case posture.NetOpen, "":
		if n.Profile != "" {
			return out, fmt.Errorf("%s: network.network_profile %q needs an allowlist network; internal error: the posture dropped it", n.Source, n.Profile)
		}
	default:
		return out, fmt.Errorf("internal error: unknown network mode %q", n.Mode)
	}
	out.OpenPort = uniq.Sorted(n.OpenPorts)
	out.ListenPort = uniq.Sorted(n.ListenPorts)
	if len(out.AllowDomain) == 0 {
		out.AllowDomain = nil
	}
	return out, nil
}

// environment is allow_vars = EnvPass + set_env names + MISE_CACHE_DIR and
// TMPDIR (both set by agent-sandbox: TMPDIR is the run's own directory), and
// set_vars = set_env, except PATH (reserved by nono) and values containing
// "$" (nono would expand $HOME, $WORKDIR, ... in them), which go through
// nono's own environment instead.
func (b *builder) environment() Environment {
	s := b.s
	names := append([]string{}, s.EnvPass...)
	set := map[string]string{}
	for k, v := range s.EnvSet {
		names = append(names, k)
		if k == "PATH" || strings.Contains(v, "$") {
			b.viaEnv[k] = v
			continue
		}
		set[k] = v
	}
	names = append(names, "MISE_CACHE_DIR", "TMPDIR")
	env := Environment{AllowVars: uniq.Sorted(names)}
	if len(set) > 0 {
		env.SetVars = set
	}
	return env
}

// directLoopback says whether an allow-list entry names a host that
// nono's NO_PROXY sends clients to directly (localhost, 127.0.0.1, ::1),
// with or without a port.
func directLoopback(entry string) bool {
	host := entry
	if h, _, err := net.SplitHostPort(entry); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// loopbackRefusal is why nono alone cannot reach a loopback port beside
// an allow list on Linux, and the fixes that work: measured with nono
// 0.78.0 (TestNonoPorts), the agent's client goes to the port directly
// (NO_PROXY) and nono's sandbox refuses that connect in its proxy mode,
// which agents then retry for minutes.
func loopbackRefusal(s spec.Spec, port int) string {
	p := "PORT"
	if port > 0 {
		p = strconv.Itoa(port)
	}
	return fmt.Sprintf("nono alone (no namespace view on this host) cannot reach a loopback port beside an allow list: clients connect to it directly (NO_PROXY) and nono refuses that connect in its proxy mode; for a local model alone set \"network\": {\"block\": true, \"open_port\": [%s]} in %s (then no remote host is reachable), or set %s=1 for agent-sandbox's weaker sandbox, which forwards the port beside an allow list (with user namespaces on, nono runs inside agent-sandbox's view, which does too)", p, sandboxFile(s), "AGENT_SANDBOX_WEAKER_SANDBOX")
}

// network is the profile's network: network(s) for nono alone; inside the
// view inViewNetwork, after an unknown network_profile is refused in
// nono's words (a known one is refused by the view, whose broker carries
// the allow list).
func (b *builder) network() (Network, error) {
	s := b.s
	if !b.o.InView {
		return network(s)
	}
	if s.Network.Profile != "" {
		if err := checkNetworkProfile(s.Network.Profile, s.Network.Source); err != nil {
			return Network{}, err
		}
	}
	return inViewNetwork(s), nil
}

// inViewNetwork is nono's network inside the namespace view, whose network
// namespace and egress broker carry out the run's policy: unrestricted.
// With an allow list nono's own proxy would have no route out (the broker
// keeps ports and credential routes); with a blocked network nono's block
// refuses every socket, the sandbox's own loopback included (measured
// with nono 0.78.0: a test server and its client fail with EPERM), while
// the view's namespace already has no route out.
func inViewNetwork(spec.Spec) Network { return Network{} }
