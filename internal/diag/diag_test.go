package diag

import (
	"strings"
	"testing"
)

func TestLines(t *testing.T) {
	var b strings.Builder
	Errorf(&b, "cannot %s", "start")
	Warnf(&b, "50%% done\n")
	Notef(&b, "%d paths", 3)
	want := "agent-sandbox: error: cannot start\nagent-sandbox: warning: 50% done\nagent-sandbox: 3 paths\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestQuoteName(t *testing.T) {
	for in, want := range map[string]string{
		"/w/.git/hooks/pre-commit": "/w/.git/hooks/pre-commit",
		"/w/a b":                   `"/w/a b"`,
		"/w/x,y":                   `"/w/x,y"`,
		"/w/x\ny":                  `"/w/x\ny"`,
		"/w/\xff":                  `"/w/\xff"`,
	} {
		if got := QuoteName(in); got != want {
			t.Errorf("QuoteName(%q) = %s, want %s", in, got, want)
		}
	}
}
