package backends

import (
	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/backend/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/backend/nono"
	kernel "github.com/agent-sandbox/agent-sandbox/internal/landlock"
)

// What doctor asks of the backends, so that it imports none of them.

// WeakerSandboxEnv is the variable that accepts the weaker sandbox where
// no namespace view can be built.
const WeakerSandboxEnv = landlock.WeakerSandboxEnv

// NonoProfileName is the file name of the profile a nono run writes in
// the agent's state dir.
const NonoProfileName = nono.ProfileName

// GeneratedProfile is the profile a prepared run writes before it starts
// (nono's JSON profile, alone or inside the view), false for a run that
// writes none.
func GeneratedProfile(p backend.Prepared) ([]byte, bool) {
	var prof *nono.Profile
	switch v := p.(type) {
	case *nono.Prepared:
		prof = &v.Profile
	case *landlock.Prepared:
		if v.Inner != nil {
			prof, _ = v.Inner.JSON["profile"].(*nono.Profile)
		}
	}
	if prof == nil {
		return nil, false
	}
	b, err := nono.Marshal(*prof)
	return b, err == nil
}

// NonoSchemaMissing returns the profile keys agent-sandbox writes that the
// schema `nono profile schema` printed does not declare.
func NonoSchemaMissing(schema []byte) ([]string, error) { return nono.SchemaMissing(schema) }

// KernelRefuses says why this kernel cannot enforce a prepared run's own
// rules (the built-in engine's Landlock policy), nil when it can or the
// run has none.
func KernelRefuses(p backend.Prepared) error {
	lp, ok := p.(*landlock.Prepared)
	if !ok {
		return nil
	}
	_, err := kernel.Plan(lp.Policy)
	if abi, _ := kernel.ABI(); err != nil && lp.Engine == landlock.EngineView && abi < 1 {
		// In the view, a kernel without Landlock is the view alone (the
		// landlock check says what that lacks), not a refusal.
		return nil
	}
	return err
}
