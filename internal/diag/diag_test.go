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
