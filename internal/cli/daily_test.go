package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/posture"
)

// TestParseDaily covers the per-run grants and network flag (issue 12
// item 9).
func TestParseDaily(t *testing.T) {
	tests := []struct {
		args []string
		want Invocation
	}{
		{[]string{"--read", "/a", "--read=~/b", "--write", "/c", "claude", "--read", "x"},
			Invocation{Command: CmdRun, Run: Run{Agent: "claude", Args: []string{"--read", "x"}, Read: []string{"/a", "~/b"}, Write: []string{"/c"}}}},
		{[]string{"--network", "open", "pi"},
			Invocation{Command: CmdRun, Run: Run{Agent: "pi", Args: []string{}, Posture: posture.Flags{NetworkOpen: true}}}},
		{[]string{"--network=open", "--no-sandbox", "pi"},
			Invocation{Command: CmdRun, Run: Run{Agent: "pi", Args: []string{}, Posture: posture.Flags{NetworkOpen: true, NoSandbox: true}}}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.args)
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tt.args, got, tt.want)
		}
	}
	errs := []struct {
		args []string
		want string
	}{
		{[]string{"--network", "closed", "pi"}, `--network "closed": the only value is open`},
		{[]string{"--network", "open", "--offline", "pi"}, "--network open contradicts --offline and --allow-host"},
		{[]string{"--allow-host", "a.com", "--network", "open", "pi"}, "--network open contradicts"},
		{[]string{"--read", "", "pi"}, "--read: empty path"},
		{[]string{"--write", " ", "pi"}, "--write: empty path"},
		{[]string{"--write"}, "flag needs an argument"},
	}
	for _, tt := range errs {
		_, err := Parse(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: err = %v, want one line containing %q", tt.args, err, tt.want)
		}
	}
}

func TestParseWhy(t *testing.T) {
	tests := []struct {
		args []string
		want Why
	}{
		{[]string{"why", "~/.ssh/id_rsa"}, Why{Path: "~/.ssh/id_rsa"}},
		{[]string{"why", "--write", "/x", "claude"}, Why{Write: true, Path: "/x", Agent: "claude"}},
		{[]string{"why", "--exec", "--json", "--workdir", "/w", "/x", "./agents/a"}, Why{Exec: true, JSON: true, Workdir: "/w", Path: "/x", Agent: "./agents/a"}},
		{[]string{"why", "--host", "api.example.com:443", "claude"}, Why{Host: "api.example.com:443", Agent: "claude"}},
		{[]string{"why", "--host", "example.com"}, Why{Host: "example.com"}},
		{[]string{"why", "--offline", "--sandbox-backend", "landlock", "--host", "a.com", "pi"}, Why{Host: "a.com", Agent: "pi", Posture: posture.Flags{Offline: true, Backend: posture.Landlock}}},
		{[]string{"why", "--network", "open", "--allow-host", "b.com", "/x"}, Why{Path: "/x", Posture: posture.Flags{NetworkOpen: true, AllowHosts: []string{"b.com"}}}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.args)
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if got.Command != CmdWhy || !reflect.DeepEqual(got.Why, tt.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tt.args, got, tt.want)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"why"}, "why takes PATH and an optional AGENT (got 0 arguments)"},
		{[]string{"why", "a", "b", "c"}, "got 3 arguments"},
		{[]string{"why", "--write", "--exec", "/x"}, "give one"},
		{[]string{"why", "--host", "a.com", "--write"}, "--host asks about the network"},
		{[]string{"why", "--host", "a.com", "x", "y"}, "at most one AGENT"},
		{[]string{"why", "--bogus", "/x"}, "why: unknown flag: --bogus"},
	} {
		_, err := Parse(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: err = %v, want one line containing %q", tt.args, err, tt.want)
		}
	}
}

func TestParseMessages(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--allow-host", "shell", "-c", "x"}, `--allow-host took "shell" as its value, so "-c" was read as a flag of agent-sandbox`},
		{[]string{"--workdir", "claude", "--resume"}, `--workdir took "claude" as its value, so "--resume" was read`},
		{[]string{"--ofline", "shell"}, "unknown flag: --ofline (did you mean --offline?)"},
		{[]string{"--dryrun", "shell"}, "(did you mean --dry-run?)"},
		{[]string{"agents", "cpy", "x"}, `agents: unknown action "cpy" (did you mean "copy"?)`},
	} {
		_, err := Parse(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: err = %v, want one line containing %q", tt.args, err, tt.want)
		}
	}
}
