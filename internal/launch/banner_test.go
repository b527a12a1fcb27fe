package launch

import "testing"

func TestBannerLine(t *testing.T) {
	for _, c := range []struct {
		terminal bool
		term     string
		want     string
	}{
		{true, "xterm-256color", "\U0001F512 Sandbox Active (sbx)"},
		{true, "", "\U0001F512 Sandbox Active (sbx)"},
		{true, "dumb", "Sandbox Active (sbx)"},
		{false, "xterm", ""},
		{false, "dumb", ""},
	} {
		if got := BannerLine("sbx", c.terminal, c.term); got != c.want {
			t.Errorf("BannerLine(sbx, %v, %q) = %q, want %q", c.terminal, c.term, got, c.want)
		}
	}
}
