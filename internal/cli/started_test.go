package cli

import (
	"strings"
	"testing"
	"time"
)

// TestParseStart: start takes the run flags (before or after it), its own
// --idle-timeout and --json, and at most an AGENT; no AGENT is the shell
// agent's policy, as run --.
func TestParseStart(t *testing.T) {
	inv, err := Parse([]string{"start"})
	if err != nil || inv.Command != CmdStart || inv.Start.Run.Program != StartProgram || inv.Start.Run.Agent != "" || inv.Start.IdleTimeout != DefaultIdleTimeout || inv.Start.JSON {
		t.Fatalf("start: %+v %v", inv.Start, err)
	}
	inv, err = Parse([]string{"--offline", "start", "--idle-timeout", "2s", "--json", "--write", "/tmp/x", "claude"})
	if err != nil || inv.Command != CmdStart {
		t.Fatalf("start with flags: %v", err)
	}
	st := inv.Start
	if !st.Run.Posture.Offline || st.IdleTimeout != 2*time.Second || !st.JSON || st.Run.JSON || st.Run.Agent != "claude" || st.Run.Program != "" || len(st.Run.Write) != 1 {
		t.Errorf("start with flags: %+v", st)
	}
	inv, err = Parse([]string{"stop", "abcd1234"})
	if err != nil || inv.Command != CmdStop || inv.Stop.Session != "abcd1234" {
		t.Errorf("stop: %+v %v", inv, err)
	}
	// After --, start is an agent's name.
	inv, err = Parse([]string{"--", "start"})
	if err != nil || inv.Command != CmdRun || inv.Run.Agent != "start" {
		t.Errorf("-- start: %+v %v", inv, err)
	}
	if !Shadowed("start") || !Shadowed("stop") {
		t.Error("start and stop do not shadow agents of their names")
	}
}

// TestParseStartErrors: what start and stop refuse, and what they say.
func TestParseStartErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"start", "claude", "--resume"}, "takes no agent arguments"},
		{[]string{"start", "--dry-run"}, "--dry-run shows a run's plan"},
		{[]string{"start", "--idle-timeout", "-1s"}, "want a positive duration"},
		{[]string{"start", "--idle-timeout", "0"}, "want a positive duration"},
		{[]string{"start", "--network", "open", "--offline"}, "contradicts"},
		{[]string{"start", "--nope"}, "unknown flag: --nope"},
		{[]string{"start", ""}, "empty agent name"},
		{[]string{"stop"}, "stop takes one SESSION"},
		{[]string{"stop", "a", "b"}, "got 2 arguments"},
		{[]string{"stop", " "}, "empty session"},
		{[]string{"-q", "stop", "a"}, `-q/--quiet before "stop"`},
	} {
		_, err := Parse(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error containing %q", c.args, err, c.want)
		}
	}
}
