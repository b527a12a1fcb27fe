package suggest

import "testing"

func TestClosest(t *testing.T) {
	subcommands := []string{"run", "agents", "doctor", "why", "resolve", "prune", "version", "help"}
	for _, c := range []struct {
		s, want string
	}{
		{"agnets", "agents"},
		{"doctr", "doctor"},
		{"verison", "version"},
		{"claud", ""}, // not near any subcommand
		{"wyh", "why"},
		{"agents", ""}, // exact: nothing to suggest
		{"x", ""},
	} {
		if got := Closest(c.s, subcommands); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.s, got, c.want)
		}
	}
	if got := Closest("claud", []string{"claude", "codex", "pi"}); got != "claude" {
		t.Errorf("Closest(claud) = %q", got)
	}
	if got := Phrase("allow_domians", []string{"allow_domain", "block"}); got != ` (did you mean "allow_domain"?)` {
		t.Errorf("Phrase = %q", got)
	}
}
