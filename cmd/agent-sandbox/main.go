// Command agent-sandbox runs an AI coding agent inside a sandbox.
//
// This package only wires the internal packages together: cli parses the
// command line, agent finds the agent folder, posture decides whether and how
// the run is sandboxed, plan builds the run, and launch executes it. See
// docs/ARCHITECTURE.md.
package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"

	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	"github.com/agent-sandbox/agent-sandbox/internal/backends"
	"github.com/agent-sandbox/agent-sandbox/internal/cli"
	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// version is set at link time (-X main.version=...) by the Nix package.
var version = ""

func main() {
	os.Exit(Main(os.Args[1:], launch.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}

// env is the process environment and the host facts the wiring reads.
type env struct {
	stdio    launch.Stdio
	getenv   func(string) string
	lookPath func(string) (string, error)
	home     grant.Home
	// started, when not nil, makes the run a session with no agent
	// process (agent-sandbox start's supervisor).
	started *spec.Started
}

// Main runs agent-sandbox with args (without the program name) and returns
// the exit status.
func Main(args []string, stdio launch.Stdio) int {
	if code, ok := backends.Hidden(args, stdio.Err); ok {
		return code
	}
	if len(args) > 0 && args[0] == superviseArg {
		home, err := grant.HomeFromEnv(os.Getenv, runtime.GOOS)
		if err != nil {
			return fail(stdio.Err, err)
		}
		return superviseSession(env{stdio: stdio, getenv: os.Getenv, lookPath: exec.LookPath, home: home}, args[1:])
	}
	inv, err := cli.Parse(args)
	if err != nil {
		return fail(stdio.Err, err)
	}
	switch inv.Command {
	case cli.CmdHelp:
		fmt.Fprint(stdio.Out, cli.Usage)
		return 0
	case cli.CmdVersion:
		bi, _ := debug.ReadBuildInfo()
		fmt.Fprintln(stdio.Out, versionLine(version, bi))
		return 0
	case cli.CmdDoctor:
		return runDoctor(stdio, inv.Doctor)
	case cli.CmdResolve:
		return runResolve(stdio, inv.Resolve)
	}
	home, err := grant.HomeFromEnv(os.Getenv, runtime.GOOS)
	if err != nil {
		return fail(stdio.Err, err)
	}
	e := env{stdio: stdio, getenv: os.Getenv, lookPath: exec.LookPath, home: home}
	switch inv.Command {
	case cli.CmdAgents:
		if inv.Agents.Action != "" {
			return agentFiles(e, inv.Agents)
		}
		return listAgents(e)
	case cli.CmdPrune:
		return pruneSandboxes(e, inv.Prune)
	case cli.CmdLog:
		return showLog(e, inv.Log)
	case cli.CmdPs:
		return listSessions(e, inv.Ps)
	case cli.CmdExec:
		return execInSession(e, inv.Exec)
	case cli.CmdAllow:
		return allowInSession(e, inv.Allow)
	case cli.CmdStart:
		return startSession(e, inv.Start, args)
	case cli.CmdStop:
		return stopSession(e, inv.Stop)
	case cli.CmdWhy:
		return whyAccess(e, inv.Why)
	case cli.CmdRuns, cli.CmdDiff, cli.CmdUndo:
		return checkpointCommand(e, inv.Command, inv.Checkpoint)
	default:
		return runAgent(e, inv.Run)
	}
}

func fail(w io.Writer, err error) int {
	diag.Errorf(w, "%v", err)
	return launch.ExitRefused
}

// versionLine is what `agent-sandbox version` prints: the version (set at
// link time, else the module version of the build info, else "devel"),
// the platform and Go version, and the VCS revision the build info
// records ("+modified" for a dirty tree).
func versionLine(linked string, bi *debug.BuildInfo) string {
	v, goVersion := linked, runtime.Version()
	var rev, modified string
	if bi != nil {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = "+modified"
				}
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	line := fmt.Sprintf("agent-sandbox %s (%s/%s, %s", v, runtime.GOOS, runtime.GOARCH, goVersion)
	if rev != "" {
		line += ", revision " + rev + modified
	}
	return line + ")"
}

// lookup is the agent-name lookup for this user and working directory.
func (e env) lookup(workdir string) agent.Lookup {
	return agent.Lookup{
		Path:      e.getenv("AGENT_SANDBOX_PATH"),
		UserDir:   filepath.Join(e.home.ConfigRoot(), "agents"),
		SystemDir: "/etc/agent-sandbox/agents",
		Workdir:   workdir,
	}
}
