// Package why answers `agent-sandbox why`: would an agent's run get this
// access to a path, or reach this host, under which rule, or why not and
// what to change where to allow it.
//
// It judges nothing on its own: the answer comes from the plan the run
// gets (plan.Build), the grant rules that plan applied (internal/grant),
// the built-in engine's policy and view of that plan
// (backend.Reacher: the built-in engine's Prepared.Reach), its network
// decision (backend.HostReacher: the namespace, the forwarded ports and
// the egress broker's policy) and, for the other backends, the broker's
// matcher (broker.Allowed). This package only names the rule and the fix.
package why

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/broker"
	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/plan"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// Access is what is asked about a path.
type Access string

// The accesses.
const (
	Read  Access = "read"
	Write Access = "write"
	Exec  Access = "exec"
)

// Input is one question about one planned run.
type Input struct {
	Plan   *plan.Plan
	Folder *agent.Folder
	Home   grant.Home
	// Protected are the agent lookup directories (plan.Input.Protected).
	Protected []string
	// Path is the path asked about, absolute or starting with ~/.
	Path   string
	Access Access
	// Host is HOST or HOST:PORT (default port 443) for a network question.
	Host string
}

// Answer is the verdict. The JSON keys are a stable interface (README).
type Answer struct {
	Agent   string  `json:"agent"`
	Backend *string `json:"backend"`
	// Engine is the engine the run would use (internal/engine: view,
	// nono-in-view, nono, weaker, sbx); null when unsandboxed.
	Engine *string `json:"engine"`
	// EngineLacks are the protections that engine does not give in full
	// (internal/engine), so that an answer under a weaker engine says so.
	EngineLacks []string `json:"engine_lacks"`
	// Path (canonical) or Host (host:port) asked about; Access is read,
	// write, exec or connect.
	Path    string `json:"path,omitempty"`
	Host    string `json:"host,omitempty"`
	Access  string `json:"access"`
	Allowed bool   `json:"allowed"`
	// Rule is the kind of rule that decided: workdir, grant, per-run grant,
	// config path, state, git dir, agent folder, system path, device,
	// closure, toolchain, git configuration, agent-sandbox, credential,
	// refused, private, protected, not granted, unsandboxed, network.
	Rule string `json:"rule"`
	// By is the policy entry or file that decided ("" when none).
	By string `json:"by"`
	// Reason is one sentence; Fix says what to add where ("" when nothing
	// can or need be changed).
	Reason string `json:"reason"`
	Fix    string `json:"fix"`
	// Refusal is why a run of this agent would not start here at all.
	Refusal *string `json:"refusal"`
}

func base(in Input) Answer {
	a := Answer{Agent: in.Plan.Agent, Backend: in.Plan.Backend, Refusal: in.Plan.Refusal, EngineLacks: []string{}}
	if e := in.Plan.Engine; e != nil {
		a.Engine, a.EngineLacks = &e.Name, e.Lacks
	}
	return a
}

// reachOf is how the plan's run treats p: the backend's own answer where
// it gives one (backend.Reacher: exact), else the spec's grants (only
// Rights, Rule and List set).
func reachOf(pl *plan.Plan, p string) (reach backend.Reach, exact bool) {
	if reacher, ok := pl.Prepared.(backend.Reacher); ok {
		return reacher.Reach(p), true
	}
	reach.Rights, reach.Rule, reach.List = specRights(pl, p)
	return reach, false
}

// notGranted says that no grant covers p: hidden from the sandbox's view,
// or, where the answer is not exact, among agent-sandbox's grants only.
func notGranted(pl *plan.Plan, p string, hidden, exact bool) string {
	reason := fmt.Sprintf("no grant of %s covers %s", pl.Agent, p)
	if hidden {
		reason += ": the sandbox's view does not show it at all"
	}
	if !exact {
		reason += fmt.Sprintf(" (among agent-sandbox's grants; %s's own system paths may add more", *pl.Backend)
		if pp, ok := pl.ProfilePath.(string); ok && pp != "" {
			reason += fmt.Sprintf(": nono why --profile %s --path %s", pp, p)
		}
		reason += ")"
	}
	return reason
}

// Path answers a path question.
func Path(in Input) (Answer, error) {
	a := base(in)
	a.Access = string(in.Access)
	abs, err := in.Home.Expand(in.Path)
	if err != nil {
		return a, err
	}
	p := grant.Canonical(abs)
	a.Path = p
	pl := in.Plan
	if !pl.Sandboxed {
		a.Allowed, a.Rule, a.By = true, "unsandboxed", pl.Reason
		a.Reason = fmt.Sprintf("%s runs unsandboxed (decided by %s): it has your full user rights", pl.Agent, pl.Reason)
		a.Fix = "pass --sandbox to run it sandboxed"
		return a, nil
	}
	protected := in.Home.Protected(in.Protected...)
	if pl.Spec.AgentDir != "" {
		protected = append(protected, pl.Spec.AgentDir)
	}
	checker := grant.Checker{Home: in.Home, Protected: protected}
	legal := checker.Check(p, in.Access == Write)
	readable := checker.Check(p, false)

	reach, exact := reachOf(pl, p)
	rights, rule, list, system := reach.Rights, reach.Rule, reach.List, reach.System
	granted := map[Access]bool{Read: rights.Read, Write: rights.Write, Exec: rights.Exec}[in.Access]
	if reach.CacheCopy != "" {
		a.Allowed, a.By, a.Rule = false, reach.Cache, "cache"
		a.Reason = fmt.Sprintf("%s is a toolchain cache: in the weaker sandbox it is not granted; the agent's tool is pointed at the run's own copy %s (per project, brought up to date from yours before each run), so yours is never written", reach.Cache, reach.CacheCopy)
		a.Fix = "none: the agent's builds use the copy"
		return a, nil
	}
	if granted {
		return grantedAnswer(a, in, reach, rule, list, system), nil
	}
	if e, ok := protectedEntry(pl, p, in.Access, exact && rights.Read); ok {
		a.Rule, a.By = "protected", e.Path
		a.Reason = fmt.Sprintf("%s is protected (%s): %s; the sandbox binds it read-only, so a write to it inside fails with \"Read-only file system\" (\"Device or resource busy\" from a program that renames a new version over it, as git does)", p, e.Name, e.Why)
		a.Fix = fmt.Sprintf("pass --allow-edit %s for one run, or add %q to allow_edit in %s%s", e.Name, e.Name, tomlPath(in.Folder), copyNote(in))
		return a, nil
	}
	switch {
	case reach.Masked != "":
		a.Rule, a.By = "credential", reach.Masked
		a.Reason = fmt.Sprintf("masked in the sandbox's view: %s is a secret inside a granted tree (a credential file, or an /etc secret), shown as an empty file or directory", reach.Masked)
		a.Fix = "none: credentials are never granted; keep the agent's own credentials in its config_paths"
		return a, nil
	case readable != nil:
		a.Rule, a.Reason = "refused", fmt.Sprintf("%s %v", p, readable)
		if strings.Contains(readable.Error(), "credential path") {
			a.Rule = "credential"
		}
		a.Fix = "none: no grant may name it"
		if p == "/" {
			a.Fix = ""
		}
		return a, nil
	case reach.Private != "":
		a.Rule, a.By = "private", reach.Private
		a.Reason = fmt.Sprintf("inside the sandbox %s is its own (a private tmpfs, or the sandbox's own /proc and ptys): the host's %s is not what the agent sees there", reach.Private, p)
		if reach.Private == "/proc" || strings.HasPrefix(reach.Private, "/dev/") {
			a.Fix = "none: the sandbox has its own processes and terminals; the host's are never shown"
			return a, nil
		}
	case rule != "" && (rights.Read || rights.Write):
		kind, by := origin(in, rule, list, system)
		a.Rule, a.By = kind, rule
		have := "readable"
		if !rights.Read {
			have = "writable only"
		} else if rights.Write {
			have = "readable and writable"
		}
		a.Reason = fmt.Sprintf("%s, not %s: %s", have, verb(in.Access), by)
	default:
		a.Rule = "not granted"
		a.Reason = notGranted(pl, p, reach.Hidden, exact)
	}
	if legal != nil {
		a.Fix = fmt.Sprintf("none: a %s grant of %s is refused: it %v", map[bool]string{true: "writable", false: "read"}[in.Access == Write], p, legal)
		return a, nil
	}
	a.Fix = fix(in, p, list, system)
	return a, nil
}

// grantedAnswer is the answer for an access the plan grants.
func grantedAnswer(a Answer, in Input, reach backend.Reach, rule, list string, system bool) Answer {
	a.Allowed = true
	if reach.Cache != "" {
		a.By, a.Rule = reach.Cache, "cache"
		a.Reason = fmt.Sprintf("%s is a toolchain cache: the sandbox shows it as a private, writable layer over yours; the agent's writes are kept in its own state and never reach your cache", reach.Cache)
		return a
	}
	a.By = rule
	a.Rule, a.Reason = origin(in, rule, list, system)
	return a
}

// protectedEntry is, for a write the engine's own view refuses where the
// path is readable (readableExact), the ledger entry the plan keeps
// read-only that p is, or lies in (a protected directory).
func protectedEntry(pl *plan.Plan, p string, access Access, readableExact bool) (protect.Entry, bool) {
	if access != Write || !readableExact {
		return protect.Entry{}, false
	}
	for _, e := range pl.Spec.Ledger.ReadOnly() {
		if e.Path == p || e.Dir && grant.Within(p, e.Path) {
			return e, true
		}
	}
	return protect.Entry{}, false
}

func verb(a Access) string {
	switch a {
	case Write:
		return "writable"
	case Exec:
		return "executable"
	}
	return "readable"
}

// specRights are the rights a kernel backend other than the built-in
// engine gets from agent-sandbox's own grants (its own system paths are
// its business).
func specRights(pl *plan.Plan, p string) (backend.Rights, string, string) {
	var r backend.Rights
	var rule, list string
	s := pl.Spec
	for _, l := range []struct {
		name  string
		paths []string
		right backend.Rights
	}{
		{"read_exec", s.ExecClosure, backend.Rights{Read: true, Exec: true}},
		{"read_only", append(append([]string{}, s.Read...), s.AgentDir), backend.Rights{Read: true}},
		{"read_write", append(append([]string{}, s.Allow...), s.Workdir), backend.Rights{Read: true, Write: true, Exec: true}},
		{"write_only", s.Write, backend.Rights{Write: true}},
	} {
		for _, e := range l.paths {
			if e == "" || !grant.Within(p, e) {
				continue
			}
			r.Read, r.Write, r.Exec = r.Read || l.right.Read, r.Write || l.right.Write, r.Exec || l.right.Exec
			if len(e) > len(rule) {
				rule, list = e, l.name
			}
		}
	}
	return r, rule, list
}

// origin names the rule behind a policy entry: which of the plan's
// grants (or the engine's system paths) put it there.
func origin(in Input, rule, list string, system bool) (string, string) {
	pl, s := in.Plan, in.Plan.Spec
	switch {
	case rule == s.Workdir:
		return "workdir", fmt.Sprintf("the working directory %s is read-write", rule)
	case slices.Contains(pl.RunGrants.Write, rule):
		return "per-run grant", fmt.Sprintf("--write %s (this run) is read-write", rule)
	case slices.Contains(pl.RunGrants.Read, rule):
		return "per-run grant", fmt.Sprintf("--read %s (this run) is read-only", rule)
	case slices.Contains(s.ConfigPaths, rule):
		return "config path", fmt.Sprintf("%s is one of %s's config_paths (read-write) in %s", rule, pl.Agent, tomlPath(in.Folder))
	case slices.Contains(s.GitDirs, rule):
		return "git dir", fmt.Sprintf("%s is the working directory's linked git dir (read-write)", rule)
	case rule != "" && (grant.Within(rule, s.StateDir) || strings.HasPrefix(rule, s.TempDir())):
		return "state", fmt.Sprintf("%s is %s's own state (mise cache, TMPDIR)", rule, pl.Agent)
	case rule != "" && rule == s.AgentDir:
		return "agent folder", fmt.Sprintf("%s is the agent folder (read-only)", rule)
	}
	for _, t := range s.Toolchains {
		if t.Path == rule {
			return "toolchain", fmt.Sprintf("the toolchain %s is readable and executable (%s)", rule, t.Why)
		}
	}
	if slices.Contains(s.UserConfig, rule) {
		return "git configuration", fmt.Sprintf("%s is git's own configuration (read-only)", rule)
	}
	if src := folderSource(in, rule); src != "" {
		return "grant", fmt.Sprintf("%s grants %s (%s)", src, rule, strings.ReplaceAll(list, "_", "-"))
	}
	if system && rule != "/etc" {
		if strings.HasPrefix(rule, "/dev/") {
			return "device", fmt.Sprintf("%s is one of the terminal devices every run gets", rule)
		}
		return "system path", fmt.Sprintf("%s is a system path every run reads (nono's system_read_linux_core)", rule)
	}
	if rule == "/etc" {
		return "system path", "/etc is readable in the view, its secret files masked"
	}
	if slices.Contains(s.ExecClosure, rule) {
		return "closure", fmt.Sprintf("%s is part of what %s or its exec_paths need to start (read and execute)", rule, pl.Agent)
	}
	if filepath.Base(rule) == "agent-sandbox" {
		return "agent-sandbox", fmt.Sprintf("%s is agent-sandbox itself, which starts the sandbox", rule)
	}
	return "grant", fmt.Sprintf("%s is granted (%s)", rule, strings.ReplaceAll(list, "_", "-"))
}

// folderSource names the folder file and key that grant rule, or "".
func folderSource(in Input, rule string) string {
	f := in.Folder
	if f == nil {
		return ""
	}
	c := grant.Checker{Home: in.Home}
	match := func(raws []string) int {
		for i, raw := range raws {
			if abs, err := c.Home.Expand(raw); err == nil && grant.Canonical(abs) == rule {
				return i
			}
		}
		return -1
	}
	if i := match(f.Config.ReadPaths); i >= 0 {
		return fmt.Sprintf("%s read_paths[%d]", tomlPath(f), i)
	}
	if pf := in.Plan.Posture.Policy; pf != nil {
		for _, l := range []struct {
			key  string
			raws []string
		}{{"filesystem.read", pf.Filesystem.Read}, {"filesystem.write", pf.Filesystem.Write}, {"filesystem.allow", pf.Filesystem.Allow}, {"filesystem.unix_socket_dir_bind", pf.Filesystem.UnixSocketDirBind}} {
			if i := match(l.raws); i >= 0 {
				return fmt.Sprintf("%s %s[%d]", pf.Path, l.key, i)
			}
		}
	}
	return ""
}

func tomlPath(f *agent.Folder) string {
	if f == nil {
		return "agent.toml"
	}
	return filepath.Join(f.Dir, "agent.toml")
}

// copyNote says, for a built-in folder, how to get the editable copy the
// fix names.
func copyNote(in Input) string {
	if f := in.Folder; f != nil && f.Builtin() {
		return fmt.Sprintf(" (a built-in folder: `agent-sandbox agents copy %s` writes an editable copy to %s first)", f.ID, filepath.Join(in.Home.ConfigRoot(), "agents", f.ID))
	}
	return ""
}

// fix says what to add where so that the access is allowed.
func fix(in Input, p, list string, system bool) string {
	f := in.Folder
	where := copyNote(in)
	policy := policyPath(in)
	switch in.Access {
	case Write:
		s := fmt.Sprintf("pass --write %s for one run, or add it to filesystem.allow in %s%s", p, policy, where)
		if list == "read_exec" {
			s += "; but the agent runs code from there: a writable grant would let it rewrite that code, so the tree would no longer be granted for running (grant a copy instead)"
		}
		return s
	case Exec:
		return fmt.Sprintf("add it to exec_paths in %s (what it needs to start is granted read and execute)%s", tomlPath(f), where)
	}
	return fmt.Sprintf("pass --read %s for one run, or add it to read_paths in %s%s", p, tomlPath(f), where)
}

// Host answers a network question (HOST or HOST:PORT, default port 443).
func Host(in Input) (Answer, error) {
	a := base(in)
	a.Access = "connect"
	host, port, err := splitHost(in.Host)
	if err != nil {
		return a, err
	}
	a.Host = net.JoinHostPort(host, strconv.Itoa(port))
	pl := in.Plan
	n := pl.Network
	a.By = n.Source
	switch {
	case !pl.Sandboxed:
		a.Allowed, a.Rule = true, "unsandboxed"
		a.Reason = fmt.Sprintf("%s runs unsandboxed (decided by %s): no network isolation", pl.Agent, pl.Reason)
		a.Fix = "pass --sandbox to run it sandboxed"
	case n.Mode == string(posture.NetOpen):
		a.Allowed, a.Rule = true, "network"
		a.Reason = fmt.Sprintf("the network is open (from %s): every host is reachable", n.Source)
	case isHostReacher(pl.Prepared):
		return hostReach(in, a, pl.Prepared.(backend.HostReacher), host, port)
	case n.Mode == string(posture.NetBlocked):
		a.Rule = "network"
		a.Reason = fmt.Sprintf("the network is blocked (from %s)", n.Source)
		a.Fix = fmt.Sprintf("pass --allow-host %s for one run (or --network open for an unrestricted one), or replace the block with network.allow_domain [%q] in %s%s", in.Host, host, policyPath(in), copyNote(in))
	default:
		ok, reason, err := broker.Allowed(n.AllowDomains, host, port)
		if err != nil {
			return a, err
		}
		a.Allowed, a.Rule, a.Reason = ok, "network", fmt.Sprintf("%s (allow list from %s: %s)", reason, n.Source, strings.Join(n.AllowDomains, ", "))
		if !ok {
			a.Fix = fmt.Sprintf("pass --allow-host %s for one run (it replaces the list), or add %q to network.allow_domain in %s%s", in.Host, host, policyPath(in), copyNote(in))
		}
	}
	return a, nil
}

func isHostReacher(p any) bool {
	_, ok := p.(backend.HostReacher)
	return ok
}

// hostReach answers a network question of a blocked or allow-listed run
// from the backend's own decision (the built-in engine: its namespace,
// forwarded ports and broker), and names the fix.
func hostReach(in Input, a Answer, hr backend.HostReacher, host string, port int) (Answer, error) {
	n := in.Plan.Network
	r, err := hr.ReachHost(host, port)
	if err != nil {
		return a, err
	}
	a.Allowed, a.Rule, a.Reason = r.Allowed, "network", r.Reason
	if r.By != "" {
		a.By = r.By
	}
	const blocked = "the network is blocked"
	switch {
	case r.Path == "proxy":
		a.Reason += fmt.Sprintf(" (allow list from %s: %s)", n.Source, listOrNone(n.AllowDomains))
		if r.Allowed {
			a.Reason += "; the egress broker resolves the name and checks every address when the agent connects (loopback and private ones only for a name the list gives exactly)"
		}
	case strings.HasPrefix(r.Reason, blocked):
		a.Reason = fmt.Sprintf("%s (from %s)%s", blocked, n.Source, strings.TrimPrefix(r.Reason, blocked))
	case !r.Allowed:
		a.Reason += fmt.Sprintf(" (network %s, from %s)", n.Mode, n.Source)
	}
	switch {
	case r.Allowed:
	case r.Fix != "":
		a.Fix = r.Fix
	case n.Source == "--offline":
		a.Fix = "drop --offline (it wins over --allow-host and blocks forwarded ports too); then " + hostFix(in, host, port, r.Loopback)
	default:
		a.Fix = hostFix(in, host, port, r.Loopback)
	}
	return a, nil
}

// hostFix says what to add where so that the agent reaches host:port.
func hostFix(in Input, host string, port int, loopback bool) string {
	if loopback {
		entry := net.JoinHostPort(host, strconv.Itoa(port))
		if _, ok := broker.LoopbackPort(entry); !ok {
			entry = "localhost:" + strconv.Itoa(port)
		}
		return fmt.Sprintf("forward the port: pass --allow-host %s for one run (it replaces the allow list), or add %d to network.open_port in %s%s", entry, port, policyPath(in), copyNote(in))
	}
	target := in.Host
	if in.Plan.Network.Mode == string(posture.NetBlocked) {
		return fmt.Sprintf("pass --allow-host %s for one run (or --network open for an unrestricted one), or replace the block with network.allow_domain [%q] in %s%s", target, host, policyPath(in), copyNote(in))
	}
	return fmt.Sprintf("pass --allow-host %s for one run (it replaces the list), or add %q to network.allow_domain in %s%s", target, host, policyPath(in), copyNote(in))
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "(none)"
	}
	return strings.Join(l, ", ")
}

// policyPath is the sandbox/nono.json a fix edits: the policy file of the
// run, or for a built-in folder (which exists only in the binary) that
// file in the copy `agent-sandbox agents copy` writes.
func policyPath(in Input) string {
	if f := in.Folder; f != nil && f.Builtin() {
		return filepath.Join(in.Home.ConfigRoot(), "agents", f.ID, "sandbox", "nono.json")
	}
	if pf := in.Plan.Posture.Policy; pf != nil {
		return pf.Path
	}
	if in.Folder != nil {
		return filepath.Join(in.Folder.Dir, "sandbox", "nono.json")
	}
	return "sandbox/nono.json"
}

// splitHost splits HOST[:PORT] ([V6]:PORT), the port defaulting to 443.
func splitHost(s string) (string, int, error) {
	if s == "" || strings.ContainsAny(s, "/ \t") {
		return "", 0, fmt.Errorf("--host %q: want HOST or HOST:PORT, without scheme or path", s)
	}
	host, portStr := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("--host %q: missing ']'", s)
		}
		host, portStr = s[1:end], strings.TrimPrefix(s[end+1:], ":")
	} else if strings.Count(s, ":") == 1 {
		host, portStr, _ = strings.Cut(s, ":")
	}
	if portStr == "" {
		return host, 443, nil
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("--host %q: port %q is not a number from 1 to 65535", s, portStr)
	}
	return host, port, nil
}

// Text renders an answer for a person: the verdict, then the rule and the
// fix.
func (a Answer) Text() string {
	var b strings.Builder
	what := a.Path
	if a.Host != "" {
		what = a.Host
	}
	verdict := "DENIED"
	if a.Allowed {
		verdict = "ALLOWED"
	}
	backend := "no sandbox"
	if a.Backend != nil {
		backend = *a.Backend
	}
	if a.Engine != nil {
		backend += ": " + *a.Engine
	}
	fmt.Fprintf(&b, "%s: %s %s %s (%s)\n", verdict, a.Agent, a.Access, what, backend)
	fmt.Fprintf(&b, "  rule:   %s\n", a.Rule)
	fmt.Fprintf(&b, "  why:    %s\n", a.Reason)
	if a.Fix != "" {
		fmt.Fprintf(&b, "  fix:    %s\n", a.Fix)
	}
	if a.Refusal != nil {
		fmt.Fprintf(&b, "  note:   a run of %s would not start here: %s\n", a.Agent, *a.Refusal)
	}
	if a.Engine != nil && len(a.EngineLacks) > 0 {
		fmt.Fprintf(&b, "  engine: the %s gives %s\n", *a.Engine, strings.Join(a.EngineLacks, "; "))
	}
	return b.String()
}
