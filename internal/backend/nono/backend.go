package nono

import (
	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// Backend is the nono backend.Backend.
type Backend struct{ Options }

// Prepare is Prepare(s, b.Options) as a backend.Prepared.
func (b Backend) Prepare(s spec.Spec) (backend.Prepared, error) {
	p, err := Prepare(s, b.Options)
	return backend.Of(&p, err)
}

// Describe is the nono launch, the profile and where it is written: the
// plan's "profile" and "profile_path".
func (p *Prepared) Describe() backend.Description {
	comments := []string{"profile: " + p.ProfilePath}
	if p.Unprotected != "" {
		comments = append(comments, p.Unprotected)
	}
	return backend.Description{
		Commands: p.Steps,
		Warnings: p.Warnings,
		Refusal:  p.Refusal,
		// The ledger is watched and audited, never read-only here.
		Protection: backend.Protection{Why: p.Unprotected},
		Comments:   comments,
		JSON:       map[string]any{"profile": &p.Profile, "profile_path": &p.ProfilePath},
	}
}

// Execute is Execute(*p, p.Spec, stdio).
func (p *Prepared) Execute(stdio launch.Stdio) int { return Execute(*p, p.Spec, stdio) }
