package plan

import (
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/backend/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/backend/nono"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// The plan's "protection": read-only only under the built-in engine's
// view; the weaker sandbox and nono list the same entries as not read-only,
// with why, and every run watches and audits them. The plan reads this from
// the backend's description, not from its concrete type.
func TestProtection(t *testing.T) {
	l := protect.Ledger{Entries: []protect.Entry{
		{Path: "/w/.git/hooks", Name: protect.GitHooks, Dir: true, Guard: protect.ReadOnly},
		{Path: "/w/.envrc", Name: ".envrc", Guard: protect.ReadOnly},
	}, AllowEdit: []string{".vscode"}}
	s := spec.Spec{Ledger: l}
	describe := func(p backend.Prepared) backend.Description { return p.Describe() }
	view := protection(s, describe(&landlock.Prepared{Engine: landlock.EngineView, Spec: s}))
	if !view.Enforced || len(view.Paths) != 2 || view.Unenforced != nil || len(view.AllowEdit) != 1 || !view.Audited {
		t.Errorf("view: %+v", view)
	}
	weak := protection(s, describe(&landlock.Prepared{Engine: landlock.EngineWeaker, Spec: s}))
	if weak.Enforced || len(weak.Paths) != 2 || weak.Unenforced == nil || !weak.Audited {
		t.Errorf("weaker: %+v", weak)
	}
	n := protection(s, describe(&nono.Prepared{Spec: s, Unprotected: "nono: NOT read-only"}))
	if n.Enforced || n.Unenforced == nil || *n.Unenforced != "nono: NOT read-only" || !n.Audited {
		t.Errorf("nono: %+v", n)
	}
	if none := protection(spec.Spec{}, describe(&nono.Prepared{})); none.Paths == nil || none.AllowEdit == nil || none.Unenforced != nil {
		t.Errorf("nothing protected: %+v", none)
	}
}
