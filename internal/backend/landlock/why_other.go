//go:build !linux

package landlock

import (
	ll "github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/view"
)

// inView has no mounts off Linux: there is no view.
func inView(p *Prepared) ([]view.Mount, ll.Policy) { return nil, p.Policy }
