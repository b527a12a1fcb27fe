package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/sandboxfile"
)

// Why holds the arguments of `agent-sandbox why`.
type Why struct {
	// Write and Exec ask about writing or executing PATH (default: reading).
	Write, Exec bool
	// Host asks about connecting to HOST[:PORT] instead of a path.
	Host string
	// JSON prints the answer as one JSON object.
	JSON bool
	// Workdir is the run's working directory (default: the current one).
	Workdir string
	// Path is the path asked about ("" with Host).
	Path string
	// Agent is the agent name or folder path; "" means the shell agent,
	// whose policy `agent-sandbox run -- CMD` uses.
	Agent string
	// Posture are the run flags that change the answer: --offline,
	// --allow-host, --network open, --sandbox-backend (as for a run).
	Posture posture.Flags
}

// parseWhy parses the arguments after `why`.
func parseWhy(args []string) (Invocation, error) {
	const usage = "agent-sandbox why [--write|--exec] [--json] [run flags] PATH [AGENT], or why --host HOST[:PORT] [--json] [run flags] [AGENT] (run flags: --workdir, --offline, --allow-host, --network open, --sandbox-backend)"
	var w Why
	var network, backend string
	rest, help, err := subcommand(CmdWhy, usage, args, func(fs *pflag.FlagSet) {
		fs.BoolVar(&w.Write, "write", false, "")
		fs.BoolVar(&w.Exec, "exec", false, "")
		fs.StringVar(&w.Host, "host", "", "")
		fs.BoolVar(&w.JSON, "json", false, "")
		fs.StringVar(&w.Workdir, "workdir", "", "")
		fs.BoolVar(&w.Posture.Offline, "offline", false, "")
		fs.StringArrayVar(&w.Posture.AllowHosts, "allow-host", nil, "")
		fs.StringVar(&network, "network", "", "")
		fs.StringVar(&backend, "sandbox-backend", "", "")
	})
	switch {
	case err != nil:
		return Invocation{}, err
	case help:
		return Invocation{Command: CmdHelp}, nil
	case w.Write && w.Exec:
		return Invocation{}, errors.New("why: --write and --exec ask different questions; give one")
	case network != "" && network != "open":
		return Invocation{}, fmt.Errorf("why: --network %q: the only value is open", network)
	}
	w.Posture.NetworkOpen = network == "open"
	switch backend {
	case "", "nono", "sbx", "landlock":
		w.Posture.Backend = posture.Backend(backend)
	default:
		return Invocation{}, fmt.Errorf("why: --sandbox-backend %q: want nono, sbx or landlock", backend)
	}
	for _, h := range w.Posture.AllowHosts {
		if err := sandboxfile.CheckHost(h); err != nil {
			return Invocation{}, fmt.Errorf("why: --allow-host: %v", err)
		}
	}
	if w.Host != "" {
		if w.Write || w.Exec {
			return Invocation{}, errors.New("why: --host asks about the network; --write and --exec are for paths")
		}
		if len(rest) > 1 {
			return Invocation{}, fmt.Errorf("why --host takes at most one AGENT (got %q); usage: %s", rest, usage)
		}
		if len(rest) == 1 {
			w.Agent = rest[0]
		}
		return Invocation{Command: CmdWhy, Why: w}, nil
	}
	switch len(rest) {
	case 1:
		w.Path = rest[0]
	case 2:
		w.Path, w.Agent = rest[0], rest[1]
	default:
		return Invocation{}, fmt.Errorf("why takes PATH and an optional AGENT (got %d arguments); usage: %s", len(rest), usage)
	}
	if w.Path == "" {
		return Invocation{}, errors.New("why: empty PATH")
	}
	return Invocation{Command: CmdWhy, Why: w}, nil
}
