// Package cli parses agent-sandbox's command line (GNU style, spf13/pflag).
//
// Parse is pure: it turns arguments into an Invocation and never touches the
// environment. Flag parsing stops at the agent: everything after AGENT is the
// agent's own, passed through untouched.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
	"github.com/agent-sandbox/agent-sandbox/internal/sandboxfile"
)

// Usage is the help text.
const Usage = `Usage:
  agent-sandbox [run flags] AGENT [AGENT ARGS...]   run AGENT sandboxed
  agent-sandbox [run flags] run [run flags] -- CMD [ARGS...]
                                                    run any command sandboxed (the shell
                                                    agent's policy: workdir read-write, offline)
  agent-sandbox agents [show NAME | copy NAME [DIR]]
                                                    list the agents found, their posture and whether
                                                    they start here; print a folder's files; copy
                                                    one to ~/.config/agent-sandbox/agents to edit
  agent-sandbox why [--write|--exec] PATH [AGENT]   would AGENT get this access, by which rule, or
  agent-sandbox why --host HOST[:PORT] [AGENT]      why not and what to add where (--json)
  agent-sandbox prune [--yes]                       list stale sbx sandboxes; remove them with --yes
  agent-sandbox doctor [--json] [--folders-only] [AGENT...]
                                                    check the host, agent folders and the launcher
  agent-sandbox resolve [--json] COMMAND            list the files COMMAND needs to start
  agent-sandbox log [--json] [-n N] [AGENT]         recent egress decisions of the broker (all agents, or AGENT)
  agent-sandbox runs [--workdir DIR]                the workdir's runs, their checkpoints and what they changed
  agent-sandbox diff [--workdir DIR] [RUN]          what a run (default: the latest) changed in the workdir
  agent-sandbox undo [--yes] [--workdir DIR] [RUN]  put the workdir back as it was before RUN (shows the
                                                    plan; changes it only with --yes or a yes at a terminal)
  agent-sandbox ps [--json]                         list the live sessions (running sandboxes)
  agent-sandbox exec [-t|-T] SESSION|AGENT -- CMD [ARGS...]
                                                    run CMD inside a running session's sandbox (at a
                                                    terminal, on a terminal of its own; -T: none)
  agent-sandbox allow HOST[:PORT] [--session ID] [--save]
                                                    allow a host in a running session (and, with
                                                    --save, in the agent folder's nono.json)
  agent-sandbox start [run flags] [--idle-timeout DURATION] [--json] [AGENT]
                                                    start a session with no agent process (for
                                                    harnesses: exec into it); print its id. It ends
                                                    after DURATION (default 30m) with no exec'd
                                                    process, or on stop. Namespace view only
  agent-sandbox stop SESSION|AGENT                  end a session (its processes get SIGTERM, then
                                                    SIGKILL after 5s), wait for its end and print
                                                    its after-run findings
  agent-sandbox version                             print the version

AGENT is an agent name (looked up in $AGENT_SANDBOX_PATH,
$XDG_CONFIG_HOME/agent-sandbox/agents, /etc/agent-sandbox/agents, then the
built-in agents) or a path to an agent folder (anything containing "/").

Run flags go before AGENT, before or after "run", and before or after
"why" for the ones why takes (--workdir, --offline, --allow-host, --network,
--sandbox-backend); before any other subcommand they are an error. A
subcommand name after run flags is the subcommand; after "--" it is an
agent name (agent-sandbox --offline -- run).

Run flags:
      --sandbox                  force the sandbox on (the folder's backend, default nono)
      --no-sandbox               run the agent unsandboxed (wins over every other flag)
      --sandbox-backend NAME     force a backend: nono, sbx or landlock
      --offline                  block all network traffic (forces the sandbox on)
      --allow-host HOST          allow only these hosts (repeatable; forces the sandbox on)
      --workdir DIR              the project directory to grant (default: the current directory)
      --read PATH                also grant PATH read-only, this run (repeatable)
      --write PATH               also grant PATH read-write, this run (repeatable)
      --network open             unrestricted network for this run (over the folder's list)
      --allow-edit NAME          let the agent edit a protected path (.git/hooks, .vscode, ...;
                                 repeatable; the built-in engine keeps them read-only)
      --allow-userns             let the agent create user namespaces (containers,
                                 bubblewrap inside); the built-in engine refuses them
      --checkpoint[=MODE]        checkpoint the workdir before the run (on, off, required;
                                 default on for an agent, off for run --); required
                                 refuses to start the agent when it fails
      --worktree[=NAME]          run on a branch of its own (NAME, default
                                 agent-sandbox/AGENT-ID) in a tree of its own, shown
                                 at the workdir's path; see docs/worktree.md
      --worktree-dir DIR         keep the worktrees in DIR (default
                                 $XDG_STATE_HOME/agent-sandbox-worktrees)
      --dry-run                  print what would run; start nothing
      --json                     with --dry-run: print the plan as one JSON object
  -v, --verbose                  show the posture and the backend's own banner
  -q, --quiet                    no banner, no hint after a failure, no warnings that
                                 repeat on every run (errors and loud warnings stay)
  -h, --help                     show this help

Doctor flags (after "doctor"; AGENT as above, default every agent found):
      --json                     print the results as a JSON array
      --folders-only             only the agent folder checks: no host probes, no
                                 launcher check, no need for $HOME (for Nix builds)

Exit status: the agent's own; 125 when agent-sandbox refused or failed before
starting the agent; 126/127 when the agent could not be executed. doctor exits
1 when a check fails; resolve exits 1 when something COMMAND needs is missing
and 125 when COMMAND itself is not found.
`

// Subcommand names. Any other first word is an agent.
const (
	CmdRun     = "run"
	CmdAgents  = "agents"
	CmdPrune   = "prune"
	CmdDoctor  = "doctor"
	CmdResolve = "resolve"
	CmdLog     = "log"
	CmdVersion = "version"
	CmdHelp    = "help"
	CmdWhy     = "why"
)

// Run holds the run flags and the agent command line.
type Run struct {
	Posture posture.Flags
	Verbose bool
	// Quiet drops the banner, the hint after a failed run and the
	// warnings that repeat on every run (plan.Plan.Repeating).
	Quiet   bool
	DryRun  bool
	JSON    bool
	Workdir string
	Agent   string
	Args    []string
	// Program is the command of `agent-sandbox run -- CMD` (Args are its
	// arguments); "" when an agent (Agent) runs.
	Program string
	// Read and Write are the per-run grants (--read, --write; read-only
	// and read-write), as typed: checked like folder grants by plan.
	Read, Write []string
	// AllowEdit are --allow-edit names: protected paths (internal/protect)
	// the agent may edit in this run.
	AllowEdit []string
	// AllowUserns is --allow-userns: the agent may create user
	// namespaces of its own this run.
	AllowUserns bool
	// Checkpoint is --checkpoint: "on", "off" or "required"; "" when not
	// given (the folder's checkpoint key, else on for an agent and off
	// for run --).
	Checkpoint string
	// Worktree is --worktree: the run works on a branch and tree of its
	// own (internal/worktree); WorktreeName is its NAME ("" for the
	// default), WorktreeDir --worktree-dir ("" for the default store).
	Worktree     bool
	WorktreeName string
	WorktreeDir  string
}

// Prune holds the flags of `agent-sandbox prune`.
type Prune struct {
	// Yes removes the stale sandboxes; without it they are only listed.
	Yes bool
}

// Doctor holds the arguments of `agent-sandbox doctor`.
type Doctor struct {
	// JSON prints the results as one JSON array.
	JSON bool
	// FoldersOnly runs only the agent folder checks (for Nix builds).
	FoldersOnly bool
	// Agents are names or folder paths; empty means every agent found.
	Agents []string
}

// Resolve holds the arguments of `agent-sandbox resolve`.
type Resolve struct {
	// JSON prints the result as one JSON object.
	JSON bool
	// Command is the program to resolve: a name looked up on PATH, or a path.
	Command string
}

// Log holds the arguments of `agent-sandbox log`.
type Log struct {
	// JSON prints one audit entry (JSON object) per line.
	JSON bool
	// N is how many of the most recent entries to print (0: all).
	N int
	// Agent is an agent id; empty means every agent.
	Agent string
}

// Invocation is a parsed command line.
type Invocation struct {
	Command string
	Run     Run
	Prune   Prune
	Doctor  Doctor
	Resolve Resolve
	Log     Log
	Why     Why
	Agents  Agents
	// Checkpoint is runs', diff's and undo's.
	Checkpoint Checkpoint
	Exec       Exec
	Ps         Ps
	Allow      Allow
	Start      Start
	Stop       Stop
}

// Parse parses the arguments after the program name.
func Parse(args []string) (Invocation, error) {
	if len(args) > 0 {
		switch args[0] {
		case CmdAgents:
			return parseAgents(args[1:])
		case CmdVersion:
			if len(args) > 1 {
				return Invocation{}, fmt.Errorf("%s takes no arguments (got %q)", args[0], args[1])
			}
			return Invocation{Command: args[0]}, nil
		case CmdHelp:
			return Invocation{Command: CmdHelp}, nil
		case CmdPrune:
			return parsePrune(args[1:])
		case CmdDoctor:
			return parseDoctor(args[1:])
		case CmdResolve:
			return parseResolve(args[1:])
		case CmdLog:
			return parseLog(args[1:])
		case CmdRun:
			return parseRun(args[1:], true)
		case CmdWhy:
			return parseWhy(args[1:])
		case CmdRuns, CmdDiff, CmdUndo:
			return parseCheckpoint(args[0], args[1:])
		}
		if inv, ok, err := parseSession(args); ok {
			return inv, err
		}
	}
	return parseRun(args, false)
}

// runFlagValues holds the run flags that are checked before they are
// stored in Run.
type runFlagValues struct {
	backend, network string
	help             bool
}

// runFlagSet defines the run flags, storing them in r and v.
func runFlagSet(r *Run, v *runFlagValues) *pflag.FlagSet {
	fs := pflag.NewFlagSet("agent-sandbox", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(false)
	fs.BoolVar(&r.Posture.Sandbox, "sandbox", false, "")
	fs.BoolVar(&r.Posture.NoSandbox, "no-sandbox", false, "")
	fs.StringVar(&v.backend, "sandbox-backend", "", "")
	fs.BoolVar(&r.Posture.Offline, "offline", false, "")
	fs.StringArrayVar(&r.Posture.AllowHosts, "allow-host", nil, "")
	fs.StringVar(&r.Workdir, "workdir", "", "")
	fs.StringArrayVar(&r.Read, "read", nil, "")
	fs.StringArrayVar(&r.Write, "write", nil, "")
	fs.StringVar(&v.network, "network", "", "")
	fs.BoolVar(&r.DryRun, "dry-run", false, "")
	fs.BoolVar(&r.JSON, "json", false, "")
	fs.BoolVarP(&r.Verbose, "verbose", "v", false, "")
	fs.BoolVarP(&r.Quiet, "quiet", "q", false, "")
	fs.BoolVarP(&v.help, "help", "h", false, "")
	fs.StringArrayVar(&r.AllowEdit, "allow-edit", nil, "")
	fs.BoolVar(&r.AllowUserns, "allow-userns", false, "")
	fs.Var((*checkpointValue)(&r.Checkpoint), "checkpoint", "")
	fs.Lookup("checkpoint").NoOptDefVal = "on"
	fs.Var(&worktreeValue{r}, "worktree", "")
	fs.Lookup("worktree").NoOptDefVal = worktreeDefault
	fs.StringVar(&r.WorktreeDir, "worktree-dir", "", "")
	return fs
}

// parseRun parses the run flags and then AGENT [ARGS...], or, for
// `agent-sandbox run [flags] -- CMD [ARGS...]` (program), CMD [ARGS...].
func parseRun(args []string, program bool) (Invocation, error) {
	var r Run
	var v runFlagValues
	fs := runFlagSet(&r, &v)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return Invocation{Command: CmdHelp}, nil
		}
		if why := tookTheAgent(args, err); why != "" {
			return Invocation{}, errors.New(why)
		}
		return Invocation{}, fmt.Errorf("%v%s (see agent-sandbox --help)", err, flagSuggestion(fs, err))
	}
	if rest := fs.Args(); !program && !v.help && len(rest) > 0 && fs.ArgsLenAtDash() != 0 && isSubcommand(rest[0]) {
		return leadingFlags(fs, args[:len(args)-len(rest)], rest)
	}
	if err := protect.CheckNames("--allow-edit", r.AllowEdit); err != nil {
		return Invocation{}, err
	}
	if v.help {
		return Invocation{Command: CmdHelp}, nil
	}
	if err := checkRunNetwork(fs, &r, v); err != nil {
		return Invocation{}, err
	}
	if err := checkRunPaths(fs, &r); err != nil {
		return Invocation{}, err
	}
	if err := runTarget(&r, fs.Args(), program); err != nil {
		return Invocation{}, err
	}
	return Invocation{Command: CmdRun, Run: r}, nil
}

// checkRunNetwork checks --sandbox-backend, --allow-host and --network and
// stores the backend and --network open in r.Posture.
func checkRunNetwork(fs *pflag.FlagSet, r *Run, v runFlagValues) error {
	switch v.backend {
	case "", "nono", "sbx", "landlock":
		r.Posture.Backend = posture.Backend(v.backend)
	default:
		return fmt.Errorf("--sandbox-backend %q: want nono, sbx or landlock", v.backend)
	}
	for _, h := range r.Posture.AllowHosts {
		if strings.TrimSpace(h) == "" {
			return fmt.Errorf("--allow-host %q: an empty host name is not a host and never means \"no restriction\": name a host such as api.example.com, or pass --offline to block every host", h)
		}
		if err := sandboxfile.CheckHost(h); err != nil {
			return fmt.Errorf("--allow-host: %v", err)
		}
	}
	switch {
	case !fs.Changed("network"):
	case v.network == "open":
		r.Posture.NetworkOpen = true
	default:
		return fmt.Errorf("--network %q: the only value is open (an unrestricted network); --offline blocks the network, --allow-host HOST allows only HOST", v.network)
	}
	if r.Posture.NetworkOpen && (r.Posture.Offline || len(r.Posture.AllowHosts) > 0) {
		return errors.New("--network open contradicts --offline and --allow-host: give one of them")
	}
	return nil
}

// checkRunPaths refuses an empty --read, --write or --workdir, and --json
// without --dry-run.
func checkRunPaths(fs *pflag.FlagSet, r *Run) error {
	for _, l := range []struct {
		flag  string
		paths []string
	}{{"--read", r.Read}, {"--write", r.Write}} {
		for _, p := range l.paths {
			if strings.TrimSpace(p) == "" {
				return fmt.Errorf("%s: empty path", l.flag)
			}
		}
	}
	if fs.Changed("workdir") && strings.TrimSpace(r.Workdir) == "" {
		return errors.New("--workdir: empty directory name")
	}
	if fs.Changed("worktree-dir") && (!r.Worktree || strings.TrimSpace(r.WorktreeDir) == "") {
		return fmt.Errorf("--worktree-dir %q: names the store of --worktree runs; give it with --worktree and a directory", r.WorktreeDir)
	}
	if r.JSON && !r.DryRun {
		return errors.New("--json goes with --dry-run (the plan as JSON); a real run prints the agent's own output")
	}
	return nil
}

// runTarget stores what follows the flags: the agent (or, for program,
// the command) and its arguments, never nil.
func runTarget(r *Run, rest []string, program bool) error {
	switch {
	case len(rest) == 0 && program:
		return errors.New("run: no command given: agent-sandbox run [run flags] -- CMD [ARGS...]")
	case len(rest) == 0:
		return errors.New("no agent given: agent-sandbox [run flags] AGENT [AGENT ARGS...]; `agent-sandbox agents` lists the agents")
	case program && strings.TrimSpace(rest[0]) == "":
		return errors.New("run: empty command name")
	case program:
		r.Program, r.Args = rest[0], rest[1:]
	default:
		r.Agent, r.Args = rest[0], rest[1:]
	}
	if r.Args == nil {
		r.Args = []string{}
	}
	return nil
}

// subcommand parses the flags of subcommand name (declared by define) and
// returns its positional arguments; help is true for -h/--help. usage ends
// every error message.
func subcommand(name, usage string, args []string, define func(*pflag.FlagSet)) (rest []string, help bool, err error) {
	fs := pflag.NewFlagSet("agent-sandbox "+name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVarP(&help, "help", "h", false, "")
	define(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("%s: %v (usage: %s)", name, err, usage)
	}
	return fs.Args(), help, nil
}

// parsePrune parses the arguments after `prune`.
func parsePrune(args []string) (Invocation, error) {
	const usage = "agent-sandbox prune [--yes]"
	var p Prune
	rest, help, err := subcommand(CmdPrune, usage, args, func(fs *pflag.FlagSet) {
		fs.BoolVar(&p.Yes, "yes", false, "")
	})
	switch {
	case err != nil:
		return Invocation{}, err
	case help:
		return Invocation{Command: CmdHelp}, nil
	case len(rest) > 0:
		return Invocation{}, fmt.Errorf("prune takes no arguments (got %q); usage: %s", rest[0], usage)
	}
	return Invocation{Command: CmdPrune, Prune: p}, nil
}

// parseDoctor parses the arguments after `doctor`.
func parseDoctor(args []string) (Invocation, error) {
	var d Doctor
	rest, help, err := subcommand(CmdDoctor, "agent-sandbox doctor [--json] [--folders-only] [AGENT...]", args, func(fs *pflag.FlagSet) {
		fs.BoolVar(&d.JSON, "json", false, "")
		fs.BoolVar(&d.FoldersOnly, "folders-only", false, "")
	})
	switch {
	case err != nil:
		return Invocation{}, err
	case help:
		return Invocation{Command: CmdHelp}, nil
	}
	d.Agents = rest
	for _, a := range d.Agents {
		if strings.TrimSpace(a) == "" {
			return Invocation{}, errors.New("doctor: empty AGENT argument; name an agent or a folder path")
		}
	}
	return Invocation{Command: CmdDoctor, Doctor: d}, nil
}

// parseResolve parses the arguments after `resolve`.
func parseResolve(args []string) (Invocation, error) {
	const usage = "agent-sandbox resolve [--json] COMMAND"
	var r Resolve
	rest, help, err := subcommand(CmdResolve, usage, args, func(fs *pflag.FlagSet) {
		fs.BoolVar(&r.JSON, "json", false, "")
	})
	switch {
	case err != nil:
		return Invocation{}, err
	case help:
		return Invocation{Command: CmdHelp}, nil
	case len(rest) != 1:
		return Invocation{}, fmt.Errorf("resolve takes one COMMAND (got %d arguments); usage: %s", len(rest), usage)
	case rest[0] == "":
		return Invocation{}, errors.New("resolve: empty COMMAND; name a program")
	}
	r.Command = rest[0]
	return Invocation{Command: CmdResolve, Resolve: r}, nil
}

// parseLog parses the arguments after `log`.
func parseLog(args []string) (Invocation, error) {
	const usage = "agent-sandbox log [--json] [-n N] [AGENT]"
	l := Log{N: 50}
	rest, help, err := subcommand(CmdLog, usage, args, func(fs *pflag.FlagSet) {
		fs.BoolVar(&l.JSON, "json", false, "")
		fs.IntVarP(&l.N, "lines", "n", 50, "")
	})
	switch {
	case err != nil:
		return Invocation{}, err
	case help:
		return Invocation{Command: CmdHelp}, nil
	case len(rest) > 1:
		return Invocation{}, fmt.Errorf("log takes at most one AGENT (got %d arguments); usage: %s", len(rest), usage)
	case l.N < 0:
		return Invocation{}, fmt.Errorf("log: -n %d: want 0 (every entry) or more; usage: %s", l.N, usage)
	}
	if len(rest) == 1 {
		if strings.TrimSpace(rest[0]) == "" {
			return Invocation{}, errors.New("log: empty AGENT argument; name an agent, or give none for every agent")
		}
		l.Agent = rest[0]
	}
	return Invocation{Command: CmdLog, Log: l}, nil
}

// worktreeDefault is --worktree's value when given without =NAME: a
// string no command line can hold (argv has no NUL bytes).
const worktreeDefault = "\x00"

// worktreeValue is --worktree[=NAME]; the NAME is checked when the run is
// planned (internal/worktree.CheckName), where the error can name it.
type worktreeValue struct{ r *Run }

func (v *worktreeValue) String() string { return v.r.WorktreeName }

// Type is the flag's type name, for pflag.
func (v *worktreeValue) Type() string { return "name" }

// Set records --worktree and its NAME.
func (v *worktreeValue) Set(s string) error {
	v.r.Worktree = true
	v.r.WorktreeName = ""
	if s != worktreeDefault {
		if s == "" {
			return errors.New("empty NAME: give --worktree alone for a branch named after the agent, or --worktree=NAME")
		}
		v.r.WorktreeName = s
	}
	return nil
}
