package plan

import (
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/engine"
)

// TestFactsEngine: the first look's engine line names each engine by its
// one description (internal/engine). Before, nono inside the view was
// called "the weaker sandbox".
func TestFactsEngine(t *testing.T) {
	for id, want := range map[engine.ID]string{
		engine.View:       "landlock: namespace view",
		engine.NonoInView: "nono: nono inside the namespace view",
		engine.Weaker:     "landlock: weaker sandbox",
		engine.Nono:       "nono: nono alone",
	} {
		backend := map[engine.ID]string{engine.NonoInView: "nono", engine.Nono: "nono"}[id]
		if backend == "" {
			backend = "landlock"
		}
		p := &Plan{Sandboxed: true, Backend: &backend}
		p.Description.Engine = string(id)
		got := p.Facts().Engine
		if got != want {
			t.Errorf("engine %q: %q, want %q", id, got, want)
		}
		if id != engine.Weaker && strings.Contains(got, "weaker") {
			t.Errorf("engine %q is called weaker: %q", id, got)
		}
	}
	if got := (&Plan{}).Facts().Engine; got != "none (unsandboxed)" {
		t.Errorf("unsandboxed: %q", got)
	}
}
