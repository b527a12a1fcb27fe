package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// The subcommands of sessions with no agent process.
const (
	CmdStart = "start"
	CmdStop  = "stop"
)

// DefaultIdleTimeout is how long a started session lasts with no exec'd
// process when --idle-timeout is not given: long enough for a harness
// between two tool calls (an agent's turn can think for minutes), short
// enough that a forgotten session does not hold its sandbox, broker and
// memory for the rest of the day.
const DefaultIdleTimeout = 30 * time.Minute

// Start holds the arguments of `agent-sandbox start [run flags] [AGENT]`.
type Start struct {
	// Run are the run flags and the agent (Run.Agent; "" for the shell
	// agent's policy, as `run --`, with Run.Program "sh", never started).
	Run Run
	// IdleTimeout ends the session after so long with no exec'd
	// process.
	IdleTimeout time.Duration
	// JSON prints the session's ps record instead of its id.
	JSON bool
}

// Stop holds the argument of `agent-sandbox stop ID|AGENT`.
type Stop struct {
	// Session is a session id or the agent of one live session.
	Session string
}

// StartProgram is the command a started session with no AGENT plans
// with (the shell agent's policy, as `run -- sh`); it is never started.
const StartProgram = "sh"

func init() {
	Subcommands = append(Subcommands, CmdStart, CmdStop)
	subUsage[CmdStart] = "agent-sandbox start [run flags] [--idle-timeout DURATION] [--json] [AGENT]"
	subUsage[CmdStop] = "agent-sandbox stop SESSION|AGENT"
}

// parseStart parses the arguments after `start`: the run flags, its own
// --idle-timeout and --json, and at most an AGENT (no agent arguments:
// no agent process starts).
func parseStart(args []string) (Invocation, error) {
	usage := subUsage[CmdStart]
	var st Start
	var v runFlagValues
	fs := runFlagSet(&st.Run, &v)
	fs.DurationVar(&st.IdleTimeout, "idle-timeout", DefaultIdleTimeout, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return Invocation{Command: CmdHelp}, nil
		}
		return Invocation{}, fmt.Errorf("start: %v%s (usage: %s)", err, flagSuggestion(fs, err), usage)
	}
	if v.help {
		return Invocation{Command: CmdHelp}, nil
	}
	r := &st.Run
	st.JSON, r.JSON = r.JSON, false
	switch {
	case r.DryRun:
		return Invocation{}, errors.New("start: --dry-run shows a run's plan: agent-sandbox --dry-run AGENT (the plan of a started session is the same, with no agent process)")
	case st.IdleTimeout <= 0:
		return Invocation{}, fmt.Errorf("start: --idle-timeout %s: want a positive duration such as 30m or 90s (the session ends after so long with no exec'd process; agent-sandbox stop ends it sooner)", st.IdleTimeout)
	}
	if err := checkRunNetwork(fs, r, v); err != nil {
		return Invocation{}, err
	}
	if err := checkRunPaths(fs, r); err != nil {
		return Invocation{}, err
	}
	if err := protect.CheckNames("--allow-edit", r.AllowEdit); err != nil {
		return Invocation{}, err
	}
	rest := fs.Args()
	switch {
	case len(rest) == 0:
		r.Program, r.Args = StartProgram, []string{}
	case len(rest) > 1:
		return Invocation{}, fmt.Errorf("start: %q after the agent: a started session runs no agent process, so it takes no agent arguments (run flags go before AGENT; usage: %s)", rest[1], usage)
	case strings.TrimSpace(rest[0]) == "":
		return Invocation{}, fmt.Errorf("start: empty agent name; usage: %s", usage)
	default:
		r.Agent, r.Args = rest[0], []string{}
	}
	return Invocation{Command: CmdStart, Start: st}, nil
}

func parseStop(args []string) (Invocation, error) {
	usage := subUsage[CmdStop]
	rest, help, err := subcommand(CmdStop, usage, args, func(*pflag.FlagSet) {})
	switch {
	case err != nil:
		return Invocation{}, err
	case help:
		return Invocation{Command: CmdHelp}, nil
	case len(rest) != 1:
		return Invocation{}, fmt.Errorf("stop takes one SESSION (an id, or the agent of one live session; got %d arguments); usage: %s", len(rest), usage)
	case strings.TrimSpace(rest[0]) == "":
		return Invocation{}, fmt.Errorf("stop: empty session; usage: %s", usage)
	}
	return Invocation{Command: CmdStop, Stop: Stop{Session: rest[0]}}, nil
}
