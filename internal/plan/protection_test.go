package plan

import (
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/backend/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/backend/nono"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// The plan's "protection": enforced only by the built-in engine's view;
// the weaker sandbox and nono list the same paths as unenforced, with why.
func TestProtection(t *testing.T) {
	ps := []protect.Path{{Path: "/w/.git/hooks", Name: protect.GitHooks, Dir: true}, {Path: "/w/.envrc", Name: ".envrc"}}
	s := spec.Spec{Protected: ps, AllowEdit: []string{".vscode"}}
	view := protection(s, &landlock.Prepared{Engine: landlock.EngineView, Spec: spec.Spec{Protected: ps[:1]}})
	if !view.Enforced || len(view.Paths) != 1 || view.Unenforced != nil || len(view.AllowEdit) != 1 {
		t.Errorf("view: %+v", view)
	}
	weak := protection(s, &landlock.Prepared{Engine: landlock.EngineWeaker})
	if weak.Enforced || len(weak.Paths) != 2 || weak.Unenforced == nil {
		t.Errorf("weaker: %+v", weak)
	}
	n := protection(s, &nono.Prepared{Unprotected: "nono: NOT protected"})
	if n.Enforced || n.Unenforced == nil || *n.Unenforced != "nono: NOT protected" {
		t.Errorf("nono: %+v", n)
	}
	if none := protection(spec.Spec{}, &nono.Prepared{}); none.Paths == nil || none.AllowEdit == nil || none.Unenforced != nil {
		t.Errorf("nothing protected: %+v", none)
	}
}
