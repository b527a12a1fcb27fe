package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agent-sandbox/agent-sandbox/internal/sandboxfile"
)

// The subcommands that reach running sessions (internal/session).
const (
	CmdExec  = "exec"
	CmdPs    = "ps"
	CmdAllow = "allow"
)

// SessionWords are the subcommand words of sessions, present and
// planned: an agent folder of one of these names is reached by its path
// (`agents` says so).
var SessionWords = []string{CmdExec, CmdPs, CmdAllow, "start", "stop", "runs", "diff", "undo"}

// Exec holds the arguments of `agent-sandbox exec SESSION|AGENT -- CMD...`.
type Exec struct {
	// Session is a session id or the agent of one live session.
	Session string
	// Argv is the command to start in the session.
	Argv []string
	// TTY (-t/--tty) gives the command a terminal of its own even when
	// the caller's stdin or stdout is not one; NoTTY (-T/--no-tty) never
	// does. Without either it gets one when both are terminals.
	TTY, NoTTY bool
}

// Ps holds the flags of `agent-sandbox ps`.
type Ps struct {
	JSON bool
}

// Allow holds the arguments of `agent-sandbox allow HOST[:PORT]`.
type Allow struct {
	Host string
	// Session is --session ID ("" : the one live session).
	Session string
	// Save also writes the entry to the agent folder's nono.json.
	Save bool
}

func init() {
	Subcommands = append(Subcommands, CmdExec, CmdPs, CmdAllow)
	subUsage[CmdExec] = "agent-sandbox exec [-t|-T] SESSION|AGENT -- CMD [ARGS...]"
	subUsage[CmdPs] = "agent-sandbox ps [--json]"
	subUsage[CmdAllow] = "agent-sandbox allow HOST[:PORT] [--session ID] [--save]"
	ownFlags[CmdPs] = []string{"json"}
}

// parseSession parses the session subcommands (exec, ps, allow, start,
// stop); ok is false for any other first word.
func parseSession(args []string) (inv Invocation, ok bool, err error) {
	if len(args) == 0 {
		return Invocation{}, false, nil
	}
	switch args[0] {
	case CmdExec:
		inv, err = parseExec(args[1:])
	case CmdPs:
		inv, err = parsePs(args[1:])
	case CmdAllow:
		inv, err = parseAllow(args[1:])
	case CmdStart:
		inv, err = parseStart(args[1:])
	case CmdStop:
		inv, err = parseStop(args[1:])
	default:
		return Invocation{}, false, nil
	}
	return inv, true, err
}

func parseExec(args []string) (Invocation, error) {
	usage := subUsage[CmdExec]
	var x Exec
	rest, help, err := subcommand(CmdExec, usage, args, func(fs *pflag.FlagSet) {
		fs.SetInterspersed(false)
		fs.BoolVarP(&x.TTY, "tty", "t", false, "")
		fs.BoolVarP(&x.NoTTY, "no-tty", "T", false, "")
	})
	if len(rest) > 1 && rest[1] == "--" {
		rest = append(rest[:1], rest[2:]...)
	}
	switch {
	case err != nil:
		return Invocation{}, err
	case help:
		return Invocation{Command: CmdHelp}, nil
	case len(rest) < 2:
		return Invocation{}, fmt.Errorf("exec needs a session and a command; usage: %s", usage)
	case strings.TrimSpace(rest[0]) == "" || strings.TrimSpace(rest[1]) == "":
		return Invocation{}, fmt.Errorf("exec: empty session or command; usage: %s", usage)
	case x.TTY && x.NoTTY:
		return Invocation{}, fmt.Errorf("exec: -t/--tty and -T/--no-tty contradict each other: give one; usage: %s", usage)
	}
	x.Session, x.Argv = rest[0], rest[1:]
	return Invocation{Command: CmdExec, Exec: x}, nil
}

func parsePs(args []string) (Invocation, error) {
	var p Ps
	rest, help, err := subcommand(CmdPs, subUsage[CmdPs], args, func(fs *pflag.FlagSet) {
		fs.BoolVar(&p.JSON, "json", false, "")
	})
	switch {
	case err != nil:
		return Invocation{}, err
	case help:
		return Invocation{Command: CmdHelp}, nil
	case len(rest) > 0:
		return Invocation{}, fmt.Errorf("ps takes no arguments (got %q); usage: %s", rest[0], subUsage[CmdPs])
	}
	return Invocation{Command: CmdPs, Ps: p}, nil
}

func parseAllow(args []string) (Invocation, error) {
	var a Allow
	usage := subUsage[CmdAllow]
	rest, help, err := subcommand(CmdAllow, usage, args, func(fs *pflag.FlagSet) {
		fs.StringVar(&a.Session, "session", "", "")
		fs.BoolVar(&a.Save, "save", false, "")
	})
	switch {
	case err != nil:
		return Invocation{}, err
	case help:
		return Invocation{Command: CmdHelp}, nil
	case len(rest) != 1:
		return Invocation{}, fmt.Errorf("allow takes one HOST[:PORT] (got %d arguments); usage: %s", len(rest), usage)
	case strings.TrimSpace(rest[0]) == "":
		return Invocation{}, errors.New("allow: an empty host name is not a host: name one such as api.example.com")
	}
	if err := sandboxfile.CheckHost(rest[0]); err != nil {
		return Invocation{}, fmt.Errorf("allow: %v", err)
	}
	a.Host = rest[0]
	return Invocation{Command: CmdAllow, Allow: a}, nil
}

// Shadowed reports whether an agent named name is shadowed by a
// subcommand word (present or reserved for sessions): it is reached by its
// folder's path, or after "--".
func Shadowed(name string) bool {
	return isSubcommand(name) || slices.Contains(SessionWords, name)
}
