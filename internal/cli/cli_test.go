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
		// --worktree takes its NAME only with '=': a word after it is the agent.
		{[]string{"--worktree", "pi"}, Invocation{Command: CmdRun, Run: Run{Worktree: true, Agent: "pi", Args: []string{}}}},
		{[]string{"--worktree=fix/x", "--worktree-dir", "/s", "pi"}, Invocation{Command: CmdRun, Run: Run{Worktree: true, WorktreeName: "fix/x", WorktreeDir: "/s", Agent: "pi", Args: []string{}}}},
		{[]string{"--worktree=a", "run", "--", "make"}, Invocation{Command: CmdRun, Run: Run{Worktree: true, WorktreeName: "a", Program: "make", Args: []string{}}}},
		// After "--" a subcommand name is an agent name.
		{[]string{"-v", "--", "version"}, Invocation{Command: CmdRun, Run: Run{Verbose: true, Agent: "version", Args: []string{}}}},
		// Run flags before "run" apply as if after it.
		{[]string{"-q", "--offline", "run", "--dry-run", "--", "make", "test"},
			Invocation{Command: CmdRun, Run: Run{Quiet: true, DryRun: true, Posture: posture.Flags{Offline: true}, Program: "make", Args: []string{"test"}}}},
		{[]string{"--workdir", "/w", "run", "make"},
			Invocation{Command: CmdRun, Run: Run{Workdir: "/w", Program: "make", Args: []string{}}}},
		// ... and before "why", the run flags why takes.
		{[]string{"--offline", "--allow-host=a.com", "--workdir", "/w", "why", "--host", "a.com", "pi"},
			Invocation{Command: CmdWhy, Why: Why{Host: "a.com", Agent: "pi", Workdir: "/w", Posture: posture.Flags{Offline: true, AllowHosts: []string{"a.com"}}}}},
		{[]string{"--sandbox-backend", "landlock", "--network", "open", "why", "/x"},
			Invocation{Command: CmdWhy, Why: Why{Path: "/x", Posture: posture.Flags{Backend: posture.Landlock, NetworkOpen: true}}}},
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
		// Run flags before a subcommand that does not take them say where
		// they go.
		{[]string{"-v", "version"}, `-v/--verbose before "version": version takes no run flags (agent-sandbox version); run flags belong to a run (agent-sandbox [run flags] AGENT, or agent-sandbox [run flags] run -- CMD)`},
		{[]string{"--offline", "log"}, `--offline before "log": log takes no run flags (agent-sandbox log [--json] [-n N] [AGENT])`},
		{[]string{"--json", "--dry-run", "doctor"}, `--dry-run, --json before "doctor": doctor takes no run flags`},
		{[]string{"--json", "--dry-run", "doctor"}, `doctor has its own --json, which goes after "doctor"`},
		{[]string{"-q", "why", "/x"}, `-q/--quiet before "why": why takes only these run flags: --workdir, --offline, --allow-host, --network, --sandbox-backend`},
		{[]string{"--offline", "--write", "/x", "why", "/y"}, `--write before "why"`},
		{[]string{"--offline", "--write", "/x", "why", "/y"}, `why has its own --write, which goes after "why" (why --write PATH asks whether PATH is writable; the run flag --write PATH grants it)`},
		{[]string{"-q", "agents", "copy", "x"}, `-q/--quiet before "agents": agents takes no run flags`},
		// The flags before "run" are checked as after it.
		{[]string{"--network", "open", "run", "--offline", "--", "x"}, "--network open contradicts --offline"},
		{[]string{"--json", "run", "--", "x"}, "--json goes with --dry-run"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: err = %v, want one line containing %q", tt.args, err, tt.want)
		}
	}
}
