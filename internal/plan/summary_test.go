package plan

import (
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/backend/landlock"
)

// TestEngineKind: the first look's engine line names each engine of the
// built-in backend as itself. Before, nono inside the view was called
// "the weaker sandbox".
func TestEngineKind(t *testing.T) {
	for engine, want := range map[string]string{
		landlock.EngineView:       "namespace view",
		landlock.EngineNonoInView: "nono inside the built-in engine's namespace view",
		landlock.EngineWeaker:     "the weaker sandbox",
		"":                        "",
	} {
		got := engineKind(map[string]any{"engine": engine})
		if !strings.Contains(got, want) || want == "" && got != "" {
			t.Errorf("engine %q: %q, want %q", engine, got, want)
		}
		if engine != landlock.EngineWeaker && strings.Contains(got, "weaker") {
			t.Errorf("engine %q is called weaker: %q", engine, got)
		}
	}
}
