package piext

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

func TestWithExtension(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"pi", "-p", "hi"}, []string{"pi", "--extension", "/s/ext.ts", "-p", "hi"}},
		{[]string{"/usr/bin/pi"}, []string{"/usr/bin/pi", "--extension", "/s/ext.ts"}},
		{[]string{"pi", "install", "npm:x"}, []string{"pi", "install", "npm:x"}},
		{nil, nil},
	} {
		if got := WithExtension(c.in, "/s/ext.ts"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("WithExtension(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestIsPi(t *testing.T) {
	for _, c := range []struct {
		s    spec.Spec
		want bool
	}{
		{spec.Spec{AgentID: "pi", Argv: []string{"/nix/store/x-pi/bin/pi-coding-agent"}}, true},
		{spec.Spec{AgentID: "mine", Argv: []string{"/usr/local/bin/pi"}}, true},
		{spec.Spec{AgentID: "claude", Argv: []string{"/usr/bin/claude"}}, false},
		{spec.Spec{AgentID: "pirate", Argv: []string{"/usr/bin/pirate"}}, false},
	} {
		if got := IsPi(c.s); got != c.want {
			t.Errorf("IsPi(%s, %q) = %v, want %v", c.s.AgentID, c.s.Argv, got, c.want)
		}
	}
}

// TestRoutesSource: the routes are embedded as JSON data (a quote or a
// backslash in a configured URL cannot become code).
func TestRoutesSource(t *testing.T) {
	src := RoutesSource([]Route{{Upstream: "https://api.anthropic.com", BaseEnv: "ANTHROPIC_BASE_URL"}, {Upstream: `https://x"; process.exit(1); "`, BaseEnv: "B"}})
	if !strings.Contains(src, `const ROUTES = [["https://api.anthropic.com","ANTHROPIC_BASE_URL"],["https://x\"; process.exit(1); \"","B"]];`) {
		t.Errorf("the routes are not embedded as JSON:\n%s", src)
	}
}
