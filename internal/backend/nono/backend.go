package nono

import (
	"fmt"

	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/engine"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// EngineAlone is nono run by itself (no namespace view around it): on
// macOS, and on a Linux host where the view cannot be built
// (internal/backends chooses). It is internal/engine's ID "nono".
const EngineAlone = string(engine.Nono)

// Backend is the nono backend.Backend.
type Backend struct{ Options }

// Prepare is Prepare(s, b.Options) as a backend.Prepared.
func (b Backend) Prepare(s spec.Spec) (backend.Prepared, error) {
	p, err := Prepare(s, b.Options)
	return backend.Of(&p, err)
}

// Describe is the nono launch, the profile and where it is written: the
// plan's "profile" and "profile_path"; on Linux also the seccomp layer
// agent-sandbox puts under nono ("seccomp", Filter).
func (p *Prepared) Describe() backend.Description {
	comments := []string{"profile: " + p.ProfilePath}
	if p.Unprotected != "" {
		comments = append(comments, p.Unprotected)
	}
	if m := p.Spec.MemoryMax; m > 0 {
		comments = append(comments, fmt.Sprintf("memory: up to %s for the agent's process tree (memory_max, passed as nono --memory: nono's own cgroup, a hard cap, past which nono kills the whole tree)", spec.FormatSize(m)))
	} else {
		comments = append(comments, "resource limits: none (nono sets none; memory_max in agent.toml is passed as nono --memory)")
	}
	js := map[string]any{"profile": &p.Profile, "profile_path": &p.ProfilePath}
	if line, sc := describeFilter(*p); line != "" {
		comments = append(comments, line)
		js["seccomp"] = sc
	}
	return backend.Description{
		Engine:   EngineAlone,
		Commands: p.Steps,
		Warnings: p.Warnings,
		Refusal:  p.Refusal,
		// The ledger is watched and audited, never read-only here.
		Protection: backend.Protection{Why: p.Unprotected},
		Comments:   comments,
		JSON:       js,
	}
}

// Execute is Execute(*p, p.Spec, stdio).
func (p *Prepared) Execute(stdio launch.Stdio) int { return Execute(*p, p.Spec, stdio) }
