package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/posture"
)

func TestParse(t *testing.T) {
	tests := []struct {
		args []string
		want Invocation
	}{
		{[]string{"claude"}, Invocation{Command: CmdRun, Run: Run{Agent: "claude", Args: []string{}}}},
		// Flag parsing stops at the agent; its arguments are untouched.
		{[]string{"-v", "--offline", "claude", "--help", "--offline", "-v", "--", "x"},
			Invocation{Command: CmdRun, Run: Run{Verbose: true, Posture: posture.Flags{Offline: true}, Agent: "claude", Args: []string{"--help", "--offline", "-v", "--", "x"}}}},
		{[]string{"--allow-host", "a.com", "--allow-host=b.com:443", "--sandbox-backend", "sbx", "--workdir", "/w", "--dry-run", "--json", "pi"},
			Invocation{Command: CmdRun, Run: Run{DryRun: true, JSON: true, Workdir: "/w", Agent: "pi", Args: []string{},
				Posture: posture.Flags{AllowHosts: []string{"a.com", "b.com:443"}, Backend: posture.Sbx}}}},
		{[]string{"--sandbox", "--no-sandbox", "./agents/x"}, Invocation{Command: CmdRun, Run: Run{Agent: "./agents/x", Args: []string{}, Posture: posture.Flags{Sandbox: true, NoSandbox: true}}}},
		{[]string{"--", "claude", "-x"}, Invocation{Command: CmdRun, Run: Run{Agent: "claude", Args: []string{"-x"}}}},
		{[]string{"version"}, Invocation{Command: CmdVersion}},
		{[]string{"agents"}, Invocation{Command: CmdAgents}},
		{[]string{"help"}, Invocation{Command: CmdHelp}},
		{[]string{"--help"}, Invocation{Command: CmdHelp}},
		{[]string{"-h", "claude"}, Invocation{Command: CmdHelp}},
		{[]string{"--allow-edit", ".vscode", "--allow-edit=.git/hooks", "claude"},
			Invocation{Command: CmdRun, Run: Run{Agent: "claude", Args: []string{}, AllowEdit: []string{".vscode", ".git/hooks"}}}},
		// A subcommand name after a flag is an agent name.
		{[]string{"-v", "version"}, Invocation{Command: CmdRun, Run: Run{Verbose: true, Agent: "version", Args: []string{}}}},
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
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "no agent given"},
		{[]string{"--offline"}, "no agent given"},
		{[]string{"--bogus", "claude"}, "unknown flag: --bogus"},
		{[]string{"--sandbox-backend", "docker", "claude"}, `--sandbox-backend "docker"`},
		{[]string{"--sandbox-backend"}, "flag needs an argument"},
		{[]string{"--allow-host", "https://x/", "claude"}, "--allow-host: want a host name"},
		{[]string{"--allow-host", "", "claude"}, `--allow-host "": an empty host name is not a host and never means "no restriction"`},
		{[]string{"--allow-host=", "claude"}, `--allow-host "": an empty host name`},
		{[]string{"--allow-host", "a.com", "--allow-host", " ", "claude"}, `--allow-host " ": an empty host name`},
		{[]string{"--json", "claude"}, "--json goes with --dry-run"},
		{[]string{"--workdir", " ", "claude"}, "--workdir: empty"},
		{[]string{"--allow-edit", "src", "claude"}, `--allow-edit[0]: "src" is not a protected path`},
		{[]string{"version", "x"}, "version takes no arguments"},
		{[]string{"agents", "x"}, `agents: unknown action "x"`},
	}
	for _, tt := range tests {
		_, err := Parse(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: err = %v, want one line containing %q", tt.args, err, tt.want)
		}
	}
}
