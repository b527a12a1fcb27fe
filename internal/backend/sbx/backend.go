package sbx

import (
	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// Backend is the sbx backend.Backend.
type Backend struct{ Options }

// Prepare is Prepare(s, b.Options) as a backend.Prepared.
func (b Backend) Prepare(s spec.Spec) (backend.Prepared, error) {
	p, err := Prepare(s, b.Options)
	return backend.Of(&p, err)
}

// Describe is the setup sequence and the guest's environment.
func (p *Prepared) Describe() backend.Description {
	pass, set := p.GuestEnvironment(p.Spec)
	var comments []string
	if p.Unprotected != "" {
		comments = append(comments, p.Unprotected)
	}
	return backend.Description{
		Comments:    comments,
		Commands:    p.Steps,
		Warnings:    p.Warnings,
		Refusal:     p.Refusal,
		Environment: &backend.Environment{Pass: pass, Set: set},
		// The ledger is watched and audited, never read-only here.
		Protection: backend.Protection{Why: p.Unprotected},
	}
}

// Execute is Execute(*p, p.Spec, stdio).
func (p *Prepared) Execute(stdio launch.Stdio) int { return Execute(*p, p.Spec, stdio) }
