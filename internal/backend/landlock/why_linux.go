package landlock

import (
	ll "github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/view"
)

// inView is the view of p (viewConfig, as Execute builds it, before the
// per-run TMPDIR and the terminal): its mounts and the Landlock policy
// enforced inside it.
func inView(p *Prepared) ([]view.Mount, ll.Policy) {
	c := viewConfig(p.Policy, p.Spec, nil, nil, p.Spec.Workdir, nil)
	return c.Mounts, c.Landlock
}
