package plan

import (
	"fmt"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// Facts are what a plan's first look says (issue 39 item 12): the engine,
// the network, what the agent can write, its credentials and what is
// protected, as counts; `--dry-run` leads with them (Summary) and doctor
// gives one line per agent (Facts.Line).
type Facts struct {
	// Engine is the backend, with the built-in engine's kind ("landlock:
	// namespace view"), or "none (unsandboxed)".
	Engine string
	// Network is the mode, with the allow list's hosts; Mode and Hosts
	// are its parts.
	Network string
	Mode    string
	Hosts   []string
	// Writable are the read-write and write-only grants, ~ for the home,
	// but for the State parts of the agent's state directory (its
	// mise-cache and tmp), which are counted.
	Writable []string
	State    int
	// Credentials are the keys the broker injects (the agent holds a
	// phantom), or, where no broker injects them, the names of the
	// secret-looking variables the agent receives as set.
	Credentials []string
	// Injected says Credentials are injected by the broker.
	Injected bool
	// ReadOnly and Audited count the protected paths by guard; Enforced
	// says the backend keeps the read-only ones read-only.
	ReadOnly, Audited int
	Enforced          bool
	// Expected are the folder's expected_refusals.
	Expected []string
}

// Facts computes the plan's first look.
func (p *Plan) Facts() Facts {
	f := Facts{Engine: "none (unsandboxed)", Network: p.Network.Mode, Mode: p.Network.Mode, Hosts: p.Network.AllowDomains}
	if p.Backend != nil {
		f.Engine = *p.Backend
		if e, ok := p.EngineInfo(); ok {
			f.Engine += ": " + e.Name
		}
	}
	if len(p.Network.AllowDomains) > 0 {
		f.Network += " " + strings.Join(p.Network.AllowDomains, ", ")
	} else if p.Posture.Network.NoHost() {
		f.Network += " (" + posture.NoHostNote + ")"
	}
	home := p.Spec.Home
	short := func(s string) string {
		if home != "" && home != "/" && (s == home || strings.HasPrefix(s, home+"/")) {
			return "~" + strings.TrimPrefix(s, home)
		}
		return s
	}
	for _, w := range append(append([]string{}, p.Filesystem.Allow...), p.Filesystem.Write...) {
		if sd := p.Spec.StateDir; sd != "" && strings.HasPrefix(w, sd+"/") {
			f.State++
			continue
		}
		f.Writable = append(f.Writable, short(w))
	}
	broker := p.Sandboxed && p.Backend != nil && *p.Backend == string(posture.Landlock) && p.Network.Mode == string(posture.NetAllowlist)
	if broker && len(p.Spec.Credentials) > 0 {
		f.Injected = true
		for _, c := range p.Spec.Credentials {
			f.Credentials = append(f.Credentials, c.Env)
		}
	} else if p.Sandboxed {
		for _, n := range p.Environment.Pass {
			if secretName(n) {
				f.Credentials = append(f.Credentials, n)
			}
		}
	}
	if p.Protection != nil {
		f.Enforced = p.Protection.Enforced
		for _, e := range p.Protection.Paths {
			if e.Guard == protect.Audited {
				f.Audited++
			} else {
				f.ReadOnly++
			}
		}
	}
	f.Expected = p.Spec.ExpectedRefusals
	return f
}

// secretName says whether a variable's name looks like it holds a key.
func secretName(n string) bool {
	for _, s := range []string{"_API_KEY", "_TOKEN", "_SECRET", "_AUTH_TOKEN"} {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// maxListed bounds the paths a summary line names; the rest are counted.
const maxListed = 4

// list names up to maxListed items and counts the rest.
func list(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:maxListed], ", "), len(items)-maxListed)
}

// Summary is the first look of --dry-run's text form, one line each:
// engine, network, writable, credentials, protected (counts); the
// per-path lines follow it.
func (p *Plan) Summary() []string {
	f := p.Facts()
	out := []string{"engine:      " + f.Engine}
	if !p.Sandboxed {
		return append(out, "network:     unrestricted", "writable:    everything you can write (no sandbox)")
	}
	net := "network:     " + f.Network
	if len(f.Expected) > 0 {
		net += "; expected refusals (logged, not warned): " + strings.Join(f.Expected, ", ")
	}
	out = append(out, net)
	w := fmt.Sprintf("writable:    %d %s: %s", len(f.Writable), plural(len(f.Writable), "path", "paths"), list(f.Writable))
	if f.State > 0 {
		w += fmt.Sprintf(" (and %d in agent-sandbox's state: its mise-cache and tmp)", f.State)
	}
	out = append(out, w)
	if wt := p.Worktree; wt != nil {
		out = append(out, fmt.Sprintf("worktree:    branch %s; the agent works at %s (the tree %s)", wt.Branch, wt.AgentSees, wt.Tree))
	}
	switch {
	case f.Injected:
		out = append(out, fmt.Sprintf("credentials: %s injected by the broker (the agent holds a per-run phantom)", strings.Join(f.Credentials, ", ")))
	case len(f.Credentials) > 0:
		out = append(out, fmt.Sprintf("credentials: %s passed in as set on the host (no broker holds them here)", strings.Join(f.Credentials, ", ")))
	default:
		out = append(out, "credentials: none passed in")
	}
	prot := fmt.Sprintf("protected:   %d read-only, %d audited after the run", f.ReadOnly, f.Audited)
	if f.ReadOnly > 0 && !f.Enforced {
		prot = fmt.Sprintf("protected:   %d named (not kept read-only by this backend: audited after the run), %d audited by key", f.ReadOnly, f.Audited)
	}
	return append(out, prot)
}

// Line is the facts as one line, for doctor's summary of an agent.
func (f Facts) Line() string {
	net := f.Mode
	if len(f.Hosts) > 0 {
		net += fmt.Sprintf(" (%d %s)", len(f.Hosts), plural(len(f.Hosts), "host", "hosts"))
	}
	s := fmt.Sprintf("%s; network %s; %d writable", f.Engine, net, len(f.Writable))
	if len(f.Credentials) > 0 {
		how := "passed in"
		if f.Injected {
			how = "through the broker"
		}
		s += fmt.Sprintf("; %d %s %s", len(f.Credentials), plural(len(f.Credentials), "key", "keys"), how)
	}
	if f.ReadOnly+f.Audited > 0 {
		s += fmt.Sprintf("; %d protected", f.ReadOnly+f.Audited)
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
