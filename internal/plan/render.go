package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"mvdan.cc/sh/v3/syntax"
)

// Quote renders argv as one shell command line that a person can paste.
func Quote(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			// Only strings no shell can express (a NUL byte) fail.
			q = fmt.Sprintf("$'%s'", strings.ReplaceAll(a, "\x00", "\\0"))
		}
		parts[i] = q
	}
	return strings.Join(parts, " ")
}

// assignments renders KEY=VALUE pairs as shell assignments (only the value
// is quoted, so that the shell still sees an assignment).
func assignments(env []string) string {
	parts := make([]string, len(env))
	for i, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		parts[i] = k + "=" + Quote([]string{v})
	}
	return strings.Join(parts, " ")
}

// WriteText prints the plan for --dry-run: a comment header, then every
// command in execution order, shell-quoted.
func (p *Plan) WriteText(w io.Writer) error {
	var b strings.Builder
	backend := "no sandbox"
	if p.Backend != nil {
		backend = *p.Backend
	}
	fmt.Fprintf(&b, "# agent %s (%s: %s)\n", p.Agent, p.AgentSource, p.AgentFolder)
	// The first look (Summary) leads; the per-path lines follow.
	for _, l := range p.Summary() {
		fmt.Fprintf(&b, "# %s\n", l)
	}
	b.WriteString("# --- in detail\n")
	fmt.Fprintf(&b, "# backend: %s (decided by %s)\n", backend, p.Reason)
	if p.Fallback != nil {
		fmt.Fprintf(&b, "# %s\n", *p.Fallback)
	}
	if e, ok := p.EngineInfo(); ok {
		fmt.Fprintf(&b, "# engine: %s (%s)\n", e.Name, e.How)
		for _, l := range e.Lacks() {
			fmt.Fprintf(&b, "# this engine gives %s\n", l)
		}
	}
	if p.Sandboxed {
		fmt.Fprintf(&b, "# network: %s", p.Network.Mode)
		if len(p.Network.AllowDomains) > 0 {
			fmt.Fprintf(&b, " %s", strings.Join(p.Network.AllowDomains, ","))
		}
		if p.Posture.Network.NoHost() {
			fmt.Fprintf(&b, " (%s)", posture.NoHostNote)
		}
		fmt.Fprintf(&b, " (from %s)\n", p.Network.Source)
	}
	if w := p.Worktree; w != nil {
		fmt.Fprintf(&b, "# worktree: branch %s, tree %s (project %s)\n", w.Branch, w.Tree, w.Project)
		for _, m := range w.Mounts {
			fmt.Fprintf(&b, "# worktree: %s\n", m)
		}
	}
	for _, g := range p.RunGrants.Read {
		fmt.Fprintf(&b, "# --read %s: read-only (this run)\n", g)
	}
	for _, g := range p.RunGrants.Write {
		fmt.Fprintf(&b, "# --write %s: read-write (this run)\n", g)
	}
	for _, c := range p.Description.Comments {
		fmt.Fprintf(&b, "# %s\n", c)
	}
	if p.Refusal != nil {
		fmt.Fprintf(&b, "# a real run would refuse: %s\n", *p.Refusal)
	}
	for _, c := range p.Description.Commands {
		if c.Note != "" {
			fmt.Fprintf(&b, "# %s\n", c.Note)
		}
		line := Quote(c.Argv)
		if len(c.Env) > 0 {
			line = assignments(c.Env) + " " + line
		}
		if c.InProcess {
			line = "# " + line
		}
		b.WriteString(line + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints the plan as one JSON object (the stable --dry-run --json
// interface documented in README.md).
func (p *Plan) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(p)
}

// Starts says whether a real run of this plan would start the agent on
// this host, and if not why: the backend's refusal, or an agent command
// that is not on PATH (the run would exit 127; under sbx the agent is
// installed in the guest, so a missing host command does not stop it).
func (p *Plan) Starts() (bool, string) {
	switch {
	case p.Refusal != nil:
		return false, *p.Refusal
	case !p.Spec.CommandFound && (p.Backend == nil || *p.Backend != "sbx"):
		name := ""
		if len(p.Spec.Argv) > 0 {
			name = p.Spec.Argv[0]
		}
		return false, fmt.Sprintf("command %q not found on PATH", name)
	}
	return true, ""
}

// Refused is the plan --dry-run --json prints when the run is refused
// before a plan exists (the agent folder, its nono.json, a grant, the
// posture or the backend cannot be used): every documented field is
// present, arrays are empty, what is known (the agent, its folder, the
// working directory, the posture) is filled in, and refusal says why.
// folder and pst may be nil (not found or not resolved yet); name is the
// agent as named on the command line.
func Refused(name string, folder *agent.Folder, pst *posture.Posture, workdir, reason string) *Plan {
	p := &Plan{
		Agent:       name,
		Workdir:     workdir,
		Network:     Network{AllowDomains: []string{}, OpenPorts: []int{}, ListenPorts: []int{}},
		Filesystem:  Filesystem{Read: []string{}, Write: []string{}, Allow: []string{}, Exec: []string{}, ExecClosure: []string{}, Missing: []string{}},
		Environment: Environment{Pass: []string{}, Set: map[string]string{}},
		Warnings:    []string{},
		Commands:    [][]string{},
		RunGrants:   RunGrants{Read: []string{}, Write: []string{}},
		Refusal:     &reason,
	}
	if folder != nil {
		p.Agent, p.AgentFolder, p.AgentSource = folder.ID, folder.Dir, string(folder.Source)
	}
	if pst != nil {
		p.Sandboxed, p.Reason = pst.Sandboxed, string(pst.Reason)
		n := pst.Network
		p.Network.Mode, p.Network.Source = string(n.Mode), n.Source
		p.Network.AllowDomains = append(p.Network.AllowDomains, n.AllowDomains...)
		if !pst.Sandboxed {
			p.Network.Mode, p.Network.Source = "unrestricted", "no sandbox"
		}
		if pst.Sandboxed {
			b := string(pst.Backend)
			p.Backend = &b
		}
		if pst.Fallback != "" {
			fb := pst.Fallback
			p.Fallback = &fb
		}
	}
	return p
}
