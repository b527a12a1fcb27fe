package sbx

import (
	"reflect"
	"testing"
)

// agent-sandbox exec under sbx is `sbx exec` into the session's microVM,
// with the agent's environment and working directory and the caller's
// command in place of the agent's.
func TestSessionExecArgv(t *testing.T) {
	p := Prepared{Path: "/usr/bin/sbx", Name: "as-claude-1234"}
	p.Exec.Env = []string{"A=1"}
	p.Exec.Workdir = "/work/proj"
	p.Exec.Command = []string{"claude", "--x"}
	got := p.SessionExecArgv([]string{"ls", "-la"}, false)
	want := []string{"/usr/bin/sbx", "exec", "-i", "-e", "A=1", "-w", "/work/proj", "as-claude-1234", "ls", "-la"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if p.Exec.Command[0] != "claude" {
		t.Errorf("the agent's command changed: %q", p.Exec.Command)
	}
	if got := p.SessionExecArgv([]string{"sh"}, true); got[3] != "-t" {
		t.Errorf("with a terminal: %q, want -t", got)
	}
}
