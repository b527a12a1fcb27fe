package plan

import (
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

func TestStarts(t *testing.T) {
	str := func(s string) *string { return &s }
	cases := []struct {
		name string
		p    Plan
		ok   bool
		why  string
	}{
		{"found, no refusal", Plan{Backend: str("landlock"), Spec: spec.Spec{Argv: []string{"/bin/sh"}, CommandFound: true}}, true, ""},
		{"refusal wins", Plan{Backend: str("landlock"), Refusal: str("no view"), Spec: spec.Spec{Argv: []string{"x"}}}, false, "no view"},
		{"missing command", Plan{Backend: str("nono"), Spec: spec.Spec{Argv: []string{"claude"}}}, false, `command "claude" not found on PATH`},
		{"missing command, unsandboxed", Plan{Spec: spec.Spec{Argv: []string{"claude"}}}, false, `command "claude" not found on PATH`},
		{"sbx installs in the guest", Plan{Backend: str("sbx"), Spec: spec.Spec{Argv: []string{"claude"}}}, true, ""},
	}
	for _, c := range cases {
		ok, why := c.p.Starts()
		if ok != c.ok || why != c.why {
			t.Errorf("%s: Starts() = %v, %q; want %v, %q", c.name, ok, why, c.ok, c.why)
		}
	}
}
